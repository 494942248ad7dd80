//! `execute_tool` spans (OpenTelemetry GenAI conventions) for MCP tool calls: the caller
//! opens one per attempt inside its task span, instruments the call with it, and records
//! the outcome.

use tracing::Span;
use tracing::field::Empty;

use crate::spans;

/// A span for one attempt of tool `tool` on MCP server `server`.
pub fn execute_tool_span(tool: &str, server: &str, attempt: u32) -> Span {
    tracing::info_span!(
        target: "planwave::mcp",
        "execute_tool",
        otel.name = format!("execute_tool {tool}"),
        otel.kind = "client",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.type = "function",
        mcp.method.name = "tools/call",
        planwave.mcp.server = server,
        planwave.attempt = i64::from(attempt),
        planwave.tool.outcome = Empty,
        error.type = Empty,
    )
}

/// `outcome` is `ok`, `tool_error` (the tool answered with an error) or `error` (the call
/// itself failed); anything but `ok` sets error status with `error` as description.
pub fn record_tool_outcome(span: &Span, outcome: &str, error: Option<&str>) {
    span.record("planwave.tool.outcome", outcome);
    if outcome != "ok" {
        span.record("error.type", outcome);
        spans::set_error(span, error.unwrap_or(outcome));
    }
}
