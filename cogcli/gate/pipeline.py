"""The gate: every call of a turn passes it before it runs, as one ordered list of steps.

    gate = Gate.of(plan=…, hooks=…, approve=…, …)          # once per run
    await gate(GateTurn(calls, end=…, open=…))             # once per turn, before any call runs

A step is anything with ``async step(turn)``. It sees the turn's prepared calls that are still open,
in call order, and may for each one

- **refuse** it (:meth:`GateTurn.refuse`): the call ends with that error, unrun; no later step sees it;
- **change** it (:meth:`GateTurn.change`): the call prepared again, e.g. with a hook's arguments;
- **approve** it: mark it so the person is not asked (``hook_decision="allow"``, ``allowed_by``), or
  carry what the person approved (``preview``).

The steps a run uses, in order (:meth:`Gate.of`):

1. :class:`PlanModeStep` — in plan mode, a call of a tool that does not declare ``read_only`` ends
   ``PLAN_MODE`` (:mod:`cogcli.gate.plan_mode`); no hook or person sees it.
2. :class:`PreToolUseStep` — the PreToolUse hooks (:mod:`cogcli.hooks`): block (``DENIED``), change
   the arguments (validated again), ``allow`` (the person is not asked) or ``ask``.
3. the caller's own steps, if any (``Cogitator.run(gate_steps=…)``).
4. :class:`AllowListStep` — a call the person's allow list covers (its tool's ``allowed``) runs unasked.
5. :class:`ApprovalStep` — the calls that still need approval (:func:`needs_approval`)
   are previewed in call order and listed in one ``approval-required``; a call whose preview shows it
   cannot work ends unasked; a refused call ends ``DENIED``; an approved one carries its preview.

Steps 4 and 5 are there only when the run has someone to ask (an ``approve`` hook).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from cogcli.contract.context import AbortSignal, cancel_on_abort
from cogcli.contract.errors import ErrorCode
from cogcli.contract.prepare import PreparedCall, Tools, prepare
from cogcli.contract.preview import Preview
from cogcli.contract.result import ToolResult
from cogcli.contract.invoke import preview_call
from cogcli.gate.approval import Approve, Decision, Decisions, decision_of, denied_message, describe, summarize
from cogcli.gate.plan_mode import PlanMode
from cogcli.wire.events import Approval, ApprovalRequiredEvent, BaseEvent, ToolUpdateEvent

if TYPE_CHECKING:
    from cogcli.hooks.engine import RunHooks, Verdict

log = logging.getLogger("cogcli")

Emit = Callable[[BaseEvent], Any]


def needs_approval(call: PreparedCall) -> bool:
    """Its tool has side effects and the call can run (an unknown tool or invalid arguments end
    with that error, nothing runs), unless a PreToolUse hook allowed it; or a hook asked for it."""
    if call.tool is None or call.failed is not None or call.hook_decision == "allow":  # allowed by a PreToolUse hook
        return False
    return bool(call.tool.side_effects) or call.hook_decision == "ask"


def approval_for(call: PreparedCall, preview: Preview | None = None) -> Approval | None:
    """The approval a prepared call needs (see :func:`needs_approval`), or None. ``preview``: what
    :func:`~cogcli.contract.invoke.preview_call` made of it; what it shows and the arguments are redacted here, like any
    details, so no credential in a file's lines around an edit or in what the model wrote reaches
    an ``approval-required`` entry, an approver or an editor's ``raw_input``."""
    tool = call.tool
    if tool is None or not needs_approval(call):
        return None
    from cogcli.secrets.redactor import redact_value

    shown = None
    if preview is not None and preview.shown is not None:
        shown = redact_value(preview.shown)[0]
    return Approval(
        tool_call_id=call.id,
        tool_name=tool.name,
        arguments=redact_value(dict(call.arguments))[0],  # what is shown; the call runs with its own
        description=describe(tool.name, call.presentation),
        side_effects=list(tool.side_effects),
        preview=shown,
    )


@dataclass
class GateTurn:
    """One turn's prepared calls as the gate's steps see them. ``end`` concludes call ``i`` with a
    result (the run's conclude step: redacted, sent, kept); ``open`` names the calls not ended yet."""

    calls: list[PreparedCall]
    end_call: Callable[[int, ToolResult], Awaitable[Any]]
    open_calls: Callable[[], list[int]]
    #: whether the person refused a call when asked (None: nobody was asked, or the run was aborted meanwhile)
    refused: bool | None = None

    def open(self) -> list[int]:
        """The calls no step has ended, in call order."""
        return self.open_calls()

    def runnable(self) -> list[int]:
        """The open calls that can run at all: a known tool and valid arguments (the others end
        with that error where the calls run, unasked)."""
        return [i for i in self.open() if self.calls[i].failed is None and self.calls[i].tool is not None]

    async def end(self, i: int, result: ToolResult) -> None:
        await self.end_call(i, result)

    async def refuse(self, i: int, code: str, message: str) -> None:
        """Call ``i`` ends with ``code`` and ``message`` (what the model reads), unrun."""
        await self.end(i, self.calls[i].outcome(code, message))

    def change(self, i: int, call: PreparedCall) -> None:
        self.calls[i] = call


class GateStep(Protocol):
    """One step of the gate: may refuse, change or approve each open call of ``turn``."""

    async def __call__(self, turn: GateTurn) -> None: ...


class Gate:
    """The steps a run's calls pass, in order; a turn whose calls have all ended stops early."""

    def __init__(self, steps: Sequence[GateStep] = ()) -> None:
        self.steps = tuple(steps)

    @classmethod
    def of(
        cls,
        *,
        tools: Tools,
        emit: Emit,
        signal: AbortSignal,
        thread_id: str,
        plan: PlanMode | None = None,
        hooks: RunHooks | None = None,
        approve: Approve | None = None,
        extra: Sequence[GateStep] = (),
    ) -> Gate:
        """The gate of a run: plan mode, PreToolUse hooks, ``extra``, then the allow list and the
        person's approval when the run asks someone (``approve``)."""
        steps: list[GateStep] = []
        if plan is not None:
            steps.append(PlanModeStep(plan))
        if hooks is not None:
            steps.append(PreToolUseStep(hooks, tools=tools, can_ask=approve is not None, emit=emit))
        steps += extra
        if approve is not None:
            steps.append(AllowListStep())
            steps.append(ApprovalStep(approve, thread_id=thread_id, emit=emit, signal=signal, hooks=hooks))
        return cls(steps)

    async def __call__(self, turn: GateTurn) -> None:
        for step in self.steps:
            if not turn.open():
                return
            await step(turn)


@dataclass(frozen=True)
class PlanModeStep:
    """Plan mode: a call of a tool it does not permit ends ``PLAN_MODE``, unrun and unasked."""

    plan: PlanMode

    async def __call__(self, turn: GateTurn) -> None:
        for i in turn.open():
            call = turn.calls[i]
            if call.failed is None and not self.plan.permits(call.tool):
                await turn.refuse(i, ErrorCode.PLAN_MODE, self.plan.refusal(call.name))


class PreToolUseStep:
    """The PreToolUse hooks of every call that can run (each call's at once), then what they said,
    in call order: a block ends the call ``DENIED`` with the hooks' reason; ``updatedInput``
    prepares the call again (a ``tool-update`` with ``arguments`` says so; invalid arguments end it
    ``INVALID_ARGUMENTS``); ``allow``/``ask`` are marked on the call for the approval that follows
    (``ask`` with nobody to ask refuses it); ``additionalContext`` waits for the call's result."""

    def __init__(self, hooks: RunHooks, *, tools: Tools, can_ask: bool, emit: Emit) -> None:
        self.hooks, self.tools, self.can_ask, self.emit = hooks, tools, can_ask, emit

    async def __call__(self, turn: GateTurn) -> None:
        from cogcli.hooks.calls import tool_input

        todo = [i for i in turn.runnable() if self.hooks.set.matching("PreToolUse", turn.calls[i].name)]
        if not todo:
            return
        verdicts: dict[int, Verdict] = {}

        async def one(i: int) -> None:
            call = turn.calls[i]
            fields = {"tool_name": call.name, "tool_input": tool_input(call.arguments), "tool_use_id": call.id}
            verdicts[i] = await self.hooks.fire("PreToolUse", fields, target=call.name, call_id=call.id, tool_name=call.name)

        async with anyio.create_task_group() as tg:
            for i in todo:
                tg.start_soon(one, i)
        for i in todo:
            await self._apply(turn, i, verdicts[i])

    async def _apply(self, turn: GateTurn, i: int, verdict: Verdict) -> None:
        call = turn.calls[i]
        if verdict.contexts:
            self.hooks.pending_context.setdefault(call.id, []).extend(verdict.contexts)
        if verdict.blocked:
            why = verdict.reason or "a PreToolUse hook blocked it"
            await turn.refuse(i, ErrorCode.DENIED, f"{call.name} was not run: a PreToolUse hook blocked it: {why}. Nothing was changed.")
            return
        if verdict.decision == "ask" and not self.can_ask:
            why = verdict.reason or "a PreToolUse hook asked for your approval"
            await turn.refuse(i, ErrorCode.DENIED, f"{call.name} was not run: {why}, and this run asks nobody. Nothing was changed.")
            return
        if verdict.updated_input is not None and verdict.updated_input != call.arguments:
            self.emit(ToolUpdateEvent(tool_call_id=call.id, tool_name=call.name, arguments=verdict.updated_input))
            changed = prepare(call.name, verdict.updated_input, call_id=call.id, tools=self.tools)
            if changed.failed is not None:
                message = f"a PreToolUse hook changed the arguments of {call.name}, and they are not valid: {changed.failed.error}"
                await turn.end(i, changed.outcome(ErrorCode.INVALID_ARGUMENTS, message))
                return
            call = changed
        if verdict.decision in ("allow", "ask"):
            call = replace(call, hook_decision=verdict.decision)
        turn.change(i, call)


class AllowListStep:
    """A call that needs approval and that the person's allow list covers (its tool's ``allowed``:
    ``run_command`` and the person's ``allow`` patterns) is marked to run unasked; it is still
    previewed by the approval that follows, and ends unasked if its preview shows it cannot work."""

    async def __call__(self, turn: GateTurn) -> None:
        for i in turn.runnable():
            call = turn.calls[i]
            tool = call.tool
            if tool is None or tool.allowed is None or call.params is None or not needs_approval(call):
                continue
            if call.hook_decision == "ask":  # a PreToolUse hook wants the person asked: the allow list does not skip that
                continue
            if (rule := tool.allowed(call.params)) is not None:
                turn.change(i, replace(call, allowed_by=rule))


class ApprovalStep:
    """The person's approval: the calls that need it are previewed (in call order, each on top of
    the one before it on the same path) and listed in one ``approval-required`` event; the
    person's answer (``approve``) decides each. A call whose preview shows it cannot work ends
    with that error, unasked; a refused call ends ``DENIED``; an approved call (or one the allow
    list covers) runs holding its preview (``context.approved``: the tool then checks the
    workspace is still what the person saw). Notification hooks run while the person is asked."""

    def __init__(self, approve: Approve, *, thread_id: str, emit: Emit, signal: AbortSignal, hooks: RunHooks | None = None) -> None:
        self.approve, self.thread_id, self.emit, self.signal = approve, thread_id, emit, signal
        self.hooks = hooks if hooks is not None and hooks.set.hooks.get("Notification") else None

    async def __call__(self, turn: GateTurn) -> None:
        needed = [i for i in turn.open() if needs_approval(turn.calls[i])]  # a call a hook allowed is not asked about
        if not needed:
            return
        previews = await self._previews(turn.calls, needed)
        if self.signal.aborted:  # each call then ends ABORTED, unrun
            return
        pending: list[tuple[int, Approval, Preview | None]] = []
        for i in needed:
            found = previews.get(i)
            if isinstance(found, ToolResult):  # it cannot work as it is: nobody is asked about it
                await turn.end(i, found)
                continue
            call = turn.calls[i]
            approval = approval_for(call, found)
            if approval is None:
                continue
            if call.allowed_by is not None:  # the person's allow list: runs unasked, held to its preview
                turn.change(i, replace(call, preview=found) if found is not None else call)
            else:
                pending.append((i, approval, found))
        if not pending:
            return
        approvals = [approval for _, approval, _ in pending]
        self.emit(ApprovalRequiredEvent(thread_id=self.thread_id, approvals=approvals))
        decisions = await self._decisions(approvals)
        if decisions is None:  # aborted while waiting: each call then ends ABORTED, unrun
            return
        refused = False
        for i, approval, preview in pending:
            decision = decision_of(decisions, approval.tool_call_id)
            if not decision.approved:
                refused = True
                await turn.refuse(i, ErrorCode.DENIED, denied_message(approval.tool_name, decision))
            elif preview is not None:
                turn.change(i, replace(turn.calls[i], preview=preview))
        turn.refused = refused

    async def _previews(self, calls: Sequence[PreparedCall], indexes: list[int]) -> dict[int, Preview | ToolResult | None]:
        """Each call's preview, in call order: a call on the same path as an earlier one is
        previewed on top of that one's (``context.planned``), since it runs after it."""
        out: dict[int, Preview | ToolResult | None] = {}
        planned: dict[str, Preview] = {}
        for i in indexes:
            if self.signal.aborted:
                break
            key = calls[i].order_key()
            found = out[i] = await preview_call(calls[i], planned=planned.get(key) if key else None, signal=self.signal)
            if key is None:
                continue
            if isinstance(found, Preview):
                planned[key] = found
            else:  # it will not run (or shows nothing): the next call on the path starts from the file as it is
                planned.pop(key, None)
        return out

    async def _decisions(self, approvals: list[Approval]) -> Decisions | None:
        """The person's answer, or None when the run was aborted while it was pending. An
        approver that raises refuses every call it was asked about."""
        decisions: Decisions | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_on_abort, self.signal, tg.cancel_scope)
            try:
                decisions = await self._ask([a.model_copy(deep=True) for a in approvals])
            except Exception as exc:
                log.error("approve failed; the calls it was asked about are refused", exc_info=True)
                why = f"asking for approval failed ({type(exc).__name__}: {exc})"
                decisions = {a.tool_call_id: Decision(False, why) for a in approvals}
            tg.cancel_scope.cancel()
        return None if self.signal.aborted else decisions

    async def _ask(self, approvals: list[Approval]) -> Decisions:
        """``approve``'s answer; the Notification hooks run meanwhile (they cannot block)."""
        if self.hooks is None:
            return await self.approve(approvals)
        from cogcli.hooks.calls import notification

        answer: Decisions = {}

        async def ask() -> None:
            nonlocal answer
            answer = await self.approve(approvals)

        async with anyio.create_task_group() as tg:
            tg.start_soon(notification, self.hooks, f"cog needs your approval: {summarize(approvals)}")
            tg.start_soon(ask)
        return answer
