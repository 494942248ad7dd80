//! What the commands that run jobs (`run`, `research`, `resume`, `batch`, `plan`) share on
//! the way into the runner: the model client and prompts from the settings (traced, its
//! line on stderr) and the Ctrl-C token.

use planwave_config::Settings;
use planwave_runner::{Resources, Stderr};

use planwave_engine::RunConfig;
use planwave_planner::PlannerConfig;

use super::options::{ExecOptions, SimOptions};

/// The model client and prompts the settings ask for; nothing is started yet.
pub fn resources(settings: &Settings, sim: &SimOptions, seed: u64) -> anyhow::Result<Resources> {
    Resources::prepare(
        settings,
        sim.sim_config(seed)?,
        seed,
        super::telemetry::traced,
        &Stderr,
    )
}

/// The whole-run deadline: `--deadline`, else planwave.toml `[run] deadline_secs`.
pub fn deadline(exec: &ExecOptions, settings: &Settings) -> Option<std::time::Duration> {
    exec.deadline.or(settings.run.deadline)
}

/// The engine settings from the flags plus what planwave.toml adds (budget, prices).
pub fn run_config(exec: &ExecOptions, settings: &Settings) -> RunConfig {
    RunConfig {
        context_budget_tokens: Some(settings.prompts.context_budget_tokens),
        prices: settings.prices.clone(),
        task_timeout: exec.task_timeout.or(settings.run.task_timeout),
        ..exec.run_config()
    }
}

/// The planner's settings.
pub fn planner_config(settings: &Settings) -> PlannerConfig {
    PlannerConfig {
        attempts: settings.planner.attempts,
        min_tasks: settings.planner.min_tasks,
        max_tasks: settings.planner.max_tasks,
        lang: settings.prompts.lang,
    }
}
