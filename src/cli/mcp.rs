//! `--mcp-config` and the tool options shared by `run` and `research`: start the MCP servers
//! once, report the ones that did not start, and hand the registry to the engine.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use planwave_config::McpSettings;
use planwave_engine::{DEFAULT_MAX_TOOL_ROUNDS, RunConfig, ToolProtocol};
use planwave_mcp::{McpConfig, RegistryOptions};
use planwave_runner::McpStart;

use super::exit::InvalidInput;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolProtocolArg {
    /// The model answers {"content": ..., "next": [{"mcp": NAME, "args": {...}}]}.
    Json,
    /// OpenAI function calling (`tools` / `tool_calls`).
    Native,
}

#[derive(Debug, Args)]
pub struct McpOptions {
    /// MCP servers for subagents and tool steps, in the `mcpServers` JSON format
    /// (`command`/`args`/`env` for stdio, `url`/`headers` for streamable HTTP). Replaces
    /// `[mcp]` servers of planwave.toml.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// How subagents ask for tool calls [default: json, or `[mcp] tool_protocol`].
    #[arg(long, value_enum)]
    pub tool_protocol: Option<ToolProtocolArg>,
    /// Seconds one tool call may take before it is abandoned (and retried once)
    /// [default: 60, or `[mcp] tool_timeout_secs`].
    #[arg(long, value_name = "SECS")]
    pub tool_timeout: Option<f64>,
    /// Seconds each MCP server may take to start and list its tools [default: 30].
    #[arg(long, value_name = "SECS")]
    pub mcp_start_timeout: Option<f64>,
    /// Most model turns with tool calls per task; one more turn then writes the section
    /// [default: 4].
    #[arg(long, value_name = "N")]
    pub max_tool_rounds: Option<u32>,
}

fn seconds(flag: &str, v: f64) -> Result<Duration, InvalidInput> {
    if v.is_finite() && v > 0.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(InvalidInput {
            source_name: flag.into(),
            problems: vec![format!("{v} is not a positive number of seconds")],
        })
    }
}

impl McpOptions {
    /// The engine settings these options (and `[mcp]`) change.
    pub fn apply(&self, config: RunConfig, settings: &McpSettings) -> anyhow::Result<RunConfig> {
        let protocol = match (self.tool_protocol, settings.tool_protocol.as_deref()) {
            (Some(ToolProtocolArg::Json), _) => ToolProtocol::Json,
            (Some(ToolProtocolArg::Native), _) => ToolProtocol::Native,
            (None, Some(p)) => p.parse().map_err(|e: String| InvalidInput {
                source_name: "[mcp] tool_protocol".into(),
                problems: vec![e],
            })?,
            (None, None) => ToolProtocol::Json,
        };
        Ok(RunConfig {
            tool_protocol: protocol,
            max_tool_rounds: self
                .max_tool_rounds
                .or(settings.max_tool_rounds)
                .unwrap_or(DEFAULT_MAX_TOOL_ROUNDS),
            ..config
        })
    }

    /// The servers: `--mcp-config`, else `[mcp] config` plus `[mcp.servers]`.
    fn servers(&self, settings: &McpSettings) -> Result<Option<McpConfig>, InvalidInput> {
        let bad = |e: planwave_mcp::ConfigError| InvalidInput {
            source_name: e.source_name,
            problems: e.problems,
        };
        if let Some(path) = &self.mcp_config {
            return McpConfig::load(path).map(Some).map_err(bad);
        }
        if !settings.has_servers() {
            return Ok(None);
        }
        let mut config = match &settings.config {
            Some(path) => McpConfig::load(path).map_err(bad)?,
            None => McpConfig::default(),
        };
        if !settings.servers.is_empty() {
            let text = serde_json::json!({ "mcpServers": settings.servers }).to_string();
            let inline = McpConfig::parse(&text, "[mcp.servers]").map_err(bad)?;
            config
                .servers
                .retain(|s| !inline.servers.iter().any(|i| i.name == s.name));
            config.servers.extend(inline.servers);
            config.servers.sort_by(|a, b| a.name.cmp(&b.name));
        }
        Ok(Some(config))
    }

    /// Which servers to start and how: `--mcp-config` else `[mcp]`, with the timeouts.
    pub fn start_spec(&self, settings: &McpSettings) -> Result<McpStart, InvalidInput> {
        let defaults = RegistryOptions::default();
        let options = RegistryOptions {
            connect_timeout: match self.mcp_start_timeout.or(settings.start_timeout_secs) {
                Some(v) => seconds("--mcp-start-timeout", v)?,
                None => defaults.connect_timeout,
            },
            call_timeout: match self.tool_timeout.or(settings.tool_timeout_secs) {
                Some(v) => seconds("--tool-timeout", v)?,
                None => defaults.call_timeout,
            },
            max_concurrent_per_server: settings
                .max_concurrent_per_server
                .unwrap_or(defaults.max_concurrent_per_server),
        };
        Ok(McpStart {
            config: self.servers(settings)?,
            options,
        })
    }
}
