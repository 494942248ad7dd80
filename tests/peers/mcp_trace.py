"""An MCP server (the official Python SDK) whose tool reports the W3C trace context its call
carried in `_meta` (SEP-414), so a test can check planwave propagates it."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("traced")


@server.tool()
def traceparent(ctx: Context) -> str:
    """The `_meta.traceparent` of this call, or `none`."""
    meta = ctx.request_context.meta or {}
    value = meta.get("traceparent") if isinstance(meta, dict) else getattr(meta, "traceparent", None)
    return value or "none"


if __name__ == "__main__":
    server.run()
