"""Hooks around a run's tool calls: ``PreToolUse`` at the approval gate, ``PostToolUse`` where every
call ends (:class:`cogcli.loop.conclude.Conclude`), and ``Notification`` when the run waits for the person.

PreToolUse runs for every call that can run (any tool: the workspace's, an MCP server's), after
plan mode's refusal and before the person's approval. A block ends the call ``DENIED`` with the
hooks' reason in the result the model reads; ``updatedInput`` replaces the call's arguments,
validated against the tool's parameters again (a ``tool-update`` with ``arguments`` says so) and
previewed anew by the approval that follows; ``allow`` skips the person's approval, ``ask``
asks it even for a tool without side effects (and refuses the call when the run asks nobody);
``additionalContext`` is added to what the model reads of the call's result.

PostToolUse runs once for every call's end — ran, failed, refused, aborted, cut — with the tool's
``details``, ``presentation`` and ``error_code`` beside Claude Code's ``tool_response``. A block
(exit 2 or ``"decision": "block"``) and ``additionalContext`` are told to the model with the result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from cogcli.contract.prepare import PreparedCall, prepare
from cogcli.contract.errors import ErrorCode
from cogcli.hooks.engine import RunHooks, Verdict, context_note
from cogcli.contract.result import ToolResult

if TYPE_CHECKING:
    from cogcli.loop.conclude import Slots

Concluder = Callable[["Slots", int, ToolResult], Awaitable[ToolResult]]


def tool_input(call: PreparedCall) -> Any:
    return call.arguments if isinstance(call.arguments, dict) else {"arguments": call.arguments}


async def pre_tool_use(
    hooks: RunHooks, calls: list[PreparedCall], slots: Slots, *, tools: Any, conclude: Concluder, can_ask: bool, emit: Callable[[Any], Any],
) -> None:
    """Run the turn's PreToolUse hooks (each call's at once) and apply what they said to
    ``calls`` in place: blocked calls concluded, changed ones prepared again, ``allow``/``ask``
    marked on the call for the approval that follows."""
    todo = [i for i in slots.open() if calls[i].failed is None and calls[i].tool is not None]
    todo = [i for i in todo if hooks.set.matching("PreToolUse", calls[i].name)]
    if not todo:
        return
    verdicts: dict[int, Verdict] = {}

    async def one(i: int) -> None:
        call = calls[i]
        fields = {"tool_name": call.name, "tool_input": tool_input(call), "tool_use_id": call.id}
        verdicts[i] = await hooks.fire("PreToolUse", fields, target=call.name, call_id=call.id, tool_name=call.name)

    async with anyio.create_task_group() as tg:
        for i in todo:
            tg.start_soon(one, i)
    for i in todo:
        await _apply(hooks, calls, slots, i, verdicts[i], tools=tools, conclude=conclude, can_ask=can_ask, emit=emit)


async def _apply(
    hooks: RunHooks, calls: list[PreparedCall], slots: Slots, i: int, verdict: Verdict, *, tools: Any, conclude: Concluder, can_ask: bool,
    emit: Callable[[Any], Any],
) -> None:
    call = calls[i]
    if verdict.contexts:
        hooks.pending_context.setdefault(call.id, []).extend(verdict.contexts)
    if verdict.blocked:
        why = verdict.reason or "a PreToolUse hook blocked it"
        await conclude(slots, i, call.outcome(ErrorCode.DENIED, f"{call.name} was not run: a PreToolUse hook blocked it: {why}. Nothing was changed."))
        return
    if verdict.decision == "ask" and not can_ask:
        why = verdict.reason or "a PreToolUse hook asked for your approval"
        await conclude(slots, i, call.outcome(ErrorCode.DENIED, f"{call.name} was not run: {why}, and this run asks nobody. Nothing was changed."))
        return
    if verdict.updated_input is not None and verdict.updated_input != call.arguments:
        from cogcli.wire.events import ToolUpdateEvent

        emit(ToolUpdateEvent(tool_call_id=call.id, tool_name=call.name, arguments=verdict.updated_input))
        changed = prepare(call.name, verdict.updated_input, call_id=call.id, tools=tools)
        if changed.failed is not None:
            message = f"a PreToolUse hook changed the arguments of {call.name}, and they are not valid: {changed.failed.error}"
            await conclude(slots, i, changed.outcome(ErrorCode.INVALID_ARGUMENTS, message))
            return
        call = changed
    if verdict.decision in ("allow", "ask"):
        call = replace(call, hook_decision=verdict.decision)
    calls[i] = call


def tool_response(result: ToolResult) -> dict[str, Any]:
    """Claude Code's ``tool_response``: what the call gave the model, and whether it failed."""
    response: dict[str, Any] = {"content": result.result if result.error is None else None, "is_error": result.error is not None}
    if result.error is not None:
        response["error"] = result.error
    return response


async def post_tool_use(hooks: RunHooks, result: ToolResult) -> ToolResult:
    """Run the PostToolUse hooks of ``result`` (already redacted) and return it with what the
    hooks tell the model (and any PreToolUse context waiting for it) added to its text."""
    notes = [context_note("PreToolUse", hooks.pending_context.pop(result.call_id, []))]
    if hooks.set.matching("PostToolUse", result.name):
        fields = {
            "tool_name": result.name,
            "tool_input": result.arguments if isinstance(result.arguments, dict) else {"arguments": result.arguments},
            "tool_response": tool_response(result),
            "tool_use_id": result.call_id,
            "details": result.details,
            "presentation": result.presentation,
            "error_code": result.error_code,
            "duration_ms": result.duration_ms,
        }
        verdict = await hooks.fire("PostToolUse", fields, target=result.name, call_id=result.call_id, tool_name=result.name)
        if verdict.blocked:
            notes.append(f"[PostToolUse hook] {verdict.reason or 'a hook objected to this result'}")
        notes.append(context_note("PostToolUse", verdict.contexts))
    return with_notes(result, [n for n in notes if n])


def with_notes(result: ToolResult, notes: Sequence[str]) -> ToolResult:
    """``result`` with ``notes`` after what the model reads of it (its content, or its error)."""
    if not notes:
        return result
    from cogcli.secrets.redactor import redact

    text = redact("\n\n".join(notes))[0]  # a hook's words are the model's to read: no credential in them
    if result.error is not None:
        return result.model_copy(update={"error": f"{result.error}\n\n{text}"})
    content = result.result
    if isinstance(content, str) or content is None:
        return result.model_copy(update={"result": f"{content or ''}\n\n{text}".lstrip("\n")})
    from cogcli.contract.output import content_text

    return result.model_copy(update={"result": f"{content_text(content)}\n\n{text}"})


async def notification(hooks: RunHooks, message: str, kind: str = "permission_prompt") -> None:
    """Notification hooks, when the run waits for the person (an approval); they cannot block."""
    if hooks.set.matching("Notification", kind):
        await hooks.fire("Notification", {"message": message, "notification_type": kind}, target=kind)
