"""A run's exit follows its last test run's outcome, not only its failure count: a build that
failed, no tests, or a plain test command that failed count no failed test, yet the run did not
pass (``finish.testsError`` says why, and ``cog edit`` exits 1)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cogcli import tool, tool_output
from cogcli.wire.events import BaseEvent
from cogcli.wire.exit_codes import EXIT_OK, EXIT_TASK_FAILED
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.render.summary import RunSummary
from cogcli.loop.runtime import Agent, Cogitator
from cogcli.contract.tool import NoParameters
from workspace_tools import workspace_tools


def _summary(events: list[BaseEvent]) -> RunSummary:
    summary = RunSummary()
    for event in events:
        summary.add(event)
    return summary


async def _run(tools: list[Any], call: Call) -> tuple[Any, RunSummary]:
    events: list[BaseEvent] = []
    model = ScriptedModel([Turn("", [call]), Turn("done")])
    agent = Agent(name="t", instructions="x", model=model, tools=tools)
    result = await Cogitator().run(agent, input="go", on_event=events.append)
    return result, _summary(events)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("details", "expected_exit", "says"),
    [
        ({"outcome": "passed", "exit_code": 0, "passed": 3, "failed": 0}, EXIT_OK, None),
        ({"outcome": "failed", "exit_code": 1, "passed": 2, "failed": 1}, EXIT_TASK_FAILED, None),
        ({"outcome": "no-tests", "exit_code": 5, "passed": 0, "failed": 0}, EXIT_TASK_FAILED, "no tests ran (exit 5)"),
        ({"outcome": "error", "exit_code": 2, "passed": 4, "failed": 0, "errors": 1}, EXIT_TASK_FAILED, "had errors"),
        ({"outcome": "failed", "exit_code": 3, "counted": False}, EXIT_TASK_FAILED, "test command failed (exit 3)"),
    ],
)
async def test_the_last_test_outcome_decides_the_exit(details: dict[str, Any], expected_exit: int, says: str | None) -> None:
    @tool(name="run_tests", reports_tests=True)
    async def fake_run_tests(params: NoParameters) -> Any:
        """Report a test run."""
        return tool_output("ran", details=details)

    result, summary = await _run([fake_run_tests], Call("t1", "run_tests", {}))
    assert summary.exit_code() == expected_exit
    if says is None:
        assert result.tests_error is None
    else:
        assert result.tests_error is not None and says in result.tests_error
        assert summary.finish is not None and summary.finish.tests_error == result.tests_error


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("go") is None, reason="NOT TESTED: needs Go (.ci/run installs golang-go)")
async def test_a_go_build_failure_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/broken\n\ngo 1.19\n")
    (tmp_path / "add.go").write_text("package broken\n\nfunc Add(a, b int) int { return a + }\n")
    (tmp_path / "add_test.go").write_text(
        'package broken\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal("no")\n\t}\n}\n'
    )
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    tools = workspace_tools(tmp_path, sandbox="off", include_git=False)
    result, summary = await _run(tools, Call("t1", "run_tests", {}))
    ran = next(r for r in result.tool_calls if r.name == "run_tests")
    assert ran.details["outcome"] == "build-failed"
    assert result.tests_error is not None and "did not build" in result.tests_error
    assert summary.exit_code() == EXIT_TASK_FAILED


def test_files_a_command_changed_have_no_line_counts_and_the_summary_does_not_make_them_zero() -> None:
    from cogcli.wire.events import FileChange, FinishEvent

    def line(*changes: FileChange) -> str:
        summary = _summary([FinishEvent(message_id="m", thread_id="t", status="completed", steps=2, files_changed=list(changes))])
        return summary.line()

    assert line(FileChange(path="a.py", added=2, removed=1)) == "Done · 2 steps · 1 file changed (+2 -1)"
    by_command = FileChange(path="fmt.py")  # run_command's changed_files: paths, no diff
    assert line(by_command, FileChange(path="b.txt")) == "Done · 2 steps · 2 files changed"
    assert line(FileChange(path="a.py", added=2, removed=1), by_command) == "Done · 2 steps · 2 files changed (+2 -1 in 1)"
