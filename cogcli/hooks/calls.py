"""Hooks around a run's tool calls: what a hook reads of a call (``tool_input``, ``tool_response``),
``PostToolUse`` where every call ends (:class:`cogcli.loop.conclude.Conclude`), and ``Notification``
when the run waits for the person (fired by the gate's approval step).

PreToolUse is a step of the gate (:class:`cogcli.gate.pipeline.PreToolUseStep`): it runs for every
call that can run (any tool: the workspace's, an MCP server's), after plan mode's refusal and
before the person's approval; its ``additionalContext`` waits in ``RunHooks.pending_context`` and
is added here to what the model reads of the call's result.

PostToolUse runs once for every call's end — ran, failed, refused, aborted, cut — with the tool's
``details``, ``presentation`` and ``error_code`` beside Claude Code's ``tool_response``. A block
(exit 2 or ``"decision": "block"``) and ``additionalContext`` are told to the model with the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cogcli.hooks.engine import RunHooks, context_note
from cogcli.contract.result import ToolResult



def tool_input(arguments: Any) -> Any:
    """Claude Code's ``tool_input``: a call's arguments as an object (arguments that are not one, as the model sent them, under ``arguments``)."""
    return arguments if isinstance(arguments, dict) else {"arguments": arguments}


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
            "tool_input": tool_input(result.arguments),
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
