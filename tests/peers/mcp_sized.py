"""An MCP server (the official Python SDK) whose tool answers with a text of a given size in
UTF-8 bytes. The SDK sends a text result twice (as `content` and as `structuredContent`), so
the answer on the wire is about twice the text."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("sized")


@server.tool()
def sized(kib: int, char: str) -> str:
    """`char` repeated to `kib` KiB of UTF-8 (rounded down to whole characters)."""
    size = len(char.encode("utf-8"))
    return char * (kib * 1024 // size)


if __name__ == "__main__":
    server.run()
