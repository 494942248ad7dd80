//! planwave's settings: `planwave.toml`, the environment and command-line flags resolved
//! (flags > environment > file > defaults) into typed [`Settings`].
//!
//! The API key is held in [`planwave_llm::ApiKey`], whose `Debug`, `Display` and `Serialize`
//! redact it, so printing settings cannot leak it. This crate parses and resolves only: it
//! knows nothing of clap (the binary maps its flags onto [`Flags`]), HTTP or the engine.

mod env;
mod file;
mod mcp;
mod reflect;
mod resolve;

pub use env::{
    ENV_API_KEY, ENV_BASE_URL, ENV_CONFIG, ENV_MODEL, ENV_OPENAI_API_KEY, ENV_OPENAI_BASE_URL,
    EnvSource, ProcessEnv,
};
pub use file::ConfigFile;
pub use mcp::{McpSection, McpSettings};
pub use reflect::{OrchestratorSection, ReflectSettings, ReflectionSection};
pub use resolve::{
    DEFAULT_BASE_URL, DEFAULT_CONTEXT_BUDGET, Flags, LlmChoice, LlmKind, OpenAiSettings,
    PlannerSettings, PromptSettings, RunLimits, Settings, load_file, resolve,
};

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
}

#[cfg(test)]
mod tests;
