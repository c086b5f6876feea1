"""What an approval is: the person's hook and answers (:data:`Approve`, :class:`Decision`), how a call
is described to them, and what the model reads of a refusal. Which calls need one, and asking, is the
gate's :class:`~cogcli.gate.pipeline.ApprovalStep`.

A tool declares its side effects (``side_effects=("writes files",)``, ``("runs code",)``); a call of
such a tool needs approval when the run has an ``approve`` hook. The run emits one
``approval-required`` event per turn listing those calls, awaits

    decisions = await approve([Approval(tool_call_id=…, tool_name=…, arguments=…, description=…, side_effects=[…]), …])

and runs only the approved calls. Before asking, each call whose tool declares a ``preview`` is
previewed (:func:`cogcli.contract.invoke.preview_call`): the approval carries what it would do (an edit's diff), redacted
like details, and the approved call runs held to it (:mod:`cogcli.contract.preview`). ``decisions`` maps a call id to ``True`` (run it), ``False``
(refused) or a :class:`Decision` (refused with a reason the model reads); a call with no decision
is refused. A refused call ends with ``errorCode: "DENIED"`` and nothing is touched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from cogcli.wire.events import Approval
from cogcli.contract.presentation import ToolPresentation

#: what a refused call's result says when the approver gave no reason
DECLINED = "the person declined it"


@dataclass(frozen=True)
class Decision:
    """A call approved, or refused and why."""
    approved: bool
    #: why it was refused, in words the model reads (``None``: the person declined it)
    reason: str | None = None


Decisions: TypeAlias = Mapping[str, "bool | Decision"]
#: the run's hook: the turn's pending calls in, a decision per call id out. A hook whose ``final``
#: attribute is true can never approve anything (nobody to ask): the run ends after its first refusal
Approve: TypeAlias = Callable[[list[Approval]], Awaitable[Decisions]]


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
