//! MCP client side of planwave: servers from an `mcpServers` config ([`McpConfig`]), started
//! in parallel into one [`McpRegistry`] that lists their tools under unique names and routes
//! calls with a timeout, a per-server concurrency limit and one restart after a crash.
//!
//! The registry is built once and shared (`Arc`) across tasks and runs. This crate knows
//! nothing of plans, models or actors: the engine decides what to call and when.

mod config;
mod error;
mod oversize;
mod registry;
mod server;
mod stdio;

pub use config::{McpConfig, McpServerConfig, Transport};
pub use error::{McpConfigError, StartError, ToolError};
pub use registry::{
    DEFAULT_MAX_OUTPUT_BYTES, McpRegistry, RegistryOptions, ServerStatus, ToolInfo, ToolOutput,
};
pub use server::{MAX_RESTARTS, Observer, ServerEvent};
