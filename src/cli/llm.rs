//! Model settings on the command line (`--llm`, `--llm-base-url`, `--model`, `--config`,
//! `--no-stream`), resolved with the environment and planwave.toml, and the provider built
//! from them.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use planwave_config::{Flags, LlmKind, ProcessEnv, Settings, load_file, resolve};
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
}

pub fn settings(
    llm: &LlmOptions,
    prompts: &PromptOptions,
    planner: Option<&PlannerOptions>,
) -> Result<Settings, InvalidInput> {
    let bad = |e: planwave_config::ConfigError| InvalidInput {
        source_name: "config".into(),
        problems: vec![e.to_string()],
    };
    let file = load_file(llm.config.as_deref(), &ProcessEnv).map_err(bad)?;
    let flags = Flags {
        llm: llm.llm.map(|k| match k {
            LlmArg::Openai => LlmKind::OpenAi,
            LlmArg::Sim => LlmKind::Sim,
        }),
        base_url: llm.llm_base_url.clone(),
        model: llm.model.clone(),
        stream: llm.no_stream.then_some(false),
        prompts_dir: prompts.prompts.clone(),
        lang: planner.and_then(|p| p.lang).map(|l| match l {
            LangArg::Zh => Lang::Zh,
            LangArg::En => Lang::En,
        }),
        planner_attempts: planner.and_then(|p| p.planner_attempts),
        context_budget_tokens: prompts.context_budget,
    };
    resolve(&file, &ProcessEnv, &flags).map_err(bad)
}
