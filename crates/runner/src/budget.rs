//! A job's budget (`--max-tokens-total`, `--max-cost`): the model client wrapped to count
//! every call against it, what earlier sessions of the same run spent counted in, so a
//! `resume` with the same budget stops at once and one with a larger budget goes on.

use std::path::Path;
use std::sync::Arc;

use planwave_llm::{AgentRole, Budget, BudgetLimits, LlmProvider, PriceTable};

use crate::{InvalidInput, Resources};

const ROLES: [AgentRole; 5] = [
    AgentRole::Planner,
    AgentRole::Subagent,
    AgentRole::Integrator,
    AgentRole::Evaluator,
    AgentRole::Reflector,
];

/// `resources` counting against `limits`, with what `dir`'s `run.json` says was spent
/// already; `None` for the budget when there is no limit. A `--max-cost` needs a price for
/// every model the job may call, or it could never be reached.
pub(crate) fn budgeted(
    resources: &Resources,
    limits: BudgetLimits,
    prices: &PriceTable,
    dir: &Path,
) -> Result<(Resources, Option<Arc<Budget>>), InvalidInput> {
    check_priced(limits, prices, resources.provider.as_ref())?;
    Ok(resources.budgeted(limits, prices, spent_in(dir)))
}

/// Refuses `--max-cost` when a model the job may call has no price.
pub(crate) fn check_priced(
    limits: BudgetLimits,
    prices: &PriceTable,
    provider: &dyn LlmProvider,
) -> Result<(), InvalidInput> {
    if limits.max_cost.is_none() || provider.info().simulated {
        return Ok(());
    }
    let mut unpriced: Vec<String> = ROLES
        .iter()
        .map(|r| provider.model_for(*r))
        .filter(|m| prices.price(m).is_none())
        .collect();
    unpriced.dedup();
    match unpriced.first() {
        None => Ok(()),
        Some(_) => Err(InvalidInput::one(
            "--max-cost",
            format!(
                "no price for model {} in [prices.models] (or [prices] aliases): the cost could not be counted",
                unpriced.join(", ")
            ),
        )),
    }
}

/// Tokens and cost an earlier session of the run in `dir` recorded in its `run.json`.
pub(crate) fn spent_in(dir: &Path) -> (u64, f64) {
    let Some(run) = std::fs::read(dir.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
    else {
        return (0, 0.0);
    };
    let usage: planwave_record::Usage = run
        .pointer("/stats/usage")
        .and_then(|u| serde_json::from_value(u.clone()).ok())
        .unwrap_or_default();
    let cost = run
        .pointer("/stats/cost/total")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0);
    (usage.total(), cost)
}
