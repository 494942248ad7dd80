//! `--mcp-config` and the tool options shared by `run` and `research`: start the MCP servers
//! once, report the ones that did not start, and hand the registry to the engine.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use planwave_engine::{DEFAULT_MAX_TOOL_ROUNDS, RunConfig, ToolProtocol};
use planwave_mcp::{McpConfig, McpRegistry, RegistryOptions};
use planwave_plan::ToolCatalog;

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
    /// (`command`/`args`/`env` for stdio, `url`/`headers` for streamable HTTP).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// How subagents ask for tool calls.
    #[arg(long, value_enum, default_value = "json")]
    pub tool_protocol: ToolProtocolArg,
    /// Seconds one tool call may take before it is abandoned (and retried once).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub tool_timeout: f64,
    /// Seconds each MCP server may take to start and list its tools.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub mcp_start_timeout: f64,
    /// Most model turns with tool calls per task; one more turn then writes the section.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TOOL_ROUNDS)]
    pub max_tool_rounds: u32,
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
    /// The engine settings these options change.
    pub fn apply(&self, config: RunConfig) -> RunConfig {
        RunConfig {
            tool_protocol: match self.tool_protocol {
                ToolProtocolArg::Json => ToolProtocol::Json,
                ToolProtocolArg::Native => ToolProtocol::Native,
            },
            max_tool_rounds: self.max_tool_rounds,
            ..config
        }
    }

    /// Starts the configured servers (in parallel); `None` without `--mcp-config`. Servers
    /// that fail are reported on stderr by name; the run goes on without them.
    pub async fn start(&self, quiet: bool) -> anyhow::Result<Option<Arc<McpRegistry>>> {
        let Some(path) = &self.mcp_config else {
            return Ok(None);
        };
        let config = McpConfig::load(path).map_err(|e| InvalidInput {
            source_name: e.source_name,
            problems: e.problems,
        })?;
        let options = RegistryOptions {
            connect_timeout: seconds("--mcp-start-timeout", self.mcp_start_timeout)?,
            call_timeout: seconds("--tool-timeout", self.tool_timeout)?,
            ..RegistryOptions::default()
        };
        let registry = McpRegistry::start(&config, options).await;
        for f in registry.failures() {
            eprintln!("warning: {f}; continuing without it");
        }
        if !quiet {
            let up = registry.status().iter().filter(|s| s.ok).count();
            eprintln!(
                "mcp: {} tools from {up} of {} servers",
                registry.tools().len(),
                registry.status().len()
            );
        }
        Ok(Some(Arc::new(registry)))
    }
}

/// The tool names plans are checked against (empty without servers: tool steps then fail
/// validation, naming the tool).
pub fn catalog(registry: Option<&McpRegistry>) -> ToolCatalog {
    ToolCatalog::new(
        registry
            .map(|r| r.tools().iter().map(|t| t.name.clone()).collect::<Vec<_>>())
            .unwrap_or_default(),
    )
}
