//! The `mcpServers` config format most MCP clients share (Claude Desktop, Cursor, VS Code):
//!
//! ```json
//! {"mcpServers": {
//!   "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
//!   "remote": {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ..."}}
//! }}
//! ```
//!
//! A server with `command` is a stdio child process (`args`, `env`, optional `cwd`); one with
//! `url` speaks streamable HTTP (`headers` sent with every request). `disabled: true` skips a
//! server, as other clients do. Unknown fields are ignored so users can reuse their file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::McpConfigError;

/// How to reach one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        /// Sent with every request; values are never logged (they often hold tokens).
        headers: BTreeMap<String, String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerConfig {
    pub name: String,
    pub transport: Transport,
}

/// The servers of one config, in name order (so tool names and events are stable).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpConfig {
    pub servers: Vec<McpServerConfig>,
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "mcpServers", alias = "mcp_servers", alias = "servers")]
    servers: Option<BTreeMap<String, Entry>>,
}

#[derive(Deserialize)]
struct Entry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
}

impl McpConfig {
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Reads a config file; relative `cwd`s are taken from the file's directory.
    pub fn load(path: &Path) -> Result<McpConfig, McpConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| McpConfigError {
            source_name: path.display().to_string(),
            problems: vec![format!("cannot read: {e}")],
        })?;
        let mut config = McpConfig::parse(&text, &path.display().to_string())?;
        let base = path.parent().unwrap_or(Path::new("."));
        for s in &mut config.servers {
            if let Transport::Stdio { cwd: Some(cwd), .. } = &mut s.transport
                && cwd.is_relative()
            {
                *cwd = base.join(&*cwd);
            }
        }
        Ok(config)
    }

    /// Parses the JSON text of a config; every problem is collected, each naming its server.
    pub fn parse(text: &str, source_name: &str) -> Result<McpConfig, McpConfigError> {
        let bad = |problems: Vec<String>| McpConfigError {
            source_name: source_name.to_owned(),
            problems,
        };
        let file: File = serde_json::from_str(text)
            .map_err(|e| bad(vec![format!("not an mcpServers JSON object: {e}")]))?;
        let Some(entries) = file.servers else {
            return Err(bad(vec!["no \"mcpServers\" object".into()]));
        };
        let mut servers = Vec::new();
        let mut problems = Vec::new();
        for (name, e) in entries {
            if e.disabled {
                continue;
            }
            if name.trim().is_empty() || name.contains('/') {
                problems.push(format!(
                    "server {name:?}: a name must be non-empty and hold no '/'"
                ));
                continue;
            }
            let transport = match (e.command, e.url) {
                (Some(command), None) if !command.trim().is_empty() => Transport::Stdio {
                    command,
                    args: e.args,
                    env: e.env,
                    cwd: e.cwd,
                },
                (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                    Transport::Http {
                        url,
                        headers: e.headers,
                    }
                }
                (None, Some(url)) => {
                    problems.push(format!("server {name}: url {url:?} is not an http(s) URL"));
                    continue;
                }
                (Some(_), Some(_)) => {
                    problems.push(format!(
                        "server {name}: give either \"command\" or \"url\", not both"
                    ));
                    continue;
                }
                _ => {
                    problems.push(format!(
                        "server {name}: needs \"command\" (stdio) or \"url\" (streamable HTTP)"
                    ));
                    continue;
                }
            };
            servers.push(McpServerConfig { name, transport });
        }
        if problems.is_empty() {
            Ok(McpConfig { servers })
        } else {
            Err(bad(problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stdio_and_http_and_collects_problems() {
        let c = McpConfig::parse(
            r#"{"mcpServers": {
                "b": {"url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "k"}},
                "a": {"command": "node", "args": ["s.js"], "env": {"PORT": "1"}, "other": 1},
                "off": {"disabled": true}
            }}"#,
            "t",
        )
        .expect("valid");
        assert_eq!(c.servers.len(), 2);
        assert_eq!(c.servers[0].name, "a");
        assert!(
            matches!(&c.servers[0].transport, Transport::Stdio { command, .. } if command == "node")
        );
        assert!(
            matches!(&c.servers[1].transport, Transport::Http { url, .. } if url.ends_with("/mcp"))
        );

        let e = McpConfig::parse(
            r#"{"mcpServers": {"x": {}, "y": {"command": "a", "url": "http://h"}, "z": {"url": "ftp://h"}}}"#,
            "cfg.json",
        )
        .expect_err("invalid");
        assert_eq!(
            e.problems,
            vec![
                "server x: needs \"command\" (stdio) or \"url\" (streamable HTTP)",
                "server y: give either \"command\" or \"url\", not both",
                "server z: url \"ftp://h\" is not an http(s) URL",
            ]
        );
        assert!(McpConfig::parse("{}", "t").is_err());
    }

    #[test]
    fn the_example_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mcp.json");
        let c = McpConfig::load(&path).expect("examples/mcp.json");
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["everything", "time"]);
    }
}
