"""Approvals before side effects: which calls need one, how they are described, what a refusal says.

A tool declares its side effects (``side_effects=("writes files",)``, ``("runs code",)``); a call of
such a tool needs approval when the run has an ``approve`` hook. The run emits one
``approval-required`` event per turn listing those calls, awaits

    decisions = await approve([Approval(tool_call_id=…, tool_name=…, arguments=…, description=…, side_effects=[…]), …])

and runs only the approved calls. Before asking, each call whose tool declares a ``preview`` is
previewed (:func:`preview_call`): the approval carries what it would do (an edit's diff), redacted
like details, and the approved call runs held to it (:mod:`cogcli.contract.preview`). ``decisions`` maps a call id to ``True`` (run it), ``False``
(refused) or a :class:`Decision` (refused with a reason the model reads); a call with no decision
is refused. A refused call ends with ``errorCode: "DENIED"`` and nothing is touched.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from cogcli.contract.prepare import PreparedCall
from cogcli.contract.errors import CogError, ErrorCode
from cogcli.wire.events import Approval
from cogcli.contract.presentation import ToolPresentation
from cogcli.contract.preview import Preview, as_preview
from cogcli.contract.result import ToolResult
from cogcli.contract.tool import _positional_arity

log = logging.getLogger("cogcli")

#: what a refused call's result says when the approver gave no reason
DECLINED = "the person declined it"


@dataclass(frozen=True)
class Decision:
    approved: bool
    #: why it was refused, in words the model reads (``None``: the person declined it)
    reason: str | None = None


Decisions: TypeAlias = Mapping[str, "bool | Decision"]
#: the run's hook: the turn's pending calls in, a decision per call id out. A hook whose ``final``
#: attribute is true can never approve anything (nobody to ask): the run ends after its first refusal
Approve: TypeAlias = Callable[[list[Approval]], Awaitable[Decisions]]


#: how long a tool's preview may take before the call ends unasked (never asked about without it)
PREVIEW_TIMEOUT_S = 30.0


def needs_approval(call: PreparedCall) -> bool:
    """Its tool has side effects and the call can run (an unknown tool or invalid arguments end
    with that error, nothing runs), unless a PreToolUse hook allowed it; or a hook asked for it."""
    if call.tool is None or call.failed is not None or call.hook_decision == "allow":  # allowed by a PreToolUse hook
        return False
    return bool(call.tool.side_effects) or call.hook_decision == "ask"


def approval_for(call: PreparedCall, preview: Preview | None = None) -> Approval | None:
    """The approval a prepared call needs (see :func:`needs_approval`), or None. ``preview``: what
    :func:`preview_call` made of it; what it shows and the arguments are redacted here, like any
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


async def preview_call(call: PreparedCall, *, planned: Preview | None = None, signal: Any = None) -> Preview | ToolResult | None:
    """What ``call`` would do, from its tool's ``preview`` (None: the tool has none, and it is shown
    by its arguments), or the result the call already is — it then ends with that error and nobody
    is asked — when the preview shows it cannot work (a :class:`CogError`: ``old_text`` not
    found), when the preview failed or took longer than :data:`PREVIEW_TIMEOUT_S` (a person is
    never asked without the preview a call should have), or, with no preview, when its arguments
    are too long to show whole (:func:`cogcli.shown.approval.arguments_too_long`). ``planned``: the preview of the call before it in the
    turn on the same path (``context.planned``)."""
    tool = call.tool
    if tool is None or call.params is None:
        return None
    if tool.preview is None:  # shown by its arguments, all of them, or not asked about at all
        from cogcli.shown.approval import arguments_too_long

        why = arguments_too_long(call.arguments)
        return None if why is None else call.outcome(ErrorCode.INVALID_ARGUMENTS, f"{call.name} was not run: {why}.")
    import anyio

    from cogcli.contract.context import ToolContext, cancel_on_abort
    from cogcli.contract.invoke import call_function

    context = ToolContext(call.id, call.name, signal=signal, planned=planned)
    args = (call.params, context)[: min(_positional_arity(tool.preview), 2)]
    preview = tool.preview

    try:
        value: Any = None
        error: Exception | None = None
        with anyio.fail_after(PREVIEW_TIMEOUT_S):
            async with anyio.create_task_group() as tg:  # an abort stops the wait (the run then ends each call ABORTED)
                if signal is not None:
                    tg.start_soon(cancel_on_abort, signal, tg.cancel_scope)
                try:
                    value = await call_function(preview, args, inspect.iscoroutinefunction(preview))
                except Exception as exc:  # raised below, outside the task group (which would wrap it)
                    error = exc
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        return as_preview(value)
    except CogError as exc:
        return call.outcome(exc.code, exc.message)
    except Exception as exc:  # a person is never asked about a call without the preview it should have
        from cogcli.secrets.redactor import redacted_traceback

        trace = redacted_traceback(exc)
        log.warning("the preview of %s failed; the call ends unasked\n%s", call.name, trace)
        why = "it took too long" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        return call.outcome(
            ErrorCode.TOOL_ERROR,
            f"{call.name} was not run: what it would do could not be shown for approval ({why}), and cog never asks "
            "about a call without showing it. Nothing was changed",
        )
    finally:
        context.close()


def describe(tool_name: str, presentation: ToolPresentation | None) -> str:
    """``Edit file · calc/ops.py``: the call's presentation label and detail (else the tool's name)."""
    if presentation is None:
        return tool_name
    return " · ".join(part for part in (presentation.label, presentation.detail) if part)


def decision_of(decisions: Decisions, call_id: str) -> Decision:
    found = decisions.get(call_id)
    if isinstance(found, Decision):
        return found
    if found is None:
        return Decision(False, "no answer came for it")
    return Decision(bool(found))


def denied_message(tool_name: str, decision: Decision) -> str:
    """What the model reads of a refused call."""
    return (
        f"{tool_name} was not run: {decision.reason or DECLINED}. Nothing was changed. "
        "Do not repeat the same call; go on without it, or finish and say what you would have done."
    )


def summarize(approvals: Sequence[Approval]) -> str:
    """``Edit file · a.py (writes files), Run tests · all (runs code)``, for messages to people."""
    from cogcli.shown.visible import visible

    return ", ".join(f"{visible(a.description, one_line=True)} ({', '.join(a.side_effects or [])})" for a in approvals)
