//! What a job is, as a person chose it: [`JobSpec`] (what to run, and every option of it).
//!
//! The command line, an HTTP request body, a queue message and a run's `invocation.json` all
//! read and write these types: clap parses the flags into them (the `clap` feature, which
//! only the binary enables), serde reads and writes them as JSON (an unknown field is an
//! error naming it). Values are kept as given (a duration as typed, a token rate as text);
//! [`JobSpec::settings`] resolves them with the environment and planwave.toml like every
//! other flag (flags > env > file > defaults), and [`SimOptions::sim_config`] turns the
//! simulator's into its configuration.

mod batch_api;
mod exec;
mod llm;
mod mcp;
mod sim;
pub mod text;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use batch_api::BatchApiOptions;
pub use exec::{ExecOptions, ScheduleArg};
pub use llm::{
    LangArg, LlmArg, LlmOptions, MetaOptions, PlanCacheOptions, PlanFormatArg, PlannerOptions,
    PromptOptions, parse_meta,
};
pub use mcp::{McpOptions, ToolProtocolArg};
pub use sim::{SimOptions, SimReflectOptions, read_latency_file};
pub use text::checked;

use crate::{EnvSource, Flags, Settings, SettingsError, load_settings};

/// An option group that carries settings: it writes its values into the one [`Flags`] that
/// [`load_settings`] resolves. A command passes [`settings_of`] the groups it has.
pub trait FlagGroup {
    fn add_to(&self, flags: &mut Flags);
}

/// A group a command may lack.
impl<T: FlagGroup> FlagGroup for Option<T> {
    fn add_to(&self, flags: &mut Flags) {
        if let Some(group) = self {
            group.add_to(flags);
        }
    }
}

/// The seed of a command without execution options (`plan --seed`, `loadtest --seed`).
pub struct Seed(pub u64);

impl FlagGroup for Seed {
    fn add_to(&self, flags: &mut Flags) {
        flags.seed = Some(self.0);
    }
}

/// The groups' flags resolved with `env` and the config file they name.
pub fn settings_of(
    groups: &[&dyn FlagGroup],
    env: &dyn EnvSource,
) -> Result<Settings, SettingsError> {
    let mut flags = Flags::default();
    for g in groups {
        g.add_to(&mut flags);
    }
    load_settings(&flags, env)
}

/// Who answers and with which prompts: the options of every command that calls a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ModelOptions {
    #[cfg_attr(feature = "clap", command(flatten))]
    pub llm: LlmOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub prompts: PromptOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub sim: SimOptions,
}

impl FlagGroup for ModelOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.llm.add_to(flags);
        self.prompts.add_to(flags);
    }
}

/// The options of every job that executes plans (`run`, `research`, a batch's jobs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct JobOptions {
    #[cfg_attr(feature = "clap", command(flatten))]
    pub exec: ExecOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub model: ModelOptions,
    /// MCP servers are started once per command and shared by every run it makes.
    #[cfg_attr(feature = "clap", command(flatten))]
    pub mcp: McpOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub meta: MetaOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(skip_serializing_if = "BatchApiOptions::is_off")]
    pub batch: BatchApiOptions,
    /// Replace an earlier run (or batch) in --out: its files are removed first. Without it
    /// such a directory is refused (`resume` continues it), as is any other non-empty one.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

impl FlagGroup for JobOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.exec.add_to(flags);
        self.model.add_to(flags);
        self.mcp.add_to(flags);
        self.meta.add_to(flags);
        self.batch.add_to(flags);
    }
}

/// What only a goal's job has: the planner, its cache and the loop's rounds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ResearchOptions {
    /// Most rounds of plan -> run -> evaluate -> reflect (default:
    /// `[orchestrator] max_reflection_rounds`, else 5).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..)))]
    pub max_rounds: Option<u32>,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub planner: PlannerOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub plan_cache: PlanCacheOptions,
}

impl FlagGroup for ResearchOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.max_rounds = self.max_rounds;
        self.planner.add_to(flags);
        self.plan_cache.add_to(flags);
    }
}

/// What a job runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Work {
    /// `run PLAN`: a plan file (`-` is stdin); `recover`: failed tasks are recovered as
    /// `research` does, with the plan's topic as the goal.
    Plan {
        plan: PathBuf,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recover: bool,
    },
    /// `research GOAL`: the reflective loop. `stream_plan`: tasks start while the plan
    /// streams (`--no-stream-plan` turns it off).
    Goal {
        goal: String,
        #[serde(default)]
        research: ResearchOptions,
        #[serde(default = "yes")]
        stream_plan: bool,
    },
}

fn yes() -> bool {
    true
}

/// One job: what to run, where, and every option, as chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub work: Work,
    /// The run directory.
    pub out: PathBuf,
    #[serde(default)]
    pub options: JobOptions,
}

impl JobSpec {
    /// The goal of a research job.
    pub fn goal(&self) -> Option<&str> {
        match &self.work {
            Work::Goal { goal, .. } => Some(goal),
            Work::Plan { .. } => None,
        }
    }

    /// `run --recover`.
    pub fn recovers(&self) -> bool {
        matches!(self.work, Work::Plan { recover: true, .. })
    }

    /// The spec's flags resolved with `env` and the config file they name.
    pub fn settings(&self, env: &dyn EnvSource) -> Result<Settings, SettingsError> {
        match &self.work {
            Work::Goal { research, .. } => settings_of(&[&self.options, research], env),
            Work::Plan { .. } => settings_of(&[&self.options], env),
        }
    }

    /// The simulator's configuration for this job (with the resolved seed).
    pub fn sim_config(&self, seed: u64) -> Result<planwave_sim::SimConfig, SettingsError> {
        self.options.model.sim.sim_config(seed)
    }
}

#[cfg(test)]
mod tests;
