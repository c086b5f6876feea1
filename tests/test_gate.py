"""The gate as one pipeline (issue 46): plan mode, PreToolUse hooks, the caller's own steps, the
allow list and the person's approval are steps with one interface, run in order, each seeing only
the calls no step before it ended. A new policy is one step passed to the run, not a branch in it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from runtime_helpers import echo, of_type

from cogcli import tool
from cogcli.contract.errors import ErrorCode
from cogcli.contract.prepare import prepare
from cogcli.contract.result import ToolResult
from cogcli.gate.pipeline import AllowListStep, ApprovalStep, Gate, GateTurn, PlanModeStep, PreToolUseStep
from cogcli.gate.plan_mode import PlanMode
from cogcli.loop.runtime import Agent, Cogitator
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.wire.events import Approval, BaseEvent


class NoteArgs(BaseModel):
    name: str
    text: str


def note_tool(folder: Path) -> Any:
    @tool(presentation=lambda p: {"label": "Write note", "detail": p.name}, side_effects=["writes files"])
    async def write_note(params: NoteArgs) -> str:
        """Write a note file."""
        (folder / params.name).write_text(params.text)
        return f"wrote {params.name}"

    return write_note


class NoMoreThan:
    """A policy of the caller's own: at most ``n`` calls of ``name`` in a run; the rest are refused
    with a reason the model reads (a budget, in the shape the next such policy will have)."""

    def __init__(self, name: str, n: int) -> None:
        self.name, self.left = name, n
        self.seen: list[list[str]] = []

    async def __call__(self, turn: GateTurn) -> None:
        self.seen.append([turn.calls[i].id for i in turn.open()])
        for i in turn.runnable():
            if turn.calls[i].name != self.name:
                continue
            if self.left <= 0:
                await turn.refuse(i, "OVER_LIMIT", f"{self.name} was not run: this run may make no more such calls")
            else:
                self.left -= 1


class Lowercase:
    """A step that changes a call: the note's text, lowercased (prepared again, so validated again)."""

    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools

    async def __call__(self, turn: GateTurn) -> None:
        for i in turn.runnable():
            call = turn.calls[i]
            if call.name == "write_note":
                turn.change(i, prepare(call.tool or call.name, {**call.arguments, "text": call.arguments["text"].lower()}, call_id=call.id, tools=self.tools))


class Trusting:
    """A step that approves: calls of ``name`` are marked as a PreToolUse hook's ``allow`` marks them."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, turn: GateTurn) -> None:
        for i in turn.runnable():
            if turn.calls[i].name == self.name:
                turn.change(i, replace(turn.calls[i], hook_decision="allow"))


class Asker:
    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.asked: list[list[str]] = []

    async def __call__(self, approvals: list[Approval]) -> dict[str, bool]:
        self.asked.append([a.tool_call_id for a in approvals])
        return {a.tool_call_id: self.answer for a in approvals}


async def run(model: ScriptedModel, tools: list[Any], **kw: Any) -> tuple[Any, list[BaseEvent]]:
    events: list[BaseEvent] = []
    agent = Agent(name="t", instructions="Test.", model=model, tools=tools, max_steps=10)
    result = await Cogitator().run(agent, input="write notes", on_event=events.append, **kw)
    return result, events


def three_notes() -> ScriptedModel:
    return ScriptedModel([
        Turn("", [Call(f"c{n}", "write_note", {"name": f"{n}.txt", "text": f"Note {n}"}) for n in (1, 2, 3)] + [Call("c4", "echo", {"text": "hi"})]),
        Turn("Done."),
    ])


@pytest.mark.anyio
async def test_a_step_of_the_callers_own_refuses_calls_the_model_reads_why_and_nothing_runs(tmp_path: Path) -> None:
    limit = NoMoreThan("write_note", 2)
    result, events = await run(three_notes(), [note_tool(tmp_path), echo], gate_steps=[limit])

    assert sorted(p.name for p in tmp_path.iterdir()) == ["1.txt", "2.txt"]  # the third was refused, unrun
    by_id = {r.call_id: r for r in result.tool_calls}
    assert (by_id["c3"].error_code, by_id["c3"].error) == ("OVER_LIMIT", "write_note was not run: this run may make no more such calls")
    assert by_id["c4"].ok and by_id["c1"].ok
    assert limit.seen == [["c1", "c2", "c3", "c4"]]
    # the refusal is an ordinary end of the call: one tool-result, in the thread, for the model
    assert [e.tool_call_id for e in of_type(events, "tool-result")].count("c3") == 1  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_each_step_sees_only_the_calls_no_step_before_it_ended(tmp_path: Path) -> None:
    """Plan mode ends every call that writes first; the caller's step then sees only the call plan
    mode lets run (echo, allowed by name), and the person is asked about nothing."""
    limit = NoMoreThan("write_note", 0)
    asker = Asker()
    result, _ = await run(three_notes(), [note_tool(tmp_path), echo], gate_steps=[limit], plan=PlanMode.of(allow=["echo"]), approve=asker)

    assert not list(tmp_path.iterdir())
    assert [r.error_code for r in result.tool_calls] == [ErrorCode.PLAN_MODE] * 3 + [None]
    assert limit.seen == [["c4"]] and asker.asked == []


@pytest.mark.anyio
async def test_a_step_can_change_a_call_and_the_person_approves_the_changed_one(tmp_path: Path) -> None:
    tools = [note_tool(tmp_path), echo]
    asker = Asker()
    model = ScriptedModel([Turn("", [Call("c1", "write_note", {"name": "a.txt", "text": "SHOUT"})]), Turn("Done.")])
    events: list[BaseEvent] = []
    agent = Agent(name="t", instructions="Test.", model=model, tools=tools, max_steps=5)
    await Cogitator().run(agent, input="x", on_event=events.append, approve=asker, gate_steps=[Lowercase(tools)])

    assert (tmp_path / "a.txt").read_text() == "shout"
    [required] = of_type(events, "approval-required")
    assert required.approvals[0].arguments == {"name": "a.txt", "text": "shout"}  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_a_step_can_approve_a_call_so_the_person_is_not_asked(tmp_path: Path) -> None:
    asker = Asker()
    result, events = await run(three_notes(), [note_tool(tmp_path), echo], gate_steps=[Trusting("write_note")], approve=asker)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["1.txt", "2.txt", "3.txt"]
    assert asker.asked == [] and not of_type(events, "approval-required")
    assert result.status == "completed"


def test_the_gate_of_a_run_is_its_steps_in_order() -> None:
    async def approve(approvals: list[Approval]) -> dict[str, bool]:
        return {}

    own = NoMoreThan("x", 1)
    full = Gate.of(tools=[], emit=lambda e: None, signal=None, thread_id="t", plan=PlanMode(), hooks=_FakeHooks(), approve=approve, extra=[own])  # type: ignore[arg-type]
    assert [type(s) for s in full.steps] == [PlanModeStep, PreToolUseStep, NoMoreThan, AllowListStep, ApprovalStep]
    # nobody to ask: no allow list or approval; no plan mode or hooks: not those either
    assert [type(s) for s in Gate.of(tools=[], emit=lambda e: None, signal=None, thread_id="t").steps] == []  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_gate_stops_when_every_call_has_ended() -> None:
    ended: dict[int, ToolResult] = {}
    calls = [prepare(echo, {"text": "a"}, call_id="c1")]
    turn = GateTurn(calls, lambda i, r: _end(ended, i, r), lambda: [i for i in range(len(calls)) if i not in ended])
    first, second = NoMoreThan("echo", 0), NoMoreThan("echo", 0)
    await Gate([first, second])(turn)
    assert ended[0].error_code == "OVER_LIMIT" and first.seen == [["c1"]] and second.seen == []


async def _end(ended: dict[int, ToolResult], i: int, result: ToolResult) -> None:
    ended[i] = result


class _FakeHooks:
    """Enough of a run's hooks for :meth:`Gate.of` to place the PreToolUse step."""

    class set:  # noqa: N801 (the attribute a RunHooks has)
        hooks: dict[str, list[Any]] = {}
