"""What the front ends read of a session's background commands (cogcli.session.background): the
Jobs found through the tools that share it, nothing before a run or without run_command, and a
clear word (never a traceback) for an unknown id or argument."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cogcli.contract.errors import ToolCallError
from cogcli.session.background import job_rows, jobs_reply, kill_job, running_jobs, session_jobs
from workspace_tools import workspace_tools
from workspace_tools.shell.jobs import Jobs, jobs_of


class _Session:
    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools

    def run_tools(self) -> list[Any]:
        return self.tools


def test_the_jobs_are_found_through_the_tools_that_share_them(tmp_path: Path) -> None:
    tools = workspace_tools(tmp_path, sandbox="off", only=["read_file", "run_command", "command_output", "kill_command"])
    jobs = jobs_of(tools)
    assert isinstance(jobs, Jobs)
    assert session_jobs(_Session(tools)) is jobs
    assert jobs_of(workspace_tools(tmp_path, sandbox="off", only=["read_file"])) is None
    jobs.close()


def test_no_jobs_before_a_run_and_clear_words_for_bad_input(tmp_path: Path) -> None:
    empty = _Session([])  # a session not prepared yet: no tools
    assert job_rows(empty) == [] and running_jobs(empty) == 0
    assert jobs_reply(empty, "").startswith("No background commands in this session")
    try:
        kill_job(empty, "job_1")
    except ToolCallError as exc:
        assert exc.message == "no background command in this session yet"
    else:
        raise AssertionError("kill_job of a session with no jobs did not refuse")
    tools = workspace_tools(tmp_path, sandbox="off", only=["run_command", "command_output", "kill_command"])
    session = _Session(tools)
    assert jobs_reply(session, "kill job_2") == "no background command 'job_2' in this session (known: none)"
    assert jobs_reply(session, "kill").startswith("unknown /jobs argument 'kill'")
    session_jobs(session).close()
