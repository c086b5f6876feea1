"""Approvals in the run loop: calls of tools with side effects wait for ``approve``; a refused call
ends DENIED without running, the model reads why, and a run that ends on a refusal is ``denied``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from runtime_helpers import call_events, echo, of_type
from cogcli.models.scripted import Call, ScriptedModel, Turn, all_request_text

from cogcli import AbortSignal, tool
from cogcli.gate.approval import Decision
from cogcli.contract.errors import ErrorCode
from cogcli.wire.events import Approval, BaseEvent
from cogcli.threads.store import ToolResultEntry
from cogcli.loop.runtime import Agent, Cogitator, RunResult


class NoteArgs(BaseModel):
    name: str
    text: str


def note_tool(folder: Path) -> Any:
    @tool(presentation=lambda p: {"label": "Write note", "icon": "file-plus", "detail": p.name}, side_effects=["writes files"])
    async def write_note(params: NoteArgs) -> str:
        """Write a note file."""
        (folder / params.name).write_text(params.text)
        return f"wrote {params.name}"

    return write_note


class Approver:
    """Answers from a table (call id → answer) and records what it was asked."""

    def __init__(self, answers: dict[str, Any] | None = None, default: Any = True) -> None:
        self.answers = answers or {}
        self.default = default
        self.asked: list[list[Approval]] = []

    async def __call__(self, approvals: list[Approval]) -> dict[str, Any]:
        self.asked.append(approvals)
        return {a.tool_call_id: self.answers.get(a.tool_call_id, self.default) for a in approvals}


async def run(model: ScriptedModel, tools: list[Any], **kw: Any) -> tuple[RunResult, list[BaseEvent], Cogitator]:
    cog = Cogitator()
    events: list[BaseEvent] = []
    agent = Agent(name="t", instructions="Test.", model=model, tools=tools, max_steps=kw.pop("max_steps", 30))
    result = await cog.run(agent, input="write the note", on_event=events.append, **kw)
    return result, events, cog


@pytest.mark.anyio
async def test_a_refused_call_never_runs_the_model_reads_why_and_the_run_ends_denied(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Turn("Writing.", [Call("c1", "write_note", {"name": "a.txt", "text": "hello"}), Call("c2", "echo", {"text": "hi"})]),
            Turn("I was not allowed to write the note."),
        ]
    )
    approver = Approver({"c1": False})
    result, events, cog = await run(model, [note_tool(tmp_path), echo], approve=approver)

    assert not (tmp_path / "a.txt").exists()
    # one approval-required for the turn, listing only the call with side effects
    [required] = of_type(events, "approval-required")
    assert required.thread_id == result.thread_id
    assert [a.to_wire() for a in required.approvals] == [
        {
            "toolCallId": "c1",
            "toolName": "write_note",
            "arguments": {"name": "a.txt", "text": "hello"},
            "description": "Write note · a.txt",
            "sideEffects": ["writes files"],
        }
    ]
    assert approver.asked == [required.approvals]
    # it comes after the calls' arguments are known and before any result
    kinds = [e.type for e in events]  # type: ignore[attr-defined]
    assert kinds.index("approval-required") > max(i for i, k in enumerate(kinds) if k == "tool-call-end")
    assert kinds.index("approval-required") < kinds.index("tool-result")
    assert call_events(events, "c1") == ["tool-call-start", "tool-call-delta", "tool-call-delta", "tool-call-delta", "tool-call-delta", "tool-call-delta", "tool-call-end", "tool-result"]

    denied, echoed = result.tool_calls
    assert (denied.error_code, denied.presentation.detail if denied.presentation else None) == (ErrorCode.DENIED, "a.txt")
    assert "write_note was not run: the person declined it. Nothing was changed." in (denied.error or "")
    assert echoed.ok and echoed.result == "hi"  # a read-only call of the same turn still ran
    # the model read the refusal in its next request
    assert "write_note was not run: the person declined it" in all_request_text(model)

    assert result.status == "denied"
    assert of_type(events, "finish")[0].status == "denied"
    stored = [e.entry for e in cog.store.entries(result.thread_id) if isinstance(e.entry, ToolResultEntry)]
    assert stored[0].metadata.error_code == ErrorCode.DENIED


@pytest.mark.anyio
async def test_an_approved_call_runs_and_a_later_approval_closes_an_earlier_refusal(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Turn("", [Call("c1", "write_note", {"name": "a.txt", "text": "one"})]),
            Turn("", [Call("c2", "write_note", {"name": "b.txt", "text": "two"})]),
            Turn("Wrote b.txt instead."),
        ]
    )
    approver = Approver({"c1": Decision(False, "not that file, use b.txt")})
    result, events, _ = await run(model, [note_tool(tmp_path)], approve=approver)

    assert not (tmp_path / "a.txt").exists()
    assert (tmp_path / "b.txt").read_text() == "two"
    assert "write_note was not run: not that file, use b.txt." in all_request_text(model)
    assert [[a.tool_call_id for a in asked] for asked in approver.asked] == [["c1"], ["c2"]]
    assert result.status == "completed"


@pytest.mark.anyio
async def test_no_answer_and_a_failing_approver_both_refuse(tmp_path: Path) -> None:
    async def broken(approvals: list[Approval]) -> dict[str, Any]:
        raise RuntimeError("the prompt crashed")

    model = ScriptedModel([Turn("", [Call("c1", "write_note", {"name": "a.txt", "text": "x"})]), Turn("ok")])
    result, _, _ = await run(model, [note_tool(tmp_path)], approve=broken)
    assert result.tool_calls[0].error_code == ErrorCode.DENIED
    assert "asking for approval failed (RuntimeError: the prompt crashed)" in (result.tool_calls[0].error or "")

    model = ScriptedModel([Turn("", [Call("c1", "write_note", {"name": "a.txt", "text": "x"})]), Turn("ok")])
    result, _, _ = await run(model, [note_tool(tmp_path)], approve=Approver({}, default=None))
    assert "no answer came for it" in (result.tool_calls[0].error or "")
    assert not (tmp_path / "a.txt").exists()
    assert result.status == "denied"


@pytest.mark.anyio
async def test_the_step_limit_reached_after_a_refusal_is_denied(tmp_path: Path) -> None:
    model = ScriptedModel([Turn("", [Call(f"c{i}", "write_note", {"name": "a.txt", "text": "x"})]) for i in range(3)])
    result, _, _ = await run(model, [note_tool(tmp_path)], approve=Approver(default=False), max_steps=2)
    assert (result.status, result.steps) == ("denied", 2)


@pytest.mark.anyio
async def test_calls_without_side_effects_or_with_bad_arguments_are_not_asked_about(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Turn("", [Call("c1", "echo", {"text": "hi"}), Call("c2", "write_note", {"name": "a.txt"}), Call("c3", "nope", {})]), Turn("done")]
    )
    approver = Approver(default=False)
    result, events, _ = await run(model, [note_tool(tmp_path), echo], approve=approver)

    assert approver.asked == [] and of_type(events, "approval-required") == []
    assert [r.error_code for r in result.tool_calls] == [None, ErrorCode.INVALID_ARGUMENTS, ErrorCode.TOOL_NOT_FOUND]
    assert result.status == "completed"


@pytest.mark.anyio
async def test_without_approve_every_call_runs_and_nothing_is_asked(tmp_path: Path) -> None:
    model = ScriptedModel([Turn("", [Call("c1", "write_note", {"name": "a.txt", "text": "x"})]), Turn("done")])
    result, events, _ = await run(model, [note_tool(tmp_path)])
    assert (tmp_path / "a.txt").read_text() == "x"
    assert of_type(events, "approval-required") == [] and result.status == "completed"


@pytest.mark.anyio
async def test_an_abort_while_approval_is_pending_runs_nothing_and_ends_aborted(tmp_path: Path) -> None:
    signal = AbortSignal()
    waiting = anyio.Event()

    async def never_answers(approvals: list[Approval]) -> dict[str, Any]:
        waiting.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    model = ScriptedModel([Turn("", [Call("c1", "write_note", {"name": "a.txt", "text": "x"})]), Turn("never")])
    outcome: list[RunResult] = []

    async def go() -> None:
        result, _, _ = await run(model, [note_tool(tmp_path)], approve=never_answers, signal=signal)
        outcome.append(result)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await waiting.wait()
            signal.abort("stop")
    [result] = outcome
    assert result.status == "aborted"
    assert [r.error_code for r in result.tool_calls] == [ErrorCode.ABORTED]
    assert not (tmp_path / "a.txt").exists()
    assert len(model.requests) == 1
