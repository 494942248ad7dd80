//! `--mcp-config` and the tool options of the commands that run tools (resolved with `[mcp]`
//! by this crate; the runner starts the servers).

use std::path::PathBuf;
use std::time::Duration;

use planwave_engine::ToolProtocol;
use serde::{Deserialize, Serialize};

use super::FlagGroup;
use crate::{Flags, McpFlags};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum ToolProtocolArg {
    /// The model answers {"content": ..., "next": [{"mcp": NAME, "args": {...}}]}.
    Json,
    /// OpenAI function calling (`tools` / `tool_calls`).
    Native,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct McpOptions {
    /// MCP servers for subagents and tool steps, in the `mcpServers` JSON format
    /// (`command`/`args`/`env` for stdio, `url`/`headers` for streamable HTTP). Replaces
    /// `[mcp]` servers of planwave.toml.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub mcp_config: Option<PathBuf>,
    /// How subagents ask for tool calls [default: json, or `[mcp] tool_protocol`].
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub tool_protocol: Option<ToolProtocolArg>,
    /// How long one tool call may take before it is abandoned (and retried once): seconds,
    /// or 500ms, 2m [default: 60, or `[mcp] tool_timeout_secs`].
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", value_parser = crate::parse_positive_duration))]
    #[serde(with = "super::text::duration")]
    pub tool_timeout: Option<Duration>,
    /// How long each MCP server may take to start and list its tools [default: 30s].
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", value_parser = crate::parse_positive_duration))]
    #[serde(with = "super::text::duration")]
    pub mcp_start_timeout: Option<Duration>,
    /// Most model turns with tool calls per task; one more turn then writes the section
    /// [default: 4].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub max_tool_rounds: Option<u32>,
    /// The largest answer an MCP server may send (a tool result), e.g. `4MiB`; a larger one
    /// fails its call at once [default: 16MiB, or `[mcp] max_output_bytes`].
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub mcp_max_output: Option<bytesize::ByteSize>,
}

impl FlagGroup for McpOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.mcp = Some(McpFlags {
            config: self.mcp_config.clone(),
            tool_protocol: self.tool_protocol.map(|p| match p {
                ToolProtocolArg::Json => ToolProtocol::Json,
                ToolProtocolArg::Native => ToolProtocol::Native,
            }),
            tool_timeout_secs: self.tool_timeout.map(|d| d.as_secs_f64()),
            start_timeout_secs: self.mcp_start_timeout.map(|d| d.as_secs_f64()),
            max_tool_rounds: self.max_tool_rounds,
            max_output: self.mcp_max_output,
        });
    }
}
