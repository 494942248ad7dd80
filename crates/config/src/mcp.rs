//! `[mcp]`: MCP servers for subagents and tool steps, and the tool loop's limits. Servers come
//! from an `mcpServers` JSON file (`config`, relative to `planwave.toml`) and/or inline
//! `[mcp.servers.NAME]` tables in the same shape (`command`/`args`/`env`, or `url`/`headers`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// An `mcpServers` JSON file.
    pub config: Option<PathBuf>,
    /// Inline servers, by name, in the `mcpServers` entry shape.
    #[serde(default)]
    pub servers: BTreeMap<String, serde_json::Value>,
    /// `json` or `native`.
    pub tool_protocol: Option<String>,
    pub tool_timeout_secs: Option<f64>,
    pub start_timeout_secs: Option<f64>,
    pub max_tool_rounds: Option<u32>,
    pub max_concurrent_per_server: Option<usize>,
}

/// `[mcp]` with `config` resolved against the file's directory. Flags override each field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpSettings {
    pub config: Option<PathBuf>,
    pub servers: BTreeMap<String, serde_json::Value>,
    pub tool_protocol: Option<String>,
    pub tool_timeout_secs: Option<f64>,
    pub start_timeout_secs: Option<f64>,
    pub max_tool_rounds: Option<u32>,
    pub max_concurrent_per_server: Option<usize>,
}

impl McpSettings {
    pub fn has_servers(&self) -> bool {
        self.config.is_some() || !self.servers.is_empty()
    }
}

pub(crate) fn resolve(file: &crate::ConfigFile) -> McpSettings {
    let m = &file.mcp;
    McpSettings {
        config: m.config.as_deref().map(|p| file.relative(p)),
        servers: m.servers.clone(),
        tool_protocol: m.tool_protocol.clone(),
        tool_timeout_secs: m.tool_timeout_secs,
        start_timeout_secs: m.start_timeout_secs,
        max_tool_rounds: m.max_tool_rounds,
        max_concurrent_per_server: m.max_concurrent_per_server,
    }
}
