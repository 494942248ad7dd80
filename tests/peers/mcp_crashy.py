# A small MCP server on the official Python SDK for tests: tools that crash the server
# (fragile: on its first call ever; doomed: on every call) and one that answers (hello).
import os, sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("crashy")
MARK = os.environ.get("CRASHY_MARK", "/tmp/crashy.mark")

@server.tool()
def fragile(message: str) -> str:
    """Crashes the server on its first call ever; answers after a restart."""
    if not os.path.exists(MARK):
        open(MARK, "w").close()
        os._exit(3)
    return f"survived: {message}"

@server.tool()
def doomed(message: str) -> str:
    """Crashes the server on every call."""
    os._exit(4)

@server.tool()
def hello(name: str) -> str:
    """Answers; the server's start count is in $CRASHY_STARTS (one line per start)."""
    return f"hello {name}"

if __name__ == "__main__":
    starts = os.environ.get("CRASHY_STARTS")
    if starts:
        with open(starts, "a") as f:
            f.write(f"{os.getpid()}\n")
    server.run()
