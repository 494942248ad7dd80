//! Planning shared by `plan` and `research`: the planner loop with progress lines, and how
//! its failures map to exit codes.

use std::sync::Arc;

use anyhow::anyhow;
use planwave_config::Settings;
use planwave_llm::LlmProvider;
use planwave_planner::{PlanAttempt, PlanOutcome, Planner};
use planwave_prompts::Templates;
use tokio_util::sync::CancellationToken;

use super::exit::InvalidInput;

/// One progress line per attempt on stderr.
pub fn describe(a: &PlanAttempt) -> String {
    let what = if a.valid {
        format!("valid plan ({} tokens)", a.usage.total())
    } else if let Some(e) = &a.error {
        format!("model call failed: {e}")
    } else {
        format!("{} problem(s): {}", a.problems.len(), a.problems.join("; "))
    };
    format!("planning attempt {} ({}): {what}", a.attempt, a.kind)
}

/// Runs the planner; `None` when interrupted.
pub async fn plan_goal(
    goal: &str,
    provider: Arc<dyn LlmProvider>,
    templates: Arc<Templates>,
    settings: &Settings,
    quiet: bool,
    on_attempt: &mut (dyn FnMut(&PlanAttempt) + Send),
) -> anyhow::Result<Option<PlanOutcome>> {
    plan_goal_reflected(
        goal,
        None,
        Vec::new(),
        provider,
        templates,
        settings,
        quiet,
        on_attempt,
    )
    .await
}

/// [`plan_goal`] for a later round of the reflective loop, told the previous reflection.
#[allow(clippy::too_many_arguments)]
pub async fn plan_goal_reflected(
    goal: &str,
    reflection: Option<&str>,
    tools: Vec<planwave_prompts::ToolInfo>,
    provider: Arc<dyn LlmProvider>,
    templates: Arc<Templates>,
    settings: &Settings,
    quiet: bool,
    on_attempt: &mut (dyn FnMut(&PlanAttempt) + Send),
) -> anyhow::Result<Option<PlanOutcome>> {
    if goal.trim().is_empty() {
        return Err(InvalidInput {
            source_name: "goal".into(),
            problems: vec!["the goal is empty".into()],
        }
        .into());
    }
    let planner = Planner::new(provider, templates, settings.planner.clone()).with_tools(tools);
    let mut report = |a: &PlanAttempt| {
        if !quiet {
            eprintln!("{}", describe(a));
        }
        on_attempt(a);
    };
    let cancel = CancellationToken::new();
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let result = tokio::select! {
        r = planner.plan_with_reflection(goal, reflection, &mut report) => Some(r),
        _ = cancel.cancelled() => None,
    };
    ctrl_c.abort();
    match result {
        None => Ok(None),
        Some(r) => Ok(Some(r.map_err(|e| anyhow!(e))?)),
    }
}

/// A planning outcome without a plan, as an error: exit 2 listing every problem of every
/// attempt, or exit 1 for a model error that stopped planning.
pub fn no_plan_error(outcome: &PlanOutcome) -> anyhow::Error {
    if let Some(fatal) = &outcome.fatal {
        return anyhow!("planning failed: {fatal}");
    }
    // The model never answered: an outage, not bad input.
    if outcome.attempts.iter().all(|a| a.error.is_some())
        && let Some(last) = outcome.attempts.last().and_then(|a| a.error.as_deref())
    {
        return anyhow!(
            "planning failed: the model call failed on all {} attempt(s); last error: {last}",
            outcome.attempts.len()
        );
    }
    let mut problems = Vec::new();
    for a in &outcome.attempts {
        if let Some(e) = &a.error {
            problems.push(format!("attempt {}: model call failed: {e}", a.attempt));
        }
        for p in &a.problems {
            problems.push(format!("attempt {}: {p}", a.attempt));
        }
    }
    problems.push(format!(
        "no valid plan after {} attempt(s)",
        outcome.attempts.len()
    ));
    InvalidInput {
        source_name: "planner".into(),
        problems,
    }
    .into()
}
