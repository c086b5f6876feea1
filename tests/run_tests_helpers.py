"""Helpers for the run_tests tests: run the tool through invoke_tool and collect its updates."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli import AbortSignal, ToolResult, ToolUpdate, invoke_tool
from workspace_tools.workspace.paths import Workspace
from workspace_tools.runners.run_tests import run_tests_tool


@dataclass
class Run:
    result: ToolResult
    updates: list[ToolUpdate] = field(default_factory=list)

    @property
    def details(self) -> dict[str, Any]:
        assert isinstance(self.result.details, dict), self.result
        return self.result.details

    def outcomes(self) -> dict[str, str]:
        return {t["id"]: t["outcome"] for t in self.details["tests"]}


async def run_tool(
    root: Path,
    args: dict[str, Any] | None = None,
    *,
    on_update: Any = None,
    signal: AbortSignal | None = None,
    **tool_kwargs: Any,
) -> Run:
    updates: list[ToolUpdate] = []

    def collect(update: ToolUpdate) -> None:
        updates.append(update)
        if on_update is not None:
            on_update(update)

    tool = run_tests_tool(Workspace(root), **tool_kwargs)
    result = await invoke_tool(tool, args or {}, on_update=collect, signal=signal)
    return Run(result, updates)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its parent to reap it counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def wait_until_dead(pids: list[int], within: float = 5.0) -> list[int]:
    """The pids still alive after waiting up to ``within`` seconds: SIGKILLed processes take a
    moment to finish exiting (a condition waited for, not a timing)."""
    deadline = time.monotonic() + within
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def processes_in(folder: Path) -> list[int]:
    """Host pids of the live processes whose working directory is ``folder`` or below it: how the
    host finds what a sandbox (with its own PID namespace) left running."""
    found = []
    target = str(Path(folder).resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if (cwd == target or cwd.startswith(target + "/")) and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_until(condition: Any, within: float = 5.0) -> bool:
    """Whether ``condition()`` became true within ``within`` seconds (a condition waited for)."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
