//! The engine's [`RunConfig`] (execution flags, `[prompts] context_budget_tokens`, `[prices]`,
//! `[run]`) and the whole command's deadline. Unset, every value is the engine's default.

use std::time::Duration;

use planwave_engine::{RetryPolicy, RunConfig};

use crate::SettingsError;
use crate::file::ConfigFile;
use crate::flags::Flags;
use crate::secs::file_secs;

/// What only flags set: schedule, concurrency, retries, seed.
pub(crate) fn from_flags(flags: &Flags) -> RunConfig {
    let d = RunConfig::default();
    RunConfig {
        schedule: flags.schedule.unwrap_or(d.schedule),
        concurrency: flags.concurrency.or(d.concurrency),
        retry: RetryPolicy {
            max_retries: flags.retries.unwrap_or(d.retry.max_retries),
            base_backoff: flags.retry_backoff.unwrap_or(d.retry.base_backoff),
            ..d.retry
        },
        seed: flags.seed.unwrap_or(d.seed),
        ..d
    }
}

/// Adds what the file may set too (the context budget, prices, the task timeout) to `run`,
/// and returns the deadline: each flag first, then the file.
pub(crate) fn resolve(
    run: &mut RunConfig,
    file: &ConfigFile,
    flags: &Flags,
) -> Result<Option<Duration>, SettingsError> {
    if let Some(budget) = flags
        .context_budget_tokens
        .or(file.prompts.context_budget_tokens)
    {
        run.context_budget_tokens = Some(budget);
    }
    run.prices = crate::prices::table(&file.prices)?;
    // The file's values are checked even when a flag replaces them.
    let task_timeout = file_secs("[run] task_timeout_secs", file.run.task_timeout_secs)?;
    let deadline = file_secs("[run] deadline_secs", file.run.deadline_secs)?;
    run.task_timeout = flags.task_timeout.or(task_timeout);
    Ok(flags.deadline.or(deadline))
}

/// The budget: each flag first, then the file's `[run]` value (checked even when replaced).
pub(crate) fn budget(
    file: &ConfigFile,
    flags: &Flags,
) -> Result<planwave_llm::BudgetLimits, SettingsError> {
    let mut problems = Vec::new();
    if file.run.max_tokens_total == Some(0) {
        problems.push("[run] max_tokens_total: expected a nonzero count".to_owned());
    }
    if let Some(c) = file.run.max_cost
        && let Err(e) = crate::parse_cost(&format!("{c:?}"))
    {
        problems.push(format!("[run] max_cost: {e}"));
    }
    if !problems.is_empty() {
        return Err(SettingsError::Invalid(problems.join("; ")));
    }
    Ok(planwave_llm::BudgetLimits {
        max_tokens_total: flags.max_tokens_total.or(file.run.max_tokens_total),
        max_cost: flags.max_cost.or(file.run.max_cost),
    })
}
