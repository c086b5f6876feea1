"""Running one turn's prepared calls: approval first (when the run asks for it), then concurrently,
calls on one path in call order. Each call ends through the run's :class:`~cogcli.loop.conclude.Conclude`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import anyio

from cogcli.contract.allow_list import allowed_call
from cogcli.gate.approval import Approve, Decision, Decisions, approval_for, decision_of, denied_message, needs_approval, preview_call
from cogcli.contract.prepare import PreparedCall
from cogcli.loop.conclude import Conclude, Slots
from cogcli.contract.context import AbortSignal, UpdateCallback, cancel_on_abort
from cogcli.contract.errors import ErrorCode
from cogcli.wire.events import Approval, ApprovalRequiredEvent, BaseEvent
from cogcli.contract.invoke import run_prepared
from cogcli.contract.preview import Preview
from cogcli.contract.result import ToolResult

log = logging.getLogger("cogcli")


async def ask_approval(
    calls: list[PreparedCall],
    slots: Slots,
    *,
    approve: Approve,
    thread_id: str,
    emit: Callable[[BaseEvent], Any],
    conclude: Conclude,
    signal: AbortSignal,
) -> bool | None:
    """The turn's calls with side effects are previewed (in call order, each on top of the one
    before it on the same path) and listed in one ``approval-required`` event. A call whose
    preview shows it cannot work ends with that error here, unasked; each refused call is
    concluded ``DENIED``, so it never runs; each approved call with a preview is replaced in
    ``calls`` by the call carrying it (what :func:`run_calls` runs: the tool then checks the
    workspace is still what the person saw). Returns whether a call was refused (None: nothing
    was asked, or the run was aborted while waiting)."""
    needed = [i for i in slots.open() if needs_approval(calls[i])]  # a call plan mode or a hook ended is not asked about
    if not needed:
        return None
    previews = await _previews(calls, needed, signal)
    if signal.aborted:  # each call then ends ABORTED, unrun
        return None
    pending: list[tuple[int, Approval, Preview | None]] = []
    for i in needed:
        found = previews.get(i)
        if isinstance(found, ToolResult):  # it cannot work as it is: nobody is asked about it
            await conclude(slots, i, found)
            continue
        approval = approval_for(calls[i], found)
        if approval is not None and allowed_call(calls[i]) is not None:  # the person's allow list: runs unasked
            calls[i] = replace(calls[i], preview=found) if found is not None else calls[i]
        elif approval is not None:
            pending.append((i, approval, found))
    if not pending:
        return None
    approvals = [approval for _, approval, _ in pending]
    emit(ApprovalRequiredEvent(thread_id=thread_id, approvals=approvals))
    decisions = await _decisions(approve, approvals, signal)
    if decisions is None:  # aborted while waiting: each call then ends ABORTED, unrun
        return None
    refused = False
    for i, approval, preview in pending:
        decision = decision_of(decisions, approval.tool_call_id)
        if not decision.approved:
            refused = True
            await conclude(slots, i, calls[i].outcome(ErrorCode.DENIED, denied_message(approval.tool_name, decision)))
        elif preview is not None:
            calls[i] = replace(calls[i], preview=preview)
    return refused


async def _previews(calls: Sequence[PreparedCall], indexes: list[int], signal: AbortSignal) -> dict[int, Preview | ToolResult | None]:
    """Each call's preview, in call order: a call on the same path as an earlier one is previewed
    on top of that one's (``context.planned``), since it runs after it."""
    out: dict[int, Preview | ToolResult | None] = {}
    planned: dict[str, Preview] = {}
    for i in indexes:
        if signal.aborted:
            break
        key = calls[i].order_key()
        found = out[i] = await preview_call(calls[i], planned=planned.get(key) if key else None, signal=signal)
        if key is None:
            continue
        if isinstance(found, Preview):
            planned[key] = found
        else:  # it will not run (or shows nothing): the next call on the path starts from the file as it is
            planned.pop(key, None)
    return out


async def _decisions(approve: Approve, approvals: list[Any], signal: AbortSignal) -> Decisions | None:
    """``approve``'s answer, or None when the run was aborted while it was pending. An
    approver that raises refuses every call it was asked about."""
    decisions: Decisions | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_on_abort, signal, tg.cancel_scope)
        try:
            decisions = await approve([a.model_copy(deep=True) for a in approvals])
        except Exception as exc:
            log.error("approve failed; the calls it was asked about are refused", exc_info=True)
            why = f"asking for approval failed ({type(exc).__name__}: {exc})"
            decisions = {a.tool_call_id: Decision(False, why) for a in approvals}
        tg.cancel_scope.cancel()
    return None if signal.aborted else decisions


async def run_calls(
    calls: Sequence[PreparedCall],
    slots: Slots,
    *,
    conclude: Conclude,
    on_update: UpdateCallback,
    signal: AbortSignal,
) -> None:
    """Run the calls not yet concluded, concurrently; each is concluded as it ends. Calls with the
    same :meth:`~PreparedCall.order_key` run one after another in call order: the second sees what
    the first did (two edits of one file in one turn)."""
    todo = slots.open()
    done = {i: anyio.Event() for i in todo}
    after: dict[int, anyio.Event] = {}
    last: dict[str, int] = {}
    for i in todo:
        key = calls[i].order_key()
        if key is not None:
            if key in last:
                after[i] = done[last[key]]
            last[key] = i

    async def run_one(i: int) -> None:
        try:
            if i in after:
                await after[i].wait()
            await conclude(slots, i, await run_prepared(calls[i], on_update=on_update, signal=signal))
        finally:
            done[i].set()

    async with anyio.create_task_group() as tg:
        for i in todo:
            tg.start_soon(run_one, i)
