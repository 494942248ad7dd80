//! [`McpRegistry`]: every configured server started in parallel, their tools under unique
//! names, and calls routed with a timeout. Built once and shared (`Arc`) by every task of a
//! run, or by every run of a batch.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::config::McpConfig;
use crate::error::{StartError, ToolError};
use crate::server::{Observer, Server, ServerEvent};

#[derive(Clone, Debug)]
pub struct RegistryOptions {
    /// Start-up (spawn or connect, initialize, tools/list) per server.
    pub connect_timeout: Duration,
    /// One tool call; `call_tool` has no timeout of its own and can hang forever.
    pub call_timeout: Duration,
    /// Calls in flight per server; others queue.
    pub max_concurrent_per_server: usize,
    /// The largest tool result, in bytes of its text (UTF-8); a larger one fails its call.
    /// The message carrying it may be up to four times as large (see `wire_limit`).
    pub max_output_bytes: usize,
}

/// The default of [`RegistryOptions::max_output_bytes`].
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 * 1024 * 1024;

/// How many times a result's size the message carrying it may be. A server may send the
/// text twice (`content` and `structuredContent`: the Python SDK does for every text
/// result) and JSON-escape it (`\u4e2d`, six bytes for a three-byte character, is twice the
/// UTF-8), so a result within the limit can take four times as much on the wire; the
/// message is cut (never held whole) beyond that, and the result checked once decoded.
const WIRE_FACTOR: usize = 4;

/// The largest message read from a server whose results may have `max_output` bytes.
pub(crate) fn wire_limit(max_output: usize) -> usize {
    max_output
        .saturating_mul(WIRE_FACTOR)
        .saturating_add(64 * 1024)
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            connect_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(60),
            max_concurrent_per_server: 8,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// One tool as tasks and the planner see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolInfo {
    /// Unique across servers: the tool's own name, or `server/tool` where two servers clash.
    pub name: String,
    pub server: String,
    /// The name the server knows it by.
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
}

impl ToolInfo {
    /// Whether the schema declares an `input` property (the chaining rule's target).
    pub fn takes_input(&self) -> bool {
        self.input_schema
            .get("properties")
            .and_then(|p| p.get("input"))
            .is_some()
    }
}

/// What a tool returned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolOutput {
    /// Text blocks joined by newlines (or the structured content as JSON if there is no text).
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// The tool ran and reported an error (the model reads it; it is not retried).
    pub is_error: bool,
}

impl ToolOutput {
    /// The output as JSON for `{{ID.field}}` references: structured content, else the text
    /// parsed as JSON, else the text as a string.
    pub fn json(&self) -> Value {
        if let Some(s) = &self.structured {
            return s.clone();
        }
        serde_json::from_str(&self.text).unwrap_or_else(|_| Value::String(self.text.clone()))
    }
}

/// How one server's start went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerStatus {
    pub server: String,
    pub ok: bool,
    pub tools: usize,
    pub duration_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub struct McpRegistry {
    servers: Vec<Server>,
    tools: Vec<ToolInfo>,
    /// Unique name -> (server index, tool name on that server).
    routes: HashMap<String, (usize, String)>,
    status: Vec<ServerStatus>,
    options: RegistryOptions,
    /// Every run using the registry hears of restarts and stops (a batch shares one).
    observers: Mutex<Vec<(u64, Observer)>>,
    next_observer: std::sync::atomic::AtomicU64,
}

impl McpRegistry {
    /// Starts every server in parallel, each within `connect_timeout`. Never fails as a
    /// whole: a server that does not start is reported in [`status`](Self::status) and
    /// [`failures`](Self::failures), and the others serve.
    pub async fn start(config: &McpConfig, options: RegistryOptions) -> McpRegistry {
        let servers: Vec<Server> = config
            .servers
            .iter()
            .map(|c| Server::new(c.clone(), &options))
            .collect();
        let started = futures::future::join_all(servers.iter().map(|s| async move {
            let t0 = Instant::now();
            let r = s.start().await;
            (r, t0.elapsed().as_secs_f64() * 1000.0)
        }))
        .await;

        let mut listed: Vec<(usize, rmcp::model::Tool)> = Vec::new();
        let mut status = Vec::new();
        for (i, (r, ms)) in started.into_iter().enumerate() {
            let server = servers[i].name().to_owned();
            match r {
                Ok(tools) => {
                    status.push(ServerStatus {
                        server,
                        ok: true,
                        tools: tools.len(),
                        duration_ms: ms,
                        error: None,
                    });
                    listed.extend(tools.into_iter().map(|t| (i, t)));
                }
                Err(e) => {
                    // Front ends report it from `failures()`, in their own words; a log line would repeat it.
                    tracing::info!(server = %server, "MCP server did not start: {e}");
                    status.push(ServerStatus {
                        server,
                        ok: false,
                        tools: 0,
                        duration_ms: ms,
                        error: Some(e),
                    });
                }
            }
        }

        // Names that appear on more than one server get the `server/` prefix everywhere.
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for (_, t) in &listed {
            *count.entry(t.name.to_string()).or_default() += 1;
        }
        let mut tools = Vec::with_capacity(listed.len());
        let mut routes = HashMap::new();
        for (i, t) in listed {
            let tool = t.name.to_string();
            let server = servers[i].name().to_owned();
            let name = if count[&tool] > 1 {
                format!("{server}/{tool}")
            } else {
                tool.clone()
            };
            routes.insert(name.clone(), (i, tool.clone()));
            tools.push(ToolInfo {
                name,
                server,
                tool,
                description: t.description.as_deref().unwrap_or_default().to_owned(),
                input_schema: Value::Object((*t.input_schema).clone()),
            });
        }
        McpRegistry {
            servers,
            tools,
            routes,
            status,
            options,
            observers: Mutex::new(Vec::new()),
            next_observer: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// Every tool of every server that started, in server then listing order.
    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// A tool by its unique name, or by `server/tool`.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| t.name == name).or_else(|| {
            let (server, tool) = name.split_once('/')?;
            self.tools
                .iter()
                .find(|t| t.server == server && t.tool == tool)
        })
    }

    pub fn status(&self) -> &[ServerStatus] {
        &self.status
    }

    pub fn failures(&self) -> Vec<StartError> {
        self.status
            .iter()
            .filter(|s| !s.ok)
            .map(|s| StartError {
                server: s.server.clone(),
                reason: s.error.clone().unwrap_or_default(),
            })
            .collect()
    }

    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    /// Adds a listener for restarts, later failures and stops (a run's event sink); the id
    /// removes it again.
    pub fn add_observer(&self, observer: Observer) -> u64 {
        let id = self
            .next_observer
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut o) = self.observers.lock() {
            o.push((id, observer));
        }
        id
    }

    pub fn remove_observer(&self, id: u64) {
        if let Ok(mut o) = self.observers.lock() {
            o.retain(|(i, _)| *i != id);
        }
    }

    /// One observer calling every current one.
    fn observer(&self) -> Option<Observer> {
        let all: Vec<Observer> = self
            .observers
            .lock()
            .map(|o| o.iter().map(|(_, f)| f.clone()).collect())
            .unwrap_or_default();
        if all.is_empty() {
            return None;
        }
        Some(std::sync::Arc::new(move |e: ServerEvent| {
            for f in &all {
                f(e.clone());
            }
        }))
    }

    /// `name` or `server/name` (the prefixed form also works for names that do not clash).
    fn resolve<'a>(&'a self, name: &'a str) -> Option<(usize, &'a str)> {
        if let Some((i, tool)) = self.routes.get(name) {
            return Some((*i, tool.as_str()));
        }
        let (server, tool) = name.split_once('/')?;
        let i = self.servers.iter().position(|s| s.name() == server)?;
        self.tools
            .iter()
            .any(|t| t.server == server && t.tool == tool)
            .then_some((i, tool))
    }

    /// Calls a tool with the registry's call timeout.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_with_timeout(name, args, self.options.call_timeout)
            .await
    }

    pub async fn call_with_timeout(
        &self,
        name: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let Some((i, tool)) = self.resolve(name) else {
            return Err(ToolError::UnknownTool {
                name: name.to_owned(),
            });
        };
        let observer = self.observer();
        self.servers[i].call(tool, args, timeout, &observer).await
    }

    /// Stops every server (stdio children exit, HTTP sessions end), in parallel.
    pub async fn shutdown(&self) {
        let observer = self.observer();
        futures::future::join_all(self.servers.iter().map(|s| async {
            s.shutdown().await;
            if let Some(o) = &observer {
                o(ServerEvent::Stopped {
                    server: s.name().to_owned(),
                });
            }
        }))
        .await;
    }
}
