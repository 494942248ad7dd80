//! planwave's settings: `planwave.toml`, the environment and command-line flags resolved
//! (flags > environment > file > defaults) into typed [`Settings`]. This is the only place
//! that applies that precedence; front ends map their input onto [`Flags`], call
//! [`load_settings`] (or [`load_file`] + [`resolve_settings`]) and use what comes back.
//!
//! [`Settings`] holds the libraries' own config types, not mirrors of them: the model client's
//! [`OpenAiConfig`](planwave_llm::openai::OpenAiConfig), the engine's
//! [`RunConfig`](planwave_engine::RunConfig), the planner's
//! [`PlannerConfig`](planwave_planner::PlannerConfig), the reflective loop's
//! [`LoopPolicy`](planwave_orchestrator::LoopPolicy) and the MCP registry's
//! [`McpConfig`](planwave_mcp::McpConfig) and [`RegistryOptions`](planwave_mcp::RegistryOptions).
//! Defaults are theirs too, except where a library has none (the loop policy's).
//!
//! The API key is held in [`planwave_llm::ApiKey`], whose `Debug`, `Display` and `Serialize`
//! redact it, so printing settings cannot leak it. This crate parses, validates and reads the
//! files settings name (the MCP server list) and starts nothing.
//!
//! [`spec`] is what a job is as a person chose it ([`spec::JobSpec`]): the command line, a
//! request body, a queue message and `invocation.json` all read and write it, and it becomes
//! [`Flags`] here. Its types derive `clap::Args` only with the `clap` feature, which only the
//! binary turns on; without it this crate knows nothing of clap.

mod batch_api;
mod caps;
mod duration;
mod env;
mod error;
mod file;
mod flags;
mod llm;
mod mcp;
mod number;
mod plan_cache;
mod planner;
mod prices;
mod reflect;
mod resolve;
mod run;
mod secs;
mod settings;
pub mod spec;

pub use bytesize::ByteSize;
pub use caps::parse_max_output;
pub use duration::{MAX_DURATION, parse_duration, parse_positive_duration};
pub use env::{
    ENV_API_KEY, ENV_BASE_URL, ENV_CONFIG, ENV_MODEL, ENV_OPENAI_API_KEY, ENV_OPENAI_BASE_URL,
    EnvSource, ProcessEnv,
};
pub use error::SettingsError;
pub use file::{ConfigFile, McpSection, OrchestratorSection, ReflectionSection};
pub use flags::{Flags, LlmKind, McpFlags};
pub use llm::DEFAULT_BASE_URL;
pub use number::{
    MAX_MICROS_PER_TOKEN, MAX_RATE, MAX_SIGMA, MIN_RATE, SHAPE_RANGE, parse_count,
    parse_micros_per_token, parse_millis, parse_rate, parse_secs, parse_shape, parse_share,
    parse_sigma,
};
pub use reflect::DEFAULT_LOOP_POLICY;
pub use resolve::{load_file, load_settings, resolve_settings};
pub use secs::positive_secs;
pub use settings::{LlmChoice, McpServers, PlanCacheSettings, Settings};

#[cfg(test)]
mod tests;
