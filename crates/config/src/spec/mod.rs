//! What a job is, as a person chose it: [`JobSpec`] (what to run, and every option of it).
//!
//! The command line, an HTTP request body, a queue message and a run's `invocation.json` all
//! read and write these types: clap parses the flags into them (the `clap` feature, which
//! only the binary enables), serde reads and writes them as JSON (an unknown field is an
//! error naming it), utoipa describes the request's part of them in the server's OpenAPI
//! document (the `openapi` feature). In JSON an option is named as its flag (`-` written
//! `_`), its groups flattened. An option is one field of one group here: nothing else lists
//! it. What names the host's files and model is [`HostOptions`] (and the goal's
//! [`PlanCacheOptions`]); everything else of a job is what a request may set,
//! [`RequestOptions`].
//!
//! Values are kept as given (a duration as typed, a token rate as text);
//! [`JobSpec::settings`] resolves them with the environment and planwave.toml like every
//! other flag (flags > env > file > defaults), and [`JobOptions::sim_config`] turns the
//! simulator's into its configuration.

mod batch_api;
mod exec;
mod llm;
mod mcp;
mod request;
mod sim;
pub mod text;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use batch_api::BatchApiOptions;
pub use exec::{ExecOptions, ScheduleArg};
pub use llm::{
    LangArg, LlmArg, LlmOptions, MetaOptions, PlanCacheOptions, PlanFormatArg, PlannerOptions,
    PromptOptions, parse_max_output_text, parse_meta, parse_response_format,
};
pub use mcp::{McpOptions, ToolProtocolArg};
pub use request::RequestOptions;
pub use sim::{SimOptions, SimReflectOptions, SimTaskOptions, read_latency_file};
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

/// What the host that runs a job keeps for itself: files on its disk (the config file, the
/// prompt templates, the simulator's latency file, the MCP servers' file), the model that
/// answers and the MCP servers it starts once for every run. A request to `planwave serve`
/// may never set these (the server's own are used); a queue message neither (the worker's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct HostOptions {
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub llm: LlmOptions,
    /// Template directory overriding the built-in prompts per file (DIR/zh/subagent.j2, ...).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub prompts: Option<PathBuf>,
    /// JSON map of task id to latency in ms (`{"1": 250}`), overriding the simulator's random
    /// latency.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub sim_latency_file: Option<PathBuf>,
    /// MCP servers are started once per command and shared by every run it makes.
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub mcp: McpOptions,
}

impl FlagGroup for HostOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.llm.add_to(flags);
        flags.prompts_dir = self.prompts.clone();
        self.mcp.add_to(flags);
    }
}

/// The options of every job that executes plans that are the job's own, not its host's: what
/// a request to `planwave serve` may set. Written flat in JSON, each named as its flag with
/// `-` written `_` (its groups are flattened; an unknown name is an error naming it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct RunOptions {
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub exec: ExecOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub prompts: PromptOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub sim: SimOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub sim_tasks: SimTaskOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub reflect: SimReflectOptions,
    /// The job's metadata, `{"KEY": "VALUE"}` (`--meta KEY=VALUE`).
    #[cfg_attr(feature = "clap", command(flatten))]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub meta: MetaOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub batch: BatchApiOptions,
}

impl FlagGroup for RunOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.exec.add_to(flags);
        self.prompts.add_to(flags);
        self.meta.add_to(flags);
        self.batch.add_to(flags);
    }
}

impl RunOptions {
    /// The simulator's configuration (with the resolved seed and the host's latency file).
    pub fn sim_config(
        &self,
        host: &HostOptions,
        seed: u64,
    ) -> Result<planwave_sim::SimConfig, SettingsError> {
        self.sim.sim_config(
            &self.sim_tasks,
            &self.reflect,
            host.sim_latency_file.as_deref(),
            seed,
        )
    }
}

/// The options of every job that executes plans (`run`, `research`, a batch's jobs): the
/// host's (under `"host"` in JSON) and the job's own (flat beside it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
// No `deny_unknown_fields` here: `run`, flattened, refuses every name no group knows.
#[serde(default)]
pub struct JobOptions {
    #[cfg_attr(feature = "clap", command(flatten))]
    pub host: HostOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub run: RunOptions,
    /// Replace an earlier run (or batch) in --out: its files are removed first. Without it
    /// such a directory is refused (`resume` continues it), as is any other non-empty one.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

impl FlagGroup for JobOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.host.add_to(flags);
        self.run.add_to(flags);
    }
}

impl JobOptions {
    /// The simulator's configuration for this job (with the resolved seed).
    pub fn sim_config(&self, seed: u64) -> Result<planwave_sim::SimConfig, SettingsError> {
        self.run.sim_config(&self.host, seed)
    }
}

/// The reflective loop's length: a goal's (`research`, a batch's goal jobs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct LoopOptions {
    /// Most rounds of plan -> run -> evaluate -> reflect (default:
    /// `[orchestrator] max_reflection_rounds`, else 5).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = crate::parse_count::<u32>))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    #[serde(deserialize_with = "text::count")]
    pub max_rounds: Option<u32>,
}

impl FlagGroup for LoopOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.max_rounds = self.max_rounds;
    }
}

/// What only a goal's job has: the loop's rounds and the planner (the job's own) and the plan
/// cache (a directory of the host's). Flat in JSON, as [`RunOptions`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ResearchOptions {
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub rounds: LoopOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub planner: PlannerOptions,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub plan_cache: PlanCacheOptions,
}

impl FlagGroup for ResearchOptions {
    fn add_to(&self, flags: &mut Flags) {
        self.rounds.add_to(flags);
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
        self.options.sim_config(seed)
    }
}

#[cfg(test)]
mod tests;
