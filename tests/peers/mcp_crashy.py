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

if __name__ == "__main__":
    server.run()
