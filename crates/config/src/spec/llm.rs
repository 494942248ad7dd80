//! Which model answers, the prompts' context, the planner, the plan cache and the job's
//! metadata.

use std::path::PathBuf;

use planwave_plan::Lang;
use serde::{Deserialize, Serialize};

use super::FlagGroup;
use crate::{Flags, LlmKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum LlmArg {
    /// Any OpenAI-compatible server (OpenAI, DeepSeek, Qwen, Ollama, vLLM, llama.cpp, sim-llm).
    Openai,
    /// The built-in simulated LLM (offline, deterministic for --seed).
    Sim,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum LangArg {
    Zh,
    En,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum PlanFormatArg {
    Tasks,
    Steps,
}

/// Which model answers. Unset flags fall back to the environment
/// (PLANWAVE_LLM_BASE_URL, PLANWAVE_LLM_MODEL, PLANWAVE_LLM_API_KEY, OPENAI_*) and planwave.toml;
/// with no model configured anywhere the simulator answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct LlmOptions {
    /// Model backend (default: openai when a model is configured, else sim).
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub llm: Option<LlmArg>,
    /// Base URL of the OpenAI-compatible API, up to and including /v1.
    #[cfg_attr(feature = "clap", arg(long, value_name = "URL"))]
    pub llm_base_url: Option<String>,
    /// Model for every role (per-role models come from planwave.toml [llm.models]).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME"))]
    pub model: Option<String>,
    /// Config file (default: $PLANWAVE_CONFIG, else ./planwave.toml if present).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub config: Option<PathBuf>,
    /// Ask for one JSON body instead of an SSE stream.
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_stream: bool,
    /// Most output tokens of one answer, per role, as ROLE=TOKENS (repeatable or
    /// comma-separated; roles planner, subagent, integrator, evaluator, reflector, llm_call;
    /// 0: no cap). Also [llm.output_caps].
    #[cfg_attr(feature = "clap", arg(long, value_name = "ROLE=TOKENS", value_parser = parse_max_output_text))]
    pub max_output: Vec<String>,
    /// How answers that must be JSON ask for it: json_schema (a grammar on llama.cpp and
    /// vLLM), json_object or none (default: by provider; also [llm] response_format).
    #[cfg_attr(feature = "clap", arg(long, value_name = "MODE", value_parser = parse_response_format))]
    pub response_format: Option<String>,
}

/// `--max-output`: checked, kept as typed.
pub fn parse_max_output_text(s: &str) -> Result<String, String> {
    crate::parse_max_output(s)?;
    Ok(s.to_owned())
}

/// `--response-format`: one of the modes, kept as typed.
pub fn parse_response_format(s: &str) -> Result<String, String> {
    s.parse::<planwave_llm::openai::ResponseFormatMode>()?;
    Ok(s.to_owned())
}

/// How much of its prerequisites a subagent's prompt carries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PromptOptions {
    /// Prerequisite context per subagent, in estimated tokens (longer sections are cut).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TOKENS"))]
    pub context_budget: Option<u64>,
}

/// Planner settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PlannerOptions {
    /// Language of prompts and report (default: follow the goal; CJK text means zh).
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub lang: Option<LangArg>,
    /// Planning attempts, the first plan included (default 3).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = crate::parse_count::<u32>))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    #[serde(deserialize_with = "super::text::count")]
    pub planner_attempts: Option<u32>,
    /// The plan the planner asks for: research tasks for subagents (default), or tool
    /// steps, each calling an MCP tool or llm_call (also `[planner] format`).
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_name = "FORMAT"))]
    pub plan_format: Option<PlanFormatArg>,
    /// The most tasks a plan the model writes may have: a plan with more is sent back for
    /// repair, and planning fails if no attempt fits (also `[planner] task_limit`; default
    /// 1000, as `serve --max-tasks`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = crate::parse_count::<u64>))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    #[serde(deserialize_with = "super::text::count")]
    pub max_tasks: Option<u64>,
}

/// The plan cache of the commands that plan and run (`research`, `batch`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct PlanCacheOptions {
    /// Keep plans the planner writes in DIR and reuse one for the same goal, model, planning
    /// prompt, tools and metadata, without a planner call (also `[planner] plan_cache`).
    /// `research` reuses only its first plan.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub plan_cache: Option<PathBuf>,
    /// No plan cache, even if planwave.toml names one.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "plan_cache"))]
    pub no_plan_cache: bool,
    /// Most plans the cache keeps; the least recently used go first (default 1000).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = crate::parse_count::<u64>))]
    #[serde(deserialize_with = "super::text::count")]
    pub plan_cache_max_entries: Option<u64>,
}

/// The job's metadata: shown to the planner, referable from step parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(transparent)]
pub struct MetaOptions {
    /// The job's metadata as KEY=VALUE (repeatable): shown to the planner as the task's
    /// context and referable in step parameters as {{meta.KEY}}.
    #[cfg_attr(feature = "clap", arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta))]
    #[serde(with = "super::text::meta")]
    pub meta: Vec<(String, String)>,
}

/// `KEY=VALUE` with a key that can be referenced as `{{meta.KEY}}`.
pub fn parse_meta(s: &str) -> Result<(String, String), String> {
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
        // Checked when parsed (a request body's too: see `JobSpec::settings`).
        flags.max_output = self
            .max_output
            .iter()
            .filter_map(|s| crate::parse_max_output(s).ok())
            .flatten()
            .collect();
        flags.response_format = self.response_format.as_deref().and_then(|s| s.parse().ok());
    }
}

impl FlagGroup for PromptOptions {
    fn add_to(&self, flags: &mut Flags) {
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
        flags.task_limit = self
            .max_tasks
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        flags.plan_format = self.plan_format.map(|f| match f {
            PlanFormatArg::Tasks => planwave_plan::PlanFormat::Research,
            PlanFormatArg::Steps => planwave_plan::PlanFormat::Steps,
        });
    }
}

impl FlagGroup for PlanCacheOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.plan_cache = self.plan_cache.clone();
        flags.no_plan_cache = self.no_plan_cache;
        flags.plan_cache_max_entries = self.plan_cache_max_entries.map(|n| n as usize);
    }
}

impl FlagGroup for MetaOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.meta = self.meta.clone();
    }
}
