//! `[mcp]` and the tool flags: the engine's tool protocol and tool rounds, the MCP servers to
//! start (their `mcpServers` files read here, so a bad one stops the command before anything
//! starts) and the registry's limits.

use planwave_engine::{RunConfig, ToolProtocol};
use planwave_mcp::{McpConfig, RegistryOptions};

use crate::SettingsError;
use crate::file::{ConfigFile, McpSection};
use crate::flags::McpFlags;
use crate::settings::McpServers;

/// Sets `run`'s tool protocol and rounds; returns the servers, if any are configured.
/// Without `flags` (a command that runs no tools) nothing of `[mcp]` is read.
pub(crate) fn resolve(
    run: &mut RunConfig,
    file: &ConfigFile,
    flags: Option<&McpFlags>,
) -> Result<Option<McpServers>, SettingsError> {
    let Some(flags) = flags else {
        return Ok(None);
    };
    let m = &file.mcp;
    let servers = match servers(file, flags)? {
        // Limits of servers that are not there are not checked (nor used).
        Some(config) => Some(McpServers {
            config,
            options: registry_options(m, flags)?,
        }),
        None => None,
    };
    run.tool_protocol = match (flags.tool_protocol, m.tool_protocol.as_deref()) {
        (Some(p), _) => p,
        (None, Some(p)) => p
            .parse()
            .map_err(|e: String| SettingsError::setting("[mcp] tool_protocol", e))?,
        (None, None) => ToolProtocol::default(),
    };
    run.max_tool_rounds = flags
        .max_tool_rounds
        .or(m.max_tool_rounds)
        .unwrap_or(run.max_tool_rounds);
    Ok(servers)
}

/// `--mcp-config`, else `[mcp] config` (relative to `planwave.toml`) with `[mcp.servers]`
/// replacing its entries of the same name; `None` when neither names a server.
fn servers(file: &ConfigFile, flags: &McpFlags) -> Result<Option<McpConfig>, SettingsError> {
    if let Some(path) = &flags.config {
        return McpConfig::load(path).map(Some).map_err(SettingsError::Mcp);
    }
    let m = &file.mcp;
    if m.config.is_none() && m.servers.is_empty() {
        return Ok(None);
    }
    let mut config = match &m.config {
        Some(path) => McpConfig::load(&file.relative(path)).map_err(SettingsError::Mcp)?,
        None => McpConfig::default(),
    };
    if !m.servers.is_empty() {
        let text = serde_json::json!({ "mcpServers": m.servers }).to_string();
        let inline = McpConfig::parse(&text, "[mcp.servers]").map_err(SettingsError::Mcp)?;
        config
            .servers
            .retain(|s| !inline.servers.iter().any(|i| i.name == s.name));
        config.servers.extend(inline.servers);
        config.servers.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Ok(Some(config))
}

/// Start-up and call timeouts: the flag, else the file, else the registry's default. A bad
/// value is reported under the flag's name wherever it came from.
fn registry_options(m: &McpSection, flags: &McpFlags) -> Result<RegistryOptions, SettingsError> {
    let d = RegistryOptions::default();
    let secs = |flag: &str, v: f64| {
        crate::positive_secs(v).ok_or_else(|| {
            SettingsError::setting(flag, format!("{v} is not a positive number of seconds"))
        })
    };
    Ok(RegistryOptions {
        connect_timeout: match flags.start_timeout_secs.or(m.start_timeout_secs) {
            Some(v) => secs("--mcp-start-timeout", v)?,
            None => d.connect_timeout,
        },
        call_timeout: match flags.tool_timeout_secs.or(m.tool_timeout_secs) {
            Some(v) => secs("--tool-timeout", v)?,
            None => d.call_timeout,
        },
        max_concurrent_per_server: m
            .max_concurrent_per_server
            .unwrap_or(d.max_concurrent_per_server),
        max_output_bytes: match flags.max_output.or(m.max_output_bytes) {
            Some(size) => usize::try_from(size.as_u64())
                .ok()
                .filter(|&b| b > 0)
                .ok_or_else(|| {
                    SettingsError::setting(
                        "--mcp-max-output",
                        format!("{size} is not a usable size (more than 0 bytes)"),
                    )
                })?,
            None => d.max_output_bytes,
        },
    })
}
