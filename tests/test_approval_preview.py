"""Approvals with a preview: a call that changes a file is approved on its diff, computed before
anything is written (by the same code the call runs), redacted like details; the approved call
applies exactly that change or fails FILE_CHANGED; a preview that shows the call cannot work ends
it unasked; a preview that breaks does not break the run."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from runtime_helpers import of_type
from ws_helpers import assert_diff_applies

from cogcli import tool
from cogcli.wire.events import Approval, BaseEvent
from cogcli.models.scripted import Call, ScriptedModel, Turn, all_request_text
from cogcli.loop.runtime import Agent, Cogitator, RunResult
from workspace_tools import workspace_tools

OPS = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIX_ADD = {"path": "ops.py", "old_text": "def add(a, b):\n    return a - b", "new_text": "def add(a, b):\n    return a + b"}


class Approver:
    """Answers every call with ``answer`` (or from the dict ``before`` returns: call id → answer),
    recording what it was asked; ``before`` runs first, while the question is on screen."""

    def __init__(self, answer: Any = True, before: Callable[[list[Approval]], Any] | None = None) -> None:
        self.answer = answer
        self.before = before
        self.asked: list[Approval] = []

    async def __call__(self, approvals: list[Approval]) -> dict[str, Any]:
        self.asked += approvals
        answers = self.before(approvals) if self.before is not None else None
        answers = answers if isinstance(answers, dict) else {}
        return {a.tool_call_id: answers.get(a.tool_call_id, self.answer) for a in approvals}


def repo(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name, text in (files if files is not None else {"ops.py": OPS}).items():
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


async def run(root: Path, calls: list[Call], approve: Any, *, test_command: str | None = None, model: ScriptedModel | None = None) -> tuple[RunResult, list[BaseEvent]]:
    model = model or ScriptedModel([Turn("", calls), Turn("Done.")])
    tools = workspace_tools(root, sandbox="off", test_command=test_command)
    events: list[BaseEvent] = []
    agent = Agent(name="t", instructions="Test.", model=model, tools=tools, max_steps=5)
    result = await Cogitator().run(agent, input="fix it", on_event=events.append, approve=approve)
    return result, events


@pytest.mark.anyio
async def test_an_edit_is_asked_about_with_its_diff_and_applies_exactly_that(tmp_path: Path) -> None:
    root = repo(tmp_path)
    before = tmp_path / "before"
    before.mkdir()
    (before / "ops.py").write_text(OPS)
    seen_on_disk: list[str] = []
    approver = Approver(before=lambda _: seen_on_disk.append((root / "ops.py").read_text()))

    result, events = await run(root, [Call("c1", "edit_file", FIX_ADD)], approver)

    [required] = of_type(events, "approval-required")
    [approval] = required.approvals
    preview = approval.preview
    assert preview is not None and set(preview) == {"path", "diff", "added", "removed"}
    assert (preview["path"], preview["added"], preview["removed"]) == ("ops.py", 1, 1)
    assert "-    return a - b\n+    return a + b\n" in preview["diff"]
    assert seen_on_disk == [OPS]  # nothing was written before the answer
    [edit] = result.tool_calls
    assert edit.ok and edit.details["diff"] == preview["diff"]  # the change shown is the change made
    assert_diff_applies(before, root, preview["diff"])
    assert (root / "ops.py").read_text() == OPS.replace("a - b", "a + b", 1)
    # the approval-required line a program reads carries it too
    assert required.to_wire()["approvals"][0]["preview"] == preview


@pytest.mark.anyio
async def test_a_denied_edit_writes_nothing(tmp_path: Path) -> None:
    root = repo(tmp_path)
    result, events = await run(root, [Call("c1", "edit_file", FIX_ADD)], Approver(False))
    assert of_type(events, "approval-required")[0].approvals[0].preview["added"] == 1
    assert result.tool_calls[0].error_code == "DENIED"
    assert (root / "ops.py").read_text() == OPS


@pytest.mark.anyio
async def test_write_file_previews_a_new_file_and_a_replaced_one(tmp_path: Path) -> None:
    root = repo(tmp_path)
    calls = [
        Call("c1", "write_file", {"path": "pkg/new.py", "content": "x = 1\ny = 2\n"}),
        Call("c2", "write_file", {"path": "ops.py", "content": "def add(a, b):\n    return a + b\n"}),
    ]
    result, events = await run(root, calls, Approver())

    new, replaced = of_type(events, "approval-required")[0].approvals
    assert new.preview == {
        "path": "pkg/new.py", "added": 2, "removed": 0,
        "diff": "diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n",
    }
    assert (replaced.preview["path"], replaced.preview["added"], replaced.preview["removed"]) == ("ops.py", 1, 5)
    assert [r.details["diff"] for r in result.tool_calls] == [new.preview["diff"], replaced.preview["diff"]]
    assert (root / "pkg" / "new.py").read_text() == "x = 1\ny = 2\n"


@pytest.mark.anyio
async def test_run_tests_shows_the_command_it_would_run(tmp_path: Path) -> None:
    root = repo(tmp_path)
    result, events = await run(root, [Call("c1", "run_tests", {"args": ["-k", "add"]})], Approver(), test_command="true")
    [approval] = of_type(events, "approval-required")[0].approvals
    assert approval.preview == {"command": "true -k add"}
    assert result.tool_calls[0].details["command"] == "true -k add"  # what ran is what was shown


@pytest.mark.anyio
async def test_a_secret_in_the_lines_around_an_edit_never_reaches_the_approval(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    root = repo(tmp_path, {"settings.py": f'TOKEN = "{token}"\nDEBUG = False\n'})
    approver = Approver()
    result, events = await run(root, [Call("c1", "edit_file", {"path": "settings.py", "old_text": "DEBUG = False", "new_text": "DEBUG = True"})], approver)

    [approval] = of_type(events, "approval-required")[0].approvals
    diff = approval.preview["diff"]
    assert token not in diff and '[REDACTED]' in diff and "+DEBUG = True" in diff
    assert token not in repr(approver.asked)
    assert result.tool_calls[0].ok and token in (root / "settings.py").read_text()  # the file itself keeps it
    # without the defence: the tool's own preview, before the run redacts it, shows the token
    from cogcli.contract.context import ToolContext
    from cogcli.contract.preview import as_preview

    (root / "settings.py").write_text(f'TOKEN = "{token}"\nDEBUG = False\n')
    edit = next(t for t in workspace_tools(root, sandbox="off") if t.name == "edit_file")
    raw = edit.preview(edit.parameters(path="settings.py", old_text="DEBUG = False", new_text="DEBUG = True"), ToolContext("c1", "edit_file"))
    raw = as_preview(await raw if hasattr(raw, "__await__") else raw)
    assert raw is not None and token in raw.shown["diff"]


@pytest.mark.anyio
async def test_a_file_changed_between_the_preview_and_the_approval_fails_file_changed(tmp_path: Path) -> None:
    root = repo(tmp_path)
    theirs = OPS + "\n# someone else's line\n"
    # the person's editor saves the file while the question is on screen
    approver = Approver(before=lambda _: (root / "ops.py").write_text(theirs))

    model = ScriptedModel([Turn("", [Call("c1", "edit_file", FIX_ADD)]), Turn("Done.")])
    result, _ = await run(root, [], approver, model=model)

    [edit] = result.tool_calls
    assert edit.error_code == "FILE_CHANGED"
    assert "ops.py is not what it was when this change was shown for approval" in (edit.error or "")
    assert "Read the file again" in (edit.error or "")
    assert (root / "ops.py").read_text() == theirs  # nothing of ours was written over it
    assert "Read the file again" in all_request_text(model)


@pytest.mark.anyio
async def test_an_edit_whose_preview_shows_it_cannot_work_ends_unasked(tmp_path: Path) -> None:
    root = repo(tmp_path)
    approver = Approver()
    missing = {"path": "ops.py", "old_text": "def mul(a, b):", "new_text": "def times(a, b):"}
    result, events = await run(root, [Call("c1", "edit_file", missing), Call("c2", "edit_file", {**FIX_ADD, "path": "nope.py"})], approver)

    assert approver.asked == [] and of_type(events, "approval-required") == []
    assert [r.error_code for r in result.tool_calls] == ["EDIT_NO_MATCH", "FILE_NOT_FOUND"]
    assert "old_text was not found in ops.py" in (result.tool_calls[0].error or "")
    assert (root / "ops.py").read_text() == OPS
    assert result.status == "completed"  # nothing was refused: the model reads the errors and goes on


@pytest.mark.anyio
async def test_two_edits_of_one_file_in_a_turn_are_each_shown_as_they_will_apply(tmp_path: Path) -> None:
    root = repo(tmp_path)
    # the second edit changes text only the first one writes
    second = {"path": "ops.py", "old_text": "return a + b", "new_text": "return b + a"}
    result, events = await run(root, [Call("c1", "edit_file", FIX_ADD), Call("c2", "edit_file", second)], Approver())

    first, then = of_type(events, "approval-required")[0].approvals
    assert "+    return a + b" in first.preview["diff"]
    assert "-    return a + b\n+    return b + a" in then.preview["diff"]
    assert [r.error_code for r in result.tool_calls] == [None, None]
    assert [r.details["diff"] for r in result.tool_calls] == [first.preview["diff"], then.preview["diff"]]
    assert (root / "ops.py").read_text() == OPS.replace("return a - b", "return b + a", 1)


@pytest.mark.anyio
async def test_an_edit_approved_on_top_of_a_refused_one_does_not_apply_to_other_text(tmp_path: Path) -> None:
    root = repo(tmp_path)
    second = {"path": "ops.py", "old_text": "def sub(a, b):", "new_text": "def subtract(a, b):"}
    result, _ = await run(root, [Call("c1", "edit_file", FIX_ADD), Call("c2", "edit_file", second)], Approver(before=lambda _: {"c1": False}))
    assert [r.error_code for r in result.tool_calls] == ["DENIED", "FILE_CHANGED"]
    assert "an earlier change of this turn it was shown on top of did not happen" in (result.tool_calls[1].error or "")
    assert (root / "ops.py").read_text() == OPS


class NoteArgs(BaseModel):
    path: str


@pytest.mark.anyio
async def test_a_preview_that_breaks_ends_the_call_unasked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    written: list[str] = []

    def broken(params: NoteArgs, context: Any) -> dict[str, Any]:
        raise RuntimeError("preview bug")

    @tool(side_effects=["writes files"], preview=broken)
    async def touch(params: NoteArgs) -> str:
        """Touch a file."""
        written.append(params.path)
        return "ok"

    model = ScriptedModel([Turn("", [Call("c1", "touch", {"path": "a"})]), Turn("Done.")])
    approver = Approver()
    events: list[BaseEvent] = []
    result = await Cogitator().run(Agent(name="t", instructions="T.", model=model, tools=[touch]), input="go", on_event=events.append, approve=approver)

    # a person is never asked about a call without the preview it should have: it ends unasked
    assert approver.asked == [] and written == []
    ends = [e for e in events if getattr(e, "type", None) == "tool-result"]
    assert ends[0].error_code == "TOOL_ERROR" and "could not be shown for approval (RuntimeError: preview bug)" in ends[0].error
    assert result.status == "completed"
    assert "the preview of touch failed" in caplog.text and "preview bug" in caplog.text


@pytest.mark.anyio
async def test_an_abort_while_a_preview_is_computed_runs_nothing(tmp_path: Path) -> None:
    import anyio

    from cogcli import AbortSignal

    started = anyio.Event()
    written: list[str] = []

    async def slow(params: NoteArgs, context: Any) -> dict[str, Any]:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    @tool(side_effects=["writes files"], preview=slow)
    async def touch(params: NoteArgs) -> str:
        """Touch a file."""
        written.append(params.path)
        return "ok"

    signal = AbortSignal()
    model = ScriptedModel([Turn("", [Call("c1", "touch", {"path": "a"})]), Turn("never")])
    approver = Approver()
    outcome: list[RunResult] = []

    async def go() -> None:
        agent = Agent(name="t", instructions="T.", model=model, tools=[touch])
        outcome.append(await Cogitator().run(agent, input="go", approve=approver, signal=signal))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await started.wait()
            signal.abort("stop")
    [result] = outcome
    assert result.status == "aborted" and [r.error_code for r in result.tool_calls] == ["ABORTED"]
    assert approver.asked == [] and written == []
