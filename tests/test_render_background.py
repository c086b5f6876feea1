"""`cog edit`'s live line on a terminal ends with how many background commands run (issue 50:
background commands shown in every front end), counted from the events alone: a started job
counts, a job read as ended or killed no longer does; off a terminal nothing changes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from test_render_live import FakeTTY, a_test_run, draw

from cogcli.contract.details import BackgroundJobDetails
from cogcli.contract.details_readers import read_background_job
from cogcli.render.live_line import background_tail
from cogcli.render.summary import RunSummary
from cogcli.wire.events import BaseEvent, ToolCallStartEvent, ToolResultEvent


def job_result(call_id: str, tool: str, job: str, *, running: bool, killed: bool = False) -> list[BaseEvent]:
    details = BackgroundJobDetails(job=job, command="npm run dev", running=running, killed=killed,
                                   exit_code=None if running else -15, bytes_total=8).model_dump(mode="json")
    return [ToolCallStartEvent(id=call_id, tool_name=tool),
            ToolResultEvent(id=call_id, tool_call_id=call_id, tool_name=tool, result="…", details=details)]


def live_lines(out: Any) -> list[str]:
    return [part for part in out.getvalue().split("\r") if part.startswith("  … ")]


def test_the_live_line_counts_the_background_commands_running() -> None:
    out = FakeTTY()
    started = job_result("c1", "run_command", "job_1", running=True) + job_result("c2", "run_command", "job_2", running=True)
    draw([*started, *a_test_run("t1")], out, color=False, width=140)
    assert live_lines(out)[-1].rstrip().endswith("· tests/t.py::b passed · 2 in background"), live_lines(out)[-1]

    out = FakeTTY()
    killed = job_result("k1", "kill_command", "job_1", running=False, killed=True)
    draw([*started, *killed, *a_test_run("t2")], out, color=False, width=100)
    assert live_lines(out)[-1].rstrip().endswith("· 1 in background")

    out = FakeTTY()
    ended = job_result("o1", "command_output", "job_2", running=False)
    draw([*started, *killed, *ended, *a_test_run("t3")], out, color=False, width=100)
    assert "in background" not in out.getvalue()


def test_the_tail_fits_the_terminal_and_a_log_has_no_live_line() -> None:
    out = FakeTTY()
    draw([*job_result("c1", "run_command", "job_1", running=True), *a_test_run("t1")], out, color=False, width=60)
    for line in live_lines(out):
        assert len(line.rstrip()) <= 59 and line.rstrip().endswith("· 1 in background"), line  # the count stays, the test id goes
    class Log(FakeTTY):
        def isatty(self) -> bool:
            return False

    log = Log()
    draw([*job_result("c1", "run_command", "job_1", running=True), *a_test_run("t1")], log, width=100)
    assert "in background" not in log.getvalue()


def test_reading_a_jobs_state_from_details() -> None:
    assert read_background_job({"job": "job_3", "command": "x", "running": True}) == ("job_3", True)
    assert read_background_job({"exit_code": 0, "stdout": ""}) is None  # a foreground command's details
    assert read_background_job("diff --git a b") is None
    summary = RunSummary()
    for event in job_result("c1", "run_command", "job_1", running=True):
        summary.add(event)
    assert summary.jobs_running == 1
    assert background_tail(0) == "" and background_tail(3) == " · 3 in background"


@pytest.mark.anyio
async def test_command_outputs_row_draws_the_last_lines_it_read_on_a_terminal_and_in_a_log(tmp_path: Path) -> None:
    """command_output's result carries what the job printed since the last read: its last lines are
    drawn under the row as a running command's are (``  │ ``), after a line counting the earlier ones."""
    from test_background_commands import _repo, _tools

    from cogcli.contract.invoke import invoke_tool
    from cogcli.render.live_output import TAIL_LINES

    tools = _tools(_repo(tmp_path))
    try:
        printed = "".join(f"line {i}\\n" for i in range(1, 10)) + "\\033[31mred\\n"  # after the start looked (0.5 s)
        await invoke_tool(tools["run_command"], {"command": f"sleep 2; printf '{printed}'", "background": True}, call_id="c1")
        await invoke_tool(tools["run_command"], {"command": "sleep 4"})  # it printed all and ended meanwhile
        read = await invoke_tool(tools["command_output"], {"id": "job_1"}, call_id="c2")
        assert read.details["output"].startswith("line 1\n") and read.details["output"].endswith("red\n"), read.details
    finally:
        tools["run_command"].close()
    events = [ToolCallStartEvent(id="c2", tool_name="command_output"), ToolResultEvent.of(read)]
    for out in (FakeTTY(), io.StringIO()):
        draw(events, out, color=False, width=100)
        lines = out.getvalue().replace("\r", "\n").splitlines()
        row = next(i for i, line in enumerate(lines) if line.startswith("Output  job_1"))
        below = lines[row + 1 : row + 2 + TAIL_LINES]
        assert below[0] == f"  │ … {10 - TAIL_LINES} earlier lines", lines
        assert below[1:] == [f"  │ line {i}" for i in range(10 - TAIL_LINES + 1, 10)] + ["  │ \\x1b[31mred"], lines  # escaped, never a colour


def test_a_read_with_nothing_new_draws_no_lines() -> None:
    details = BackgroundJobDetails(job="job_1", command="x", running=True).model_dump(mode="json")
    out = io.StringIO()
    draw([ToolCallStartEvent(id="o1", tool_name="command_output"),
          ToolResultEvent(id="o1", tool_call_id="o1", tool_name="command_output", result="…", details=details)], out, color=False, width=100)
    assert "│" not in out.getvalue()
