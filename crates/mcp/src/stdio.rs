//! A stdio MCP server as an rmcp transport whose reads are bounded.
//!
//! rmcp's own `TokioChildProcess` drops a line over its limit and keeps waiting, so the call
//! it answered hangs until its timeout, is retried, and is finally reported as "did not
//! answer", which is false. Here a relay sits between the child's stdout and rmcp: a line over
//! the limit is never held whole (memory stays bounded by the limit) and is replaced by a
//! JSON-RPC error answering the same request id, so the call fails at once and says why.

use std::io;
use std::process::Stdio;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStderr, ChildStdin, Command};

use crate::oversize::IdScanner;

/// The JSON-RPC error code of a substituted answer; [`crate::server`] maps it to
/// [`crate::ToolError::TooLarge`].
pub(crate) const TOO_LARGE_CODE: i32 = -32_099;

/// How long the child gets to exit after its stdin closes, and again after SIGTERM.
const EXIT_WAIT: Duration = Duration::from_secs(3);

pub(crate) struct StdioTransport {
    child: Option<Child>,
    inner: AsyncRwTransport<RoleClient, DuplexStream, ChildStdin>,
}

impl StdioTransport {
    /// Spawns `cmd` with piped stdio; returns its stderr for the caller to drain.
    pub fn spawn(mut cmd: Command, limit: usize) -> io::Result<(StdioTransport, ChildStderr)> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A transport dropped without `close` (a cancelled start) must not leave the child.
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(io::Error::other("the child's stdio was not piped"));
        };
        let (relay_end, rmcp_end) = tokio::io::duplex(64 * 1024);
        let wire = crate::registry::wire_limit(limit);
        tokio::spawn(relay(
            stdout,
            relay_end,
            Limit {
                wire,
                result: limit,
            },
        ));
        // Substituted answers are small, so rmcp's own limit only needs to admit `wire`.
        let inner = AsyncRwTransport::new_client(rmcp_end, stdin)
            .with_max_line_length(wire.saturating_add(2));
        Ok((
            StdioTransport {
                child: Some(child),
                inner,
            },
            stderr,
        ))
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    /// The MCP stdio shutdown sequence: close the child's stdin and wait, then SIGTERM and
    /// wait, then kill.
    async fn close(&mut self) -> io::Result<()> {
        self.inner.close().await?;
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok() {
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) with a pid we spawned and have not yet reaped.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            if tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok() {
                return Ok(());
            }
        }
        child.kill().await
    }
}

/// The size of a message kept (`wire`), and the result limit a cut message is reported
/// against (`--mcp-max-output`).
#[derive(Clone, Copy)]
struct Limit {
    wire: usize,
    result: usize,
}

/// Copies the child's stdout line by line into `out`, holding at most `limit.wire` bytes of
/// a line.
async fn relay(stdout: impl AsyncRead + Unpin, mut out: impl AsyncWrite + Unpin, limit: Limit) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut oversized: Option<Oversized> = None;
    loop {
        let (took, ended) = {
            let buf = match reader.fill_buf().await {
                Ok(b) if !b.is_empty() => b,
                // EOF or a read error: rmcp sees the end of the stream.
                _ => break,
            };
            let newline = buf.iter().position(|&b| b == b'\n');
            let chunk = &buf[..newline.map_or(buf.len(), |i| i + 1)];
            match &mut oversized {
                Some(o) => o.feed(chunk),
                // The limit is on the message; its newline does not count.
                None if line.len() + chunk.len() - usize::from(newline.is_some()) > limit.wire => {
                    let mut o = Oversized::default();
                    o.feed(&line);
                    o.feed(chunk);
                    line = Vec::new();
                    oversized = Some(o);
                }
                None => line.extend_from_slice(chunk),
            }
            (chunk.len(), newline.is_some())
        };
        reader.consume(took);
        if !ended {
            continue;
        }
        let written = match oversized.take() {
            Some(o) => match o.answer(limit.result) {
                Some(answer) => out.write_all(answer.as_bytes()).await,
                None => Ok(()),
            },
            None => out.write_all(&line).await,
        };
        line.clear();
        if written.is_err() {
            // rmcp's end is gone: the connection is closed.
            break;
        }
    }
    let _ = out.write_all(&line).await;
}

/// A line over the limit, seen but not kept: its size and its request id.
#[derive(Default)]
struct Oversized {
    bytes: usize,
    id: IdScanner,
}

impl Oversized {
    fn feed(&mut self, chunk: &[u8]) {
        let body = chunk.strip_suffix(b"\n").unwrap_or(chunk);
        self.bytes += body.len();
        self.id.feed(body);
    }

    /// The error answer to the request the line answered; `None` (the line is only dropped)
    /// when it carried no id, i.e. it was a notification.
    fn answer(self, limit: usize) -> Option<String> {
        let Some(id) = self.id.id() else {
            tracing::warn!(
                bytes = self.bytes,
                limit,
                "an MCP server sent a message over the size limit; dropped"
            );
            return None;
        };
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": TOO_LARGE_CODE,
                "message": format!("tool result of {} bytes exceeds the limit of {limit} bytes", self.bytes),
                "data": {"bytes": self.bytes, "limit": limit},
            },
        });
        Some(format!("{error}\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn relayed(input: &[u8], limit: usize) -> String {
        let limit = Limit {
            wire: limit,
            result: limit,
        };
        let (mut w, r) = tokio::io::duplex(1 << 20);
        let (out_w, mut out_r) = tokio::io::duplex(1 << 20);
        let input = input.to_vec();
        tokio::spawn(async move {
            w.write_all(&input).await.expect("write");
        });
        let task = tokio::spawn(relay(r, out_w, limit));
        let mut s = String::new();
        out_r.read_to_string(&mut s).await.expect("read");
        task.await.expect("relay");
        s
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_unchanged() {
        let s = relayed(b"{\"id\":1}\n{\"id\":2}\ntail", 8).await;
        assert_eq!(s, "{\"id\":1}\n{\"id\":2}\ntail");
    }

    #[tokio::test]
    async fn an_oversized_answer_becomes_an_error_for_its_id() {
        let big = format!(
            "{{\"result\":{{\"text\":\"{}\",\"id\":9}},\"jsonrpc\":\"2.0\",\"id\":\"r-7\"}}\n{{\"id\":3}}\n",
            "x".repeat(5000)
        );
        let s = relayed(big.as_bytes(), 100).await;
        let mut lines = s.lines();
        let err: serde_json::Value =
            serde_json::from_str(lines.next().expect("answer")).expect("json");
        assert_eq!(err["id"], "r-7");
        assert_eq!(err["error"]["code"], TOO_LARGE_CODE);
        assert_eq!(
            err["error"]["data"]["bytes"],
            big.lines().next().expect("line").len()
        );
        assert_eq!(lines.next(), Some("{\"id\":3}"));
    }

    #[tokio::test]
    async fn an_oversized_notification_is_dropped() {
        let big = format!(
            "{{\"method\":\"log\",\"params\":\"{}\"}}\n{{\"id\":3}}\n",
            "y".repeat(500)
        );
        assert_eq!(relayed(big.as_bytes(), 100).await, "{\"id\":3}\n");
    }
}
