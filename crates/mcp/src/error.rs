//! Errors of config loading, server start-up and tool calls, each naming its server or tool.

use std::fmt;
use std::time::Duration;

/// A config that cannot be used: every problem, one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfigError {
    pub source_name: String,
    pub problems: Vec<String>,
}

impl fmt::Display for McpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.source_name)?;
        f.write_str(&self.problems.join("; "))
    }
}

impl std::error::Error for McpConfigError {}

/// Why a server did not start (the run goes on without it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {server}: {reason}")]
pub struct StartError {
    pub server: String,
    pub reason: String,
}

/// Why a tool call produced no result. A tool that ran and reported an error is not a
/// `ToolError`: it is a [`ToolOutput`](crate::ToolOutput) with `is_error`, for the model to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool {name}")]
    UnknownTool { name: String },
    #[error("tool {tool} (server {server}) did not answer within {:.1}s", after.as_secs_f64())]
    Timeout {
        server: String,
        tool: String,
        after: Duration,
    },
    /// The connection broke (the server crashed or went away); the server is restarted once.
    #[error("tool {tool}: MCP server {server} failed: {message}")]
    Transport {
        server: String,
        tool: String,
        message: String,
    },
    /// The server is down for good (did not start, or crashed again after its restart).
    #[error("tool {tool}: MCP server {server} is unavailable: {reason}")]
    Unavailable {
        server: String,
        tool: String,
        reason: String,
    },
    /// The server's answer was larger than `[mcp] max_output_bytes`; it was not read whole.
    #[error(
        "tool {tool} (server {server}): tool result of {bytes} bytes exceeds the limit of {limit} bytes (raise it with --mcp-max-output or [mcp] max_output_bytes)"
    )]
    TooLarge {
        server: String,
        tool: String,
        bytes: u64,
        limit: u64,
    },
    /// The server refused the call (bad arguments, unknown tool on its side, ...).
    #[error("tool {tool} (server {server}) rejected the call: {message}")]
    Rejected {
        server: String,
        tool: String,
        message: String,
    },
}

impl ToolError {
    /// Timeouts and broken connections are worth one more try (retry once); the rest are not.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ToolError::Timeout { .. } | ToolError::Transport { .. }
        )
    }
}
