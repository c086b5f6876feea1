"""Subagents (the ``task`` tool, :mod:`cogcli.loop.subagent`): a child run in the parent's session,
held to the same gate, hooks and budget, with its own thread and script (tests/subagent_helpers.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cogcli.gate.approval import Decision
from cogcli.models.scripted import Call, Turn
from cogcli.wire.events import ApprovalRequiredEvent, HookEvent, ToolUpdateEvent
from subagent_helpers import ByThread, run_with_children

FIX = Call("e1", "edit_file", {"path": "calc/ops.py", "old_text": "return a - b\n\n\ndef sub", "new_text": "return a + b\n\n\ndef sub"})


def task(call_id: str, prompt: str, description: str = "fix add", **more: Any) -> Call:
    return Call(call_id, "task", {"description": description, "prompt": prompt, **more})


@pytest.mark.anyio
async def test_a_child_edits_a_file_and_runs_the_tests_and_the_parent_reads_only_its_answer(make_repo: Callable[..., Path]) -> None:
    repo = make_repo("calc")
    model = ByThread(
        [Turn("Delegating.", [task("t1", "Fix add in calc/ops.py")]), Turn("The subagent fixed it.")],
        {"Fix add": [Turn("", [FIX]), Turn("", [Call("r1", "run_tests", {})]), Turn("Fixed add; tests pass.")]},
    )
    result, events, _ = await run_with_children(repo, model)

    assert "return a + b" in (repo / "calc" / "ops.py").read_text()
    [call] = result.tool_calls
    assert call.name == "task" and call.error is None
    told = next(m.content for m in model.parent.requests[1] if m.role == "tool")
    assert told == "Fixed add; tests pass."  # the child's final answer, nothing of its calls
    details = call.details
    assert details["status"] == "completed" and details["tool_calls"] == 2
    assert [f["path"] for f in details["files_changed"]] == ["calc/ops.py"]
    assert details["tests"]["failed"] == 0 and details["tests"]["passed"] > 0
    assert details["input_tokens"] == 30 and details["output_tokens"] == 15  # three child turns of (10, 5)
    assert result.usage.input_tokens == 50  # the parent's two turns and the child's three
    assert [f.path for f in result.files_changed] == ["calc/ops.py"]  # the run's end counts the child's changes
    # the child's own thread keeps its turns; its steps were this call's progress
    child = details["thread_id"]
    assert child != result.thread_id
    steps = [e.details for e in events if isinstance(e, ToolUpdateEvent) and e.tool_call_id == "t1"]
    assert [(s["tool_name"], s["status"]) for s in steps] == [("edit_file", "running"), ("edit_file", "done"), ("run_tests", "running"), ("run_tests", "done")]
    assert all(s["thread_id"] == child for s in steps)
    # the child never sees the task tool: no recursion
    assert all(spec.name != "task" for spec in model.children["Fix add"].tool_specs[0])
    assert any(spec.name == "task" for spec in model.parent.tool_specs[0])
