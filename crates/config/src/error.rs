//! Why settings cannot be used. Each error names where the problem is ([`SettingsError::source_name`]):
//! front ends print it as `source: problem`, one line per problem.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read config file {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A value of the config file (or a combination of values) that makes no sense.
    #[error("{0}")]
    Invalid(String),
    /// A value reported under its own name rather than under `config`: a flag
    /// (`--tool-timeout`) or a setting read where it is used (`[mcp] tool_protocol`).
    #[error("{source_name}: {problem}")]
    Setting {
        source_name: String,
        problem: String,
    },
    /// The MCP server list (an `mcpServers` file or `[mcp.servers]`), every problem of it.
    #[error(transparent)]
    Mcp(planwave_mcp::McpConfigError),
}

impl SettingsError {
    /// A value that makes no sense, reported under its own name (a flag, a setting).
    pub fn setting(source_name: &str, problem: impl Into<String>) -> Self {
        SettingsError::Setting {
            source_name: source_name.to_owned(),
            problem: problem.into(),
        }
    }

    /// Where the problem is: `config` for the config file and its values, else the flag,
    /// setting or MCP server file concerned.
    pub fn source_name(&self) -> &str {
        match self {
            SettingsError::Read { .. }
            | SettingsError::Parse { .. }
            | SettingsError::Invalid(_) => "config",
            SettingsError::Setting { source_name, .. } => source_name,
            SettingsError::Mcp(e) => &e.source_name,
        }
    }

    /// What is wrong, one line each, without the source name.
    pub fn problems(&self) -> Vec<String> {
        match self {
            SettingsError::Setting { problem, .. } => vec![problem.clone()],
            SettingsError::Mcp(e) => e.problems.clone(),
            other => vec![other.to_string()],
        }
    }
}
