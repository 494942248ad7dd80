//! What the commands that run jobs (`run`, `research`, `resume`, `batch`, `plan`) share on
//! the way into the runner: the option groups, and the model client and prompts from the
//! settings (traced, its line on stderr).

use clap::Args;
use planwave_config::{Flags, Settings};
use planwave_runner::{Resources, Stderr};

use super::llm::{FlagGroup, LlmOptions, MetaOptions, PromptOptions};
use super::mcp::McpOptions;
use super::options::{ExecOptions, SimOptions};

/// Who answers and with which prompts: the options of every command that calls a model.
#[derive(Debug, Args)]
pub struct ModelOptions {
    #[command(flatten)]
    pub llm: LlmOptions,
    #[command(flatten)]
    pub prompts: PromptOptions,
    #[command(flatten)]
    pub sim: SimOptions,
}

impl FlagGroup for ModelOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.llm.add_to(flags);
        self.prompts.add_to(flags);
    }
}

impl ModelOptions {
    /// The model client and prompts the settings ask for; nothing is started yet.
    pub fn resources(&self, settings: &Settings) -> anyhow::Result<Resources> {
        Ok(Resources::prepare(
            settings,
            self.sim.sim_config(settings.run.seed)?,
            super::telemetry::traced,
            &Stderr,
        )?)
    }
}

/// The options of every command that executes plans (`run`, `research`, `batch`; `resume`
/// reads them back from the recorded command line).
#[derive(Debug, Args)]
pub struct JobOptions {
    #[command(flatten)]
    pub exec: ExecOptions,
    #[command(flatten)]
    pub model: ModelOptions,
    /// MCP servers are started once per command and shared by every run it makes.
    #[command(flatten)]
    pub mcp: McpOptions,
    #[command(flatten)]
    pub meta: MetaOptions,
    /// Replace an earlier run (or batch) in --out: its files are removed first. Without it
    /// such a directory is refused (`resume` continues it), as is any other non-empty one.
    #[arg(long)]
    pub force: bool,
}

impl FlagGroup for JobOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.exec.add_to(flags);
        self.model.add_to(flags);
        self.mcp.add_to(flags);
        self.meta.add_to(flags);
    }
}

impl JobOptions {
    /// The model client and prompts; nothing is started yet.
    pub fn resources(&self, settings: &Settings) -> anyhow::Result<Resources> {
        self.model.resources(settings)
    }
}
