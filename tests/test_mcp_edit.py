"""``cog edit --mcp``: a replayed run calls a tool of another MCP server, and its progress shows in
the JSON lines exactly like a built-in tool's (tool-update events between tool-call-end and tool-result)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASSETTE = ROOT / "fixtures" / "cassettes" / "mcp_progress.jsonl"
PROGRESS_SERVER = shlex.join([sys.executable, str(ROOT / "tests" / "mcp_progress_server.py")])


def cog_edit(repo: Path, *mcp: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cogcli", "edit", "--json", "--yes", "-C", str(repo), "--model", f"replay:{CASSETTE}"]
    for command in mcp:
        argv += ["--mcp", command]
    return subprocess.run(
        [*argv, "Count three items"], cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def test_mcp_tool_progress_appears_as_tool_update_events(make_repo: Callable[..., Path]) -> None:
    done = cog_edit(make_repo("calc"), PROGRESS_SERVER)
    assert done.returncode == 0, done.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    call = [e for e in events if e.get("id") == "call_1" or e.get("toolCallId") == "call_1"]
    assert [e["type"] for e in call if e["type"] != "tool-call-delta"] == [
        "tool-call-start",
        "tool-call-end",
        "tool-update",
        "tool-update",
        "tool-update",
        "tool-result",
    ]
    updates = [e for e in call if e["type"] == "tool-update"]
    assert [u["content"] for u in updates] == ["item 1 of 3", "item 2 of 3", "item 3 of 3"]
    assert [u["details"] for u in updates] == [{"progress": float(i), "total": 3.0} for i in (1, 2, 3)]
    start = next(e for e in call if e["type"] == "tool-call-start")
    assert start["toolName"] == "count"
    assert start["presentation"] == {"label": "Count items", "icon": "plug", "detail": "progress-demo"}
    result = call[-1]
    assert result["result"] == {"counted": 3}  # the server's structuredContent
    assert "error" not in result
    assert kinds[-1] == "finish" and events[-1]["status"] == "completed"


def test_an_mcp_server_that_cannot_start_fails_the_run_up_front_with_exit_2(make_repo: Callable[..., Path]) -> None:
    done = cog_edit(make_repo("calc"), "no-such-mcp-server-xyz --stdio")
    assert done.returncode == 2, f"a ConfigError from mcp_tools() must end cog edit with exit 2:\n{done.stderr}"
    assert "no-such-mcp-server-xyz --stdio" in done.stderr and "command not found" in done.stderr

