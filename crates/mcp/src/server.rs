//! One MCP server connection: connect (with a timeout), call a tool (with a timeout and a
//! concurrency limit), notice a broken connection, restart once, shut down.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, MetaObject, RequestMetaObject};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::{
    StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::Semaphore;

use crate::ToolOutput;
use crate::config::{McpServerConfig, Transport};
use crate::error::ToolError;
use crate::stdio::{StdioTransport, TOO_LARGE_CODE};

type Client = RunningService<RoleClient, ()>;

/// How many times a crashed server is started again before its calls fail for good.
pub const MAX_RESTARTS: u32 = 1;
/// Lines of a stdio server's stderr kept for error messages.
const STDERR_LINES: usize = 12;
/// Bytes of one stderr line kept; a server printing one endless line must not grow memory.
const STDERR_LINE_BYTES: usize = 1024;

/// What the registry learns about a server over its life, for `mcp_server` events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    Started { server: String, tools: usize },
    Failed { server: String, error: String },
    Restarted { server: String, restarts: u32 },
    Stopped { server: String },
}

pub type Observer = Arc<dyn Fn(ServerEvent) + Send + Sync>;

struct Conn {
    client: Option<Arc<Client>>,
    restarts: u32,
    /// Set when the server is down for good.
    down: Option<String>,
}

pub(crate) struct Server {
    pub config: McpServerConfig,
    connect_timeout: Duration,
    /// The largest message read from the server (a tool result, a tool list).
    max_output: usize,
    conn: tokio::sync::Mutex<Conn>,
    permits: Semaphore,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Server {
    pub fn new(config: McpServerConfig, options: &crate::RegistryOptions) -> Server {
        Server {
            config,
            connect_timeout: options.connect_timeout,
            max_output: options.max_output_bytes,
            conn: tokio::sync::Mutex::new(Conn {
                client: None,
                restarts: 0,
                down: None,
            }),
            permits: Semaphore::new(options.max_concurrent_per_server.max(1)),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// First connection; lists the tools. On failure the server stays down.
    pub async fn start(&self) -> Result<Vec<rmcp::model::Tool>, String> {
        let mut conn = self.conn.lock().await;
        let result = async {
            let client = self.connect().await?;
            let tools = tokio::time::timeout(self.connect_timeout, client.list_all_tools())
                .await
                .map_err(|_| {
                    format!(
                        "tools/list did not answer within {:.1}s",
                        self.connect_timeout.as_secs_f64()
                    )
                })?
                .map_err(|e| format!("tools/list failed: {e}"))?;
            Ok((client, tools))
        }
        .await;
        match result {
            Ok((client, tools)) => {
                conn.client = Some(Arc::new(client));
                Ok(tools)
            }
            Err(e) => {
                let e = self.with_stderr(e);
                conn.down = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn connect(&self) -> Result<Client, String> {
        let timeout = self.connect_timeout;
        let fut = async {
            match &self.config.transport {
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let mut cmd = tokio::process::Command::new(command);
                    cmd.args(args).envs(env);
                    if let Some(cwd) = cwd {
                        cmd.current_dir(cwd);
                    }
                    let (proc, stderr) = StdioTransport::spawn(cmd, self.max_output)
                        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
                    self.keep_stderr(stderr);
                    ().serve(proc)
                        .await
                        .map_err(|e| format!("initialization failed: {}", plain_error(&e)))
                }
                Transport::Http { url, headers } => {
                    let mut custom = std::collections::HashMap::new();
                    for (k, v) in headers {
                        let name = k
                            .parse::<reqwest::header::HeaderName>()
                            .map_err(|_| format!("header name {k:?} is not valid"))?;
                        let mut value = v
                            .parse::<reqwest::header::HeaderValue>()
                            .map_err(|_| format!("header {k} has a value that is not valid"))?;
                        value.set_sensitive(true);
                        custom.insert(name, value);
                    }
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(custom);
                    let wire = crate::registry::wire_limit(self.max_output);
                    config.max_sse_event_size = wire;
                    config.max_json_response_size = wire;
                    let http = planwave_tls::http_client()
                        .build()
                        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
                    let transport = StreamableHttpClientTransport::with_client(http, config);
                    ().serve(transport)
                        .await
                        .map_err(|e| format!("initialization failed: {}", plain_error(&e)))
                }
            }
        };
        tokio::time::timeout(timeout, fut)
            .await
            .map_err(|_| format!("did not initialize within {:.1}s", timeout.as_secs_f64()))?
    }

    fn keep_stderr(&self, stderr: tokio::process::ChildStderr) {
        let buf = self.stderr.clone();
        let name = self.config.name.clone();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stderr);
            let mut raw = Vec::new();
            loop {
                raw.clear();
                match read_bounded_line(&mut reader, &mut raw, STDERR_LINE_BYTES).await {
                    Ok(true) => {}
                    _ => break,
                }
                let line = String::from_utf8_lossy(&raw).trim_end().to_owned();
                tracing::debug!(server = %name, "stderr: {line}");
                if let Ok(mut b) = buf.lock() {
                    if b.len() == STDERR_LINES {
                        b.pop_front();
                    }
                    b.push_back(line);
                }
            }
        });
    }

    /// `message`, plus the server's last stderr lines when it has any.
    fn with_stderr(&self, message: String) -> String {
        let tail: Vec<String> = self
            .stderr
            .lock()
            .map(|b| b.iter().rev().take(3).rev().cloned().collect())
            .unwrap_or_default();
        if tail.is_empty() {
            message
        } else {
            format!("{message} (stderr: {})", tail.join(" | "))
        }
    }

    /// The live connection, restarting a crashed server once.
    async fn client(
        &self,
        tool: &str,
        observer: &Option<Observer>,
    ) -> Result<Arc<Client>, ToolError> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = &conn.client {
            if !c.is_closed() && !c.is_transport_closed() {
                return Ok(c.clone());
            }
            conn.client = None;
        }
        let unavailable = |reason: String| ToolError::Unavailable {
            server: self.config.name.clone(),
            tool: tool.to_owned(),
            reason,
        };
        if let Some(reason) = &conn.down {
            return Err(unavailable(reason.clone()));
        }
        if conn.restarts >= MAX_RESTARTS {
            let reason = format!("it crashed again after {MAX_RESTARTS} restart");
            conn.down = Some(reason.clone());
            return Err(unavailable(reason));
        }
        conn.restarts += 1;
        tracing::warn!(server = %self.config.name, "restarting MCP server after a crash");
        match self.connect().await {
            Ok(c) => {
                let c = Arc::new(c);
                conn.client = Some(c.clone());
                if let Some(o) = observer {
                    o(ServerEvent::Restarted {
                        server: self.config.name.clone(),
                        restarts: conn.restarts,
                    });
                }
                Ok(c)
            }
            Err(e) => {
                let reason = self.with_stderr(format!("restart failed: {e}"));
                conn.down = Some(reason.clone());
                if let Some(o) = observer {
                    o(ServerEvent::Failed {
                        server: self.config.name.clone(),
                        error: reason.clone(),
                    });
                }
                Err(unavailable(reason))
            }
        }
    }

    async fn forget(&self, client: &Arc<Client>) {
        let mut conn = self.conn.lock().await;
        if conn.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
            conn.client = None;
        }
    }

    pub async fn call(
        &self,
        tool: &str,
        args: Value,
        timeout: Duration,
        observer: &Option<Observer>,
    ) -> Result<ToolOutput, ToolError> {
        // Queueing for a permit is not part of the call's own timeout.
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| ToolError::Unavailable {
                server: self.config.name.clone(),
                tool: tool.to_owned(),
                reason: "shut down".into(),
            })?;
        let client = self.client(tool, observer).await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        match args {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => {
                return Err(ToolError::Rejected {
                    server: self.config.name.clone(),
                    tool: tool.to_owned(),
                    message: format!("arguments must be a JSON object, got {other}"),
                });
            }
        }
        // W3C trace context in `_meta` (MCP SEP-414), so a traced server's spans join the
        // run's trace; the caller's current span is its `execute_tool` span. Over stdio and
        // streamable HTTP alike (an HTTP header would miss stdio servers).
        if let Some(tp) = planwave_telemetry::traceparent(&tracing::Span::current()) {
            let mut meta = MetaObject::new();
            meta.set_traceparent(tp);
            params.meta = Some(RequestMetaObject(meta));
        }
        match tokio::time::timeout(timeout, client.call_tool(params)).await {
            Err(_) => Err(ToolError::Timeout {
                server: self.config.name.clone(),
                tool: tool.to_owned(),
                after: timeout,
            }),
            Ok(Ok(result)) => {
                let out = output(result);
                // The limit is on the result, in bytes of its text; the message carrying it
                // was bounded by its wire limit.
                if out.text.len() > self.max_output {
                    return Err(ToolError::TooLarge {
                        server: self.config.name.clone(),
                        tool: tool.to_owned(),
                        bytes: out.text.len() as u64,
                        limit: self.max_output as u64,
                    });
                }
                Ok(out)
            }
            Ok(Err(ServiceError::McpError(e))) if e.code.0 == TOO_LARGE_CODE => {
                let size = |k: &str| {
                    e.data
                        .as_ref()
                        .and_then(|d| d.get(k))
                        .and_then(Value::as_u64)
                        .unwrap_or_default()
                };
                Err(ToolError::TooLarge {
                    server: self.config.name.clone(),
                    tool: tool.to_owned(),
                    bytes: size("bytes"),
                    limit: size("limit"),
                })
            }
            Ok(Err(ServiceError::McpError(e))) => Err(ToolError::Rejected {
                server: self.config.name.clone(),
                tool: tool.to_owned(),
                message: e.message.to_string(),
            }),
            Ok(Err(e)) => {
                self.forget(&client).await;
                let e = match e {
                    ServiceError::TransportClosed => {
                        "the connection closed (the server exited or crashed)".to_owned()
                    }
                    other => planwave_redact::redact_urls_in(&other.to_string()).into_owned(),
                };
                Err(ToolError::Transport {
                    server: self.config.name.clone(),
                    tool: tool.to_owned(),
                    message: self.with_stderr(e),
                })
            }
        }
    }

    pub async fn shutdown(&self) {
        let client = {
            let mut conn = self.conn.lock().await;
            conn.down = Some("shut down".into());
            conn.client.take()
        };
        self.permits.close();
        if let Some(c) = client {
            match Arc::try_unwrap(c) {
                // Closes stdin; rmcp then waits for the child to exit, then signals it.
                Ok(c) => {
                    let _ = tokio::time::timeout(Duration::from_secs(5), c.cancel()).await;
                }
                // A call still holds it (timed out elsewhere): dropping ours lets the last
                // holder's drop cancel it.
                Err(c) => c.cancellation_token().cancel(),
            }
        }
    }
}

/// An rmcp error as a person reads it: rmcp's messages embed Rust type paths
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error`), which say nothing to a
/// user; those are dropped and the root cause (say, "Connection refused") is added when the
/// message does not already end with it.
fn plain_error(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = without_type_paths(&planwave_redact::redact_urls_in(&e.to_string()));
    let mut root = e.source();
    while let Some(next) = root.and_then(std::error::Error::source) {
        root = Some(next);
    }
    if let Some(root) = root {
        let cause = without_type_paths(&planwave_redact::redact_urls_in(&root.to_string()));
        if !cause.is_empty() && !msg.contains(&cause) {
            msg = format!("{msg} ({cause})");
        }
    }
    msg
}

/// `text` without its `[...]` segments that hold a Rust path, and without doubled spaces.
fn without_type_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        if !rest[open..close].contains("::") {
            out.push_str(&rest[open..=close]);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads one line into `raw`, keeping at most `max` bytes of it (the rest is skipped);
/// `false` at the end of the stream.
async fn read_bounded_line(
    reader: &mut (impl tokio::io::AsyncBufRead + Unpin),
    raw: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let newline = buf.iter().position(|&b| b == b'\n');
        let take = newline.map_or(buf.len(), |i| i + 1);
        let room = max.saturating_sub(raw.len());
        raw.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take);
        if newline.is_some() {
            return Ok(true);
        }
    }
}

/// The text blocks of a result joined, plus its structured content when the server sent one.
fn output(result: CallToolResult) -> ToolOutput {
    let mut texts = Vec::new();
    for block in &result.content {
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        match v.get("text").and_then(Value::as_str) {
            Some(t) => texts.push(t.to_owned()),
            // Images, audio, resources: say what arrived rather than dump base64.
            None => texts.push(format!(
                "[{} content]",
                v.get("type").and_then(Value::as_str).unwrap_or("non-text")
            )),
        }
    }
    let mut text = texts.join("\n");
    if text.is_empty()
        && let Some(s) = &result.structured_content
    {
        text = s.to_string();
    }
    ToolOutput {
        text,
        structured: result.structured_content,
        is_error: result.is_error.unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn type_paths_leave_error_messages() {
        assert_eq!(
            super::without_type_paths(
                "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] error: Client error: refused [os 111]"
            ),
            "Send message error Transport error: Client error: refused [os 111]"
        );
    }
}
