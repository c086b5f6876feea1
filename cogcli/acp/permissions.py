"""Approvals over ACP: a call that needs one (a tool with ``side_effects``) is asked about with
``session/request_permission``, one call at a time, with three options — allow once, allow always
(this tool, for the rest of this session) and reject. The request carries the call's title, kind
and locations and, where the tool gives one (:attr:`cogcli.wire.events.Approval.preview`), the diff it
would make or the command it would run.

A refused call ends ``DENIED`` without running and the model is told (:mod:`cogcli.gate.approval`). The
editor answers ``cancelled`` when the person cancels the turn; that, an answer that never comes
before the run is aborted, or a connection that broke refuses the call too.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp import schema as acp_schema

from cogcli.acp.mapping import EventMapper, kind_of, preview_content, title_of
from cogcli.gate.approval import Decision, Decisions
from cogcli.contract.context import AbortSignal
from cogcli.wire.events import Approval
from cogcli.contract.presentation import ToolPresentation
from cogcli.shown.visible import visible

log = logging.getLogger("cogcli")

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"

#: what the model reads of a call the person rejected in the editor
REJECTED = "the person rejected it in the editor"


def permission_options(tool_name: str) -> list[acp_schema.PermissionOption]:
    return [
        acp_schema.PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
        acp_schema.PermissionOption(option_id=ALLOW_ALWAYS, name=f"Always allow {tool_name} in this session", kind="allow_always"),
        acp_schema.PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
    ]


def permission_tool_call(approval: Approval, root: Path, mapper: EventMapper | None = None) -> acp_schema.ToolCallUpdate:
    """The call as the permission request shows it: title, kind, locations, and the preview (a
    diff, a command) when the tool gives one, else the description of what it would do."""
    state = mapper.calls.get(approval.tool_call_id) if mapper is not None else None
    tool = state.tool if state is not None else (mapper.tool(approval.tool_name) if mapper is not None else None)
    presentation: ToolPresentation | None = state.presentation if state is not None else None
    content = preview_content(root, approval.preview)
    if not content:
        from acp.helpers import text_block, tool_content

        from cogcli.shown.approval import arguments_text, exact_lines

        effects = ", ".join(approval.side_effects or [])
        said = f"{approval.description} ({effects})" if effects else approval.description
        # no preview: every argument, drawn exactly (a call too long to show never gets here)
        shown = "\n".join(exact_lines(arguments_text(approval.arguments))) if approval.arguments else ""
        content = [tool_content(text_block(visible(said, one_line=True) + ("\n" + shown if shown else "")))]
    locations = mapper.call_locations(state) if mapper is not None and state is not None else None
    return acp_schema.ToolCallUpdate(
        tool_call_id=approval.tool_call_id,
        title=title_of(approval.tool_name, presentation) if presentation is not None else visible(approval.description, one_line=True),
        kind=kind_of(tool),  # type: ignore[arg-type]
        status="pending",
        content=content,
        locations=locations,
        raw_input=approval.arguments,
    )


#: ``request(tool_call, options)`` → the editor's answer (``RequestPermissionResponse``)
Requester = Callable[[acp_schema.ToolCallUpdate, list[acp_schema.PermissionOption]], Awaitable[Any]]


class EditorApprover:
    """The run's ``approve`` hook (:data:`cogcli.gate.approval.Approve`) for one ACP session: asks the
    editor about each call; "always" is remembered per tool for the session's life."""

    def __init__(self, request: Requester, root: Path) -> None:
        self.request = request
        self.root = root
        self.before_asking: Callable[[], Awaitable[None]] | None = None
        self.always: set[str] = set()
        #: set per turn: the run's mapper (the calls' titles) and its abort signal
        self.mapper: EventMapper | None = None
        self.signal: AbortSignal | None = None
        #: told the id of each call allowed (it runs now)
        self.on_allowed: Callable[[str], None] | None = None
        #: calls allowed unasked (the session's mode: ``accept-edits`` lets edits through, :mod:`cogcli.acp.modes`)
        self.auto: Callable[[Approval], bool] | None = None

    async def __call__(self, approvals: list[Approval]) -> Decisions:
        decisions: dict[str, bool | Decision] = {}
        if self.before_asking is not None:  # the editor draws the calls before it is asked about them
            await self.before_asking()
        for approval in approvals:
            if approval.tool_name in self.always or (self.auto is not None and self.auto(approval)):
                decision = Decision(True)
            elif self.signal is not None and self.signal.aborted:
                decision = Decision(False, "the turn was cancelled")
            else:
                decision = await self._ask(approval)
            decisions[approval.tool_call_id] = decision
            if decision.approved and self.on_allowed is not None:
                self.on_allowed(approval.tool_call_id)
        return decisions

    async def _ask(self, approval: Approval) -> Decision:
        tool_call = permission_tool_call(approval, self.root, self.mapper)
        try:
            answer = await self._answer(tool_call, permission_options(approval.tool_name))
        except Exception as exc:  # the connection broke, the editor answered with an error
            log.warning("the editor did not answer the permission request for %s: %s", approval.tool_name, exc)
            return Decision(False, "no answer came for it from the editor")
        if answer is None:
            return Decision(False, "the turn was cancelled")
        outcome = getattr(answer, "outcome", None)
        chosen = getattr(outcome, "option_id", None) if getattr(outcome, "outcome", None) == "selected" else None
        if chosen == ALLOW_ALWAYS:
            self.always.add(approval.tool_name)
            return Decision(True)
        if chosen == ALLOW_ONCE:
            return Decision(True)
        if chosen == REJECT_ONCE:
            return Decision(False, REJECTED)
        return Decision(False, "the turn was cancelled" if chosen is None else REJECTED)

    async def _answer(self, tool_call: acp_schema.ToolCallUpdate, options: list[acp_schema.PermissionOption]) -> Any:
        """The editor's answer, or None when the run is aborted first (the turn was cancelled)."""
        if self.signal is None:
            return await self.request(tool_call, options)
        import anyio

        answer: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                answer.append(await self.request(tool_call, options))
                tg.cancel_scope.cancel()

            async def aborted() -> None:
                assert self.signal is not None
                await self.signal.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(ask)
            tg.start_soon(aborted)
        return answer[0] if answer else None
