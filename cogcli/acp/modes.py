"""ACP session modes, ``session/set_mode`` and plan updates.

Every session offers three modes:

- ``ask`` — calls that write files or run code are asked about (``session/request_permission``);
- ``accept-edits`` — calls whose only side effect is writing files in the workspace run unasked
  (anything that runs code is still asked about);
- ``plan`` — plan mode (:mod:`cogcli.gate.plan_mode`): only tools that change nothing run, refused at
  the gate (``PLAN_MODE``) whatever the editor answers; the model ends with a plan.

A switch comes from the editor (``session/set_mode``) or from the prompt (``/plan``, ``/go``:
:mod:`cogcli.acp.commands`); cog says each switch with a ``current_mode_update``. With ``cog acp
--yes`` nothing is asked in any mode, but plan mode still refuses.

When the model records its plan (``update_plan``), the editor gets a ``plan`` update with the steps;
a plan-mode turn that ends with a numbered list and no ``update_plan`` call sends that list.
"""

from __future__ import annotations

import re
from typing import Any

from acp import schema as acp_schema

from cogcli.gate.plan_mode import PlanMode

ASK, ACCEPT_EDITS, PLAN = "ask", "accept-edits", "plan"

MODES = [
    acp_schema.SessionMode(id=ASK, name="Ask", description="Ask before a call writes files or runs code"),
    acp_schema.SessionMode(id=ACCEPT_EDITS, name="Auto-approve edits", description="Edits in the workspace run unasked; commands and tests are still asked about"),
    acp_schema.SessionMode(id=PLAN, name="Plan", description="Only read and search; the agent ends with a plan. Switch back (or /go) to carry it out"),
]
MODE_IDS = frozenset(m.id for m in MODES)
#: the only side effect ``accept-edits`` lets through unasked
_EDITS = frozenset({"writes files"})
#: ``1. step`` / ``- [ ] step`` lines of a plan in the model's text
_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*])\s+(?:\[[ xX~]\]\s*)?(.+\S)\s*$")


def mode_state(current: str) -> acp_schema.SessionModeState:
    return acp_schema.SessionModeState(current_mode_id=current, available_modes=MODES)


def plan_of(mode: str, settings: Any) -> PlanMode | None:
    """The run's plan mode in ``mode`` (the tools the person's ``plan_allow`` names allowed)."""
    return PlanMode.of(settings.plan_allow) if mode == PLAN else None


def edits_only(approval: Any) -> bool:
    """A call ``accept-edits`` runs unasked: its only side effect is writing workspace files."""
    effects = set(getattr(approval, "side_effects", None) or [])
    return bool(effects) and effects <= _EDITS


def plan_update(event: Any, tool_name_of: Any = None) -> acp_schema.AgentPlanUpdate | None:
    """A ``plan`` update for a successful ``update_plan`` call's ``tool-result`` (None otherwise)."""
    if getattr(event, "type", None) != "tool-result" or getattr(event, "tool_name", None) != "update_plan" or getattr(event, "error", None):
        return None
    from cogcli.agent_tools.update_plan import plan_steps

    steps = plan_steps(getattr(event, "details", None))
    if not steps:
        return None
    return acp_schema.AgentPlanUpdate(
        session_update="plan",
        entries=[acp_schema.PlanEntry(content=s.step, status=s.status, priority="medium") for s in steps],
    )


def plan_from_text(text: str) -> acp_schema.AgentPlanUpdate | None:
    """A ``plan`` update from the numbered (or bulleted) steps a plan-mode turn ended with."""
    steps = [m.group(1) for line in text.splitlines() if (m := _STEP.match(line))][:50]
    if not steps:
        return None
    return acp_schema.AgentPlanUpdate(
        session_update="plan", entries=[acp_schema.PlanEntry(content=s[:500], status="pending", priority="medium") for s in steps]
    )


class ModesMixin:
    """``session/set_mode`` for :class:`cogcli.acp.agent.CogAgent` (its ``sessions`` and ``conn``)."""

    sessions: dict[str, Any]
    conn: Any

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> acp_schema.SetSessionModeResponse:
        from cogcli.acp.errors import INVALID_PARAMS, NOT_FOUND, _error

        opened = self.sessions.get(session_id)
        if opened is None:
            raise _error(NOT_FOUND, f"no session {session_id!r}", sessionId=session_id)
        if mode_id not in MODE_IDS:
            raise _error(INVALID_PARAMS, f"no mode {mode_id!r}; the modes are {', '.join(sorted(MODE_IDS))}", modeId=mode_id)
        await self.switch_mode(opened, mode_id, tell=False)
        return acp_schema.SetSessionModeResponse()

    async def switch_mode(self, opened: Any, mode_id: str, *, tell: bool = True) -> None:
        """Put ``opened`` in ``mode_id`` (plan mode from its next turn; approvals at once);
        ``tell``: say so to the editor (a switch it did not ask for)."""
        opened.mode = mode_id
        if opened.approver is not None:
            opened.approver.auto = edits_only if mode_id == ACCEPT_EDITS else None
        if tell:
            await self.conn.session_update(opened.id, acp_schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id))
