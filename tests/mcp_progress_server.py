"""A tiny MCP server for tests, written the way a third party would (the SDK's MCPServer).

Run: ``python tests/mcp_progress_server.py`` (stdio). Its tools:

- ``count(n)`` reports progress once per item ("item i of n") and returns ``{"counted": n}``
  as structured content;
- ``pid()`` returns the server's process id as text;
- ``hang()`` reports one progress update ("waiting"), then waits forever (for kill tests);
- ``fail(message)`` fails with ``message`` (an ``isError`` result).

With ``COG_TEST_SEEN=<file>`` it writes its command line and ``COG_TEST_MARK`` there at start.
"""

from __future__ import annotations

import os

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("progress-demo")


class Counted(BaseModel):
    counted: int


@server.tool(title="Count items")
async def count(n: int, ctx: Context) -> Counted:
    """Count from 1 to n, reporting progress for each item."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"item {i} of {n}")
        await anyio.sleep(0.01)
    return Counted(counted=n)


@server.tool(structured_output=False)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
async def hang(ctx: Context) -> str:
    """Report one progress update, then never finish."""
    await ctx.report_progress(1, None, "waiting")
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def fail(message: str) -> str:
    """Fail with the given message."""
    raise ToolError(message)


if __name__ == "__main__":
    if os.environ.get("COG_TEST_SEEN"):  # say what this process was given: its command line and COG_TEST_MARK
        import json
        import sys

        with open(os.environ["COG_TEST_SEEN"], "w", encoding="utf-8") as seen:
            json.dump({"argv": sys.argv, "mark": os.environ.get("COG_TEST_MARK")}, seen)
    server.run()
