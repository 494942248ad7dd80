//! Model, prompt and planner flags (`--llm`, `--llm-base-url`, `--model`, `--config`,
//! `--no-stream`, `--prompts`, `--context-budget`, `--lang`, `--planner-attempts`), how a
//! command's option groups become `planwave_config`'s [`Flags`] (which resolves them with the
//! environment and planwave.toml).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use planwave_config::{Flags, LlmKind, ProcessEnv, Settings, load_settings};
use planwave_plan::Lang;

use super::exit::InvalidInput;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LlmArg {
    /// Any OpenAI-compatible server (OpenAI, DeepSeek, Qwen, Ollama, vLLM, llama.cpp, sim-llm).
    Openai,
    /// The built-in simulated LLM (offline, deterministic for --seed).
    Sim,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LangArg {
    Zh,
    En,
}

/// Which model answers. Unset flags fall back to the environment
/// (PLANWAVE_LLM_BASE_URL, PLANWAVE_LLM_MODEL, PLANWAVE_LLM_API_KEY, OPENAI_*) and planwave.toml;
/// with no model configured anywhere the simulator answers.
#[derive(Debug, Args)]
pub struct LlmOptions {
    /// Model backend (default: openai when a model is configured, else sim).
    #[arg(long, value_enum)]
    pub llm: Option<LlmArg>,
    /// Base URL of the OpenAI-compatible API, up to and including /v1.
    #[arg(long, value_name = "URL")]
    pub llm_base_url: Option<String>,
    /// Model for every role (per-role models come from planwave.toml [llm.models]).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Config file (default: $PLANWAVE_CONFIG, else ./planwave.toml if present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Ask for one JSON body instead of an SSE stream.
    #[arg(long)]
    pub no_stream: bool,
}

/// Prompt settings of the commands that render prompts.
#[derive(Debug, Args)]
pub struct PromptOptions {
    /// Template directory overriding the built-in prompts per file (DIR/zh/subagent.j2, ...).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Prerequisite context per subagent, in estimated tokens (longer sections are cut).
    #[arg(long, value_name = "TOKENS")]
    pub context_budget: Option<u64>,
}

/// Planner settings.
#[derive(Debug, Args)]
pub struct PlannerOptions {
    /// Language of prompts and report (default: follow the goal; CJK text means zh).
    #[arg(long, value_enum)]
    pub lang: Option<LangArg>,
    /// Planning attempts, the first plan included (default 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub planner_attempts: Option<u32>,
    /// The plan the planner asks for: research tasks for subagents (default), or tool
    /// steps, each calling an MCP tool or llm_call (also [planner] format).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub plan_format: Option<PlanFormatArg>,
}

/// The plan cache of the commands that plan and run (`research`, `batch`).
#[derive(Debug, Args)]
pub struct PlanCacheOptions {
    /// Keep plans the planner writes in DIR and reuse one for the same goal, model, planning
    /// prompt, tools and metadata, without a planner call (also [planner] plan_cache).
    /// `research` reuses only its first plan.
    #[arg(long, value_name = "DIR")]
    pub plan_cache: Option<PathBuf>,
    /// No plan cache, even if planwave.toml names one.
    #[arg(long, conflicts_with = "plan_cache")]
    pub no_plan_cache: bool,
    /// Most plans the cache keeps; the least recently used go first (default 1000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub plan_cache_max_entries: Option<u64>,
}

impl FlagGroup for PlanCacheOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.plan_cache = self.plan_cache.clone();
        flags.no_plan_cache = self.no_plan_cache;
        flags.plan_cache_max_entries = self.plan_cache_max_entries.map(|n| n as usize);
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum PlanFormatArg {
    Tasks,
    Steps,
}

/// The job's metadata: shown to the planner, referable from step parameters.
#[derive(Debug, Default, Args)]
pub struct MetaOptions {
    /// The job's metadata as KEY=VALUE (repeatable): shown to the planner as the task's
    /// context and referable in step parameters as {{meta.KEY}}.
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta)]
    pub meta: Vec<(String, String)>,
}

fn parse_meta(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))?;
    let k = k.trim();
    let valid = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        return Err(format!(
            "metadata key {k:?}: use letters, digits, '_' or '-' (it is referenced as {{{{meta.KEY}}}})"
        ));
    }
    Ok((k.to_owned(), v.to_owned()))
}

impl FlagGroup for MetaOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.meta = self.meta.clone();
    }
}

/// An option group that carries settings: it writes its flags into the one [`Flags`] that
/// `planwave_config` resolves. A command passes [`settings`] the groups it has.
pub trait FlagGroup {
    fn add_to(&self, flags: &mut Flags);
}

/// A group a command may lack (a resumed `run` has no planner options).
impl<T: FlagGroup> FlagGroup for Option<T> {
    fn add_to(&self, flags: &mut Flags) {
        if let Some(group) = self {
            group.add_to(flags);
        }
    }
}

impl FlagGroup for LlmOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.config = self.config.clone();
        flags.llm = self.llm.map(|k| match k {
            LlmArg::Openai => LlmKind::OpenAi,
            LlmArg::Sim => LlmKind::Sim,
        });
        flags.base_url = self.llm_base_url.clone();
        flags.model = self.model.clone();
        flags.stream = self.no_stream.then_some(false);
    }
}

impl FlagGroup for PromptOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.prompts_dir = self.prompts.clone();
        flags.context_budget_tokens = self.context_budget;
    }
}

impl FlagGroup for PlannerOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.lang = self.lang.map(|l| match l {
            LangArg::Zh => Lang::Zh,
            LangArg::En => Lang::En,
        });
        flags.planner_attempts = self.planner_attempts;
        flags.plan_format = self.plan_format.map(|f| match f {
            PlanFormatArg::Tasks => planwave_plan::PlanFormat::Research,
            PlanFormatArg::Steps => planwave_plan::PlanFormat::Steps,
        });
    }
}

/// `research --max-rounds`.
pub struct MaxRounds(pub Option<u32>);

impl FlagGroup for MaxRounds {
    fn add_to(&self, flags: &mut Flags) {
        flags.max_rounds = self.0;
    }
}

/// The seed of a command without execution options (`plan --seed`).
pub struct Seed(pub u64);

impl FlagGroup for Seed {
    fn add_to(&self, flags: &mut Flags) {
        flags.seed = Some(self.0);
    }
}

/// The command's settings: its flags resolved with the environment and planwave.toml.
pub fn settings(groups: &[&dyn FlagGroup]) -> Result<Settings, InvalidInput> {
    let mut flags = Flags::default();
    for g in groups {
        g.add_to(&mut flags);
    }
    load_settings(&flags, &ProcessEnv).map_err(InvalidInput::from)
}
