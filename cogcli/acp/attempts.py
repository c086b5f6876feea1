"""Best-of-N over ACP: a ``session/prompt`` with ``_meta: {"cog": {"attempts": N}}``, or a prompt
``/attempts N instruction`` (advertised in ``available_commands``), runs N attempts of the
instruction side by side in git worktrees and applies the winner to the session's work tree —
through :func:`cogcli.worktrees.best_of.best_of` (handed in by ``cog acp`` as ``AcpOptions.attempts``),
as ``cog edit --attempts N`` does.

In the editor each attempt's tool calls are tool calls titled ``attempt K: …`` (their ids
``attempt-K:ID``, unique across attempts); a permission request names the attempt the same way and
is asked one attempt at a time ("always" answers hold for every attempt and the session). Each
attempt's end is a line of the agent's message, then the comparison table, the winner and what was
applied; the prompt's response ``_meta.cog.attempts`` is ``cog edit --attempts --json``'s last line.
The attempts' own words (their text and reasoning) are not streamed: N answers at once would
interleave; each attempt's thread keeps them (``session/load`` of its ``threadId``). The winner is
a run of its own thread (``apply attempt K``); the session's next ``/undo`` takes it back
(:func:`undo_target`), as ``cog undo`` and Studio's Undo do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import acp
from acp.helpers import update_agent_message_text, update_tool_call

from cogcli.acp.errors import INVALID_PARAMS, _error
from cogcli.acp.mapping import EventMapper
from cogcli.acp.permissions import EditorApprover


def requested_attempts(kit: Any, meta: Mapping[str, Any], text: str) -> tuple[int | None, str]:
    """(N, the instruction) when the prompt asks for attempts, else (None, ``text`` as it is); a
    count that is not 2 to 8 is refused naming the range. ``kit``: :mod:`cogcli.worktrees.best_of`
    as ``cog acp`` hands it in (None: attempts are refused)."""
    ours = meta.get("cog")
    count: Any = ours.get("attempts") if isinstance(ours, Mapping) else None
    word, _, rest = text.strip().partition(" ")
    if word == "/attempts":
        number, _, text = rest.strip().partition(" ")
        count = int(number) if number.isdigit() else number
        if not text.strip():
            raise _error(INVALID_PARAMS, "/attempts takes a number and an instruction: /attempts 3 Fix the failing test")
    if count is None:
        return None, text
    if kit is None:
        raise _error(INVALID_PARAMS, "this agent runs no attempts (started without cog acp's best-of-N support)")
    problem = kit.count_problem(count)
    if problem is not None:
        raise _error(INVALID_PARAMS, f"{problem}: /attempts N instruction, or _meta.cog.attempts N on session/prompt")
    return count, text.strip()


def undo_target(opened: Any, text: str) -> str | None:
    """The thread ``/undo`` walks back when the session's last turn applied a winner (once: then the
    session's own thread again); None otherwise."""
    if not text.strip().startswith("/undo") or opened.applied_thread is None:
        return None
    target, opened.applied_thread = opened.applied_thread, None
    return str(target)


def _relabel(attempt: int, update: Any) -> Any:
    """A tool call's update with the attempt in its id and title."""
    changes: dict[str, Any] = {"tool_call_id": f"attempt-{attempt}:{update.tool_call_id}"}
    if getattr(update, "title", None):
        changes["title"] = f"attempt {attempt}: {update.title}"
    return update.model_copy(update=changes)


async def attempts_turn(agent: Any, opened: Any, instruction: str, count: int, abort: Any, images: Any, outbox: Any) -> acp.PromptResponse:
    """Run the attempts for the prompt (see the module) and answer it."""
    from cogcli.acp.modes import PLAN
    from cogcli.contract.errors import CogError
    from cogcli.shown.visible import visible
    kit = agent.options.attempts
    if opened.mode == PLAN:
        await outbox.close()
        raise _error(INVALID_PARAMS, "attempts go without plan mode: leave it first (/go or the mode picker)")
    session = opened.session
    mappers: dict[int, EventMapper] = {}
    base: EditorApprover | None = opened.approver

    def mapper(k: int) -> EventMapper:
        return mappers.setdefault(k, EventMapper(opened.root, session.run_tools))

    def on_event(k: int, event: Any) -> None:
        kind = getattr(event, "type", None)
        progress = kind == "tool-update" and event.arguments is None
        for update in mapper(k).updates(event):
            if update.session_update in ("tool_call", "tool_call_update"):
                (outbox.progress if progress and update.session_update == "tool_call_update" else outbox.put)(_relabel(k, update))
        if kind == "tool-call-end" and (base is None or not getattr(mapper(k).tool(event.tool_name), "side_effects", None)):
            outbox.put(update_tool_call(f"attempt-{k}:{event.id}", status="in_progress"))

    def on_done(row: Any) -> None:
        outbox.put(update_agent_message_text(visible(kit.said(row), one_line=True) + "\n"))

    def approver_for(k: int) -> EditorApprover:
        async def request(tool_call: Any, options: list[Any]) -> Any:
            return await agent.conn.request_permission(session_id=opened.id, tool_call=_relabel(k, tool_call), options=options)

        assert base is not None
        one = EditorApprover(request, opened.root)
        one.always, one.auto = base.always, base.auto  # "always" answers hold across attempts and the session
        one.mapper, one.signal, one.before_asking = mapper(k), abort, outbox.flush
        one.on_allowed = lambda call_id: outbox.put(update_tool_call(f"attempt-{k}:{call_id}", status="in_progress"))
        return one

    try:
        outcome = await kit.best_of(opened.root, instruction, agent.options.flags.replace(model=session.settings.model), count,
                                model=session.settings.model, on_event=on_event, on_done=on_done, signal=abort, images=images or (),
                                approve_for=kit.one_at_a_time(per_attempt=approver_for) if base is not None else None)
    except CogError as exc:  # the worktrees could not be made
        await outbox.close()
        raise _error(INVALID_PARAMS, exc.message, errorCode=exc.code) from None
    opened.applied_thread = outcome.applied.thread_id if outcome.applied is not None else None
    lines = "\n".join(visible(line, one_line=True) for line in kit.table(outcome.done.rows, outcome.winner))
    outbox.put(update_agent_message_text(f"\n```\n{lines}\n```\n\n{visible(outcome.said())}\n"))
    await outbox.close()
    return acp.PromptResponse(stop_reason="cancelled" if outcome.interrupted else "end_turn", field_meta={"cog": {"attempts": outcome.line()}})
