# A small MCP server on the official Python SDK for tests: tools that crash the server
# (fragile: on its first call ever; doomed: on every call), one that answers (hello), and
# ones that report errors without crashing (flaky: on its first `fails` calls; broken: always).
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

@server.tool()
def flaky(message: str, fails: int) -> str:
    """Reports an error on its first `fails` calls (counted in $CRASHY_FLAKY), then answers."""
    path = os.environ.get("CRASHY_FLAKY", "/tmp/crashy.flaky")
    calls = int(open(path).read()) if os.path.exists(path) else 0
    with open(path, "w") as f:
        f.write(str(calls + 1))
    if calls < fails:
        raise RuntimeError(f"flaky failure {calls + 1}")
    return f"steady: {message}"

@server.tool()
def broken(message: str) -> str:
    """Reports an error on every call."""
    raise RuntimeError("broken on purpose")

if __name__ == "__main__":
    starts = os.environ.get("CRASHY_STARTS")
    if starts:
        with open(starts, "a") as f:
            f.write(f"{os.getpid()}\n")
    server.run()
