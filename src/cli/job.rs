//! What the commands that run jobs (`run`, `research`, `resume`, `batch`, `plan`) share on
//! the way into the runner: the model client and prompts from the settings (traced, its
//! line on stderr) and the Ctrl-C token.

use clap::Args;
use planwave_config::Settings;
use planwave_runner::{Resources, Stderr};

use planwave_engine::RunConfig;
use planwave_planner::PlannerConfig;

use super::llm::{LlmOptions, PromptOptions};
use super::mcp::McpOptions;
use super::options::{ExecOptions, SimOptions};

/// The options of every command that executes plans (`run`, `research`, `batch`; `resume`
/// reads them back from the recorded command line).
#[derive(Debug, Args)]
pub struct JobOptions {
    #[command(flatten)]
    pub exec: ExecOptions,
    #[command(flatten)]
    pub llm: LlmOptions,
    #[command(flatten)]
    pub prompts: PromptOptions,
    #[command(flatten)]
    pub sim: SimOptions,
    /// MCP servers are started once per command and shared by every run it makes.
    #[command(flatten)]
    pub mcp: McpOptions,
}

impl JobOptions {
    /// The engine settings: the flags, then planwave.toml.
    pub fn run_config(&self, settings: &Settings) -> anyhow::Result<RunConfig> {
        self.mcp
            .apply(run_config(&self.exec, settings), &settings.mcp)
    }

    /// The model client and prompts; nothing is started yet.
    pub fn resources(&self, settings: &Settings) -> anyhow::Result<Resources> {
        resources(settings, &self.sim, self.exec.seed)
    }
}

/// The model client and prompts the settings ask for; nothing is started yet.
pub fn resources(settings: &Settings, sim: &SimOptions, seed: u64) -> anyhow::Result<Resources> {
    Ok(Resources::prepare(
        settings,
        sim.sim_config(seed)?,
        seed,
        super::telemetry::traced,
        &Stderr,
    )?)
}

/// The whole-run deadline: `--deadline`, else planwave.toml `[run] deadline_secs`.
pub fn deadline(exec: &ExecOptions, settings: &Settings) -> Option<std::time::Duration> {
    exec.deadline.or(settings.run.deadline)
}

/// The engine settings from the flags plus what planwave.toml adds (budget, prices).
fn run_config(exec: &ExecOptions, settings: &Settings) -> RunConfig {
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
