//! The MCP options are the job spec's (`planwave_config::spec::McpOptions`); here the one
//! command that reads only a server file (`validate --mcp-config`).

use std::path::Path;

use planwave_config::McpServers;

use super::exit::InvalidInput;

/// Only the servers of `--mcp-config` (a command that reads no config file: `validate`).
pub fn servers_from_file(path: &Path) -> Result<McpServers, InvalidInput> {
    McpServers::load(path).map_err(InvalidInput::from)
}
