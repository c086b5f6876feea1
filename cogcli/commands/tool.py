"""``cog tool NAME key=value …``: one workspace tool called through the session
(:meth:`cogcli.session.Session.invoke_tool`), drawn with the same events (and so the same rows)
as a call in a run."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any

import anyio

from cogcli.commands.common import abort_on_signals
from cogcli.contract.context import AbortSignal, ToolUpdate
from cogcli.wire.emitter import EventEmitter
from cogcli.wire.events import ToolCallEndEvent, ToolCallStartEvent, ToolResultEvent, ToolUpdateEvent
from cogcli.contract.invoke import new_call_id
from cogcli.render import Renderer
from cogcli.session import Session, call_exit_status

#: the tools a run journals for ``cog undo`` (their descriptions say so); a direct call records no run
JOURNALED_IN_RUNS = frozenset({"edit_file", "apply_patch", "write_file", "move_file", "delete_file"})


def call_tool(session: Session, name: str, arguments: dict[str, Any], renderer: Renderer, *, timeout: float | None = None) -> int:
    """Run the call, draw it, return the exit code: 0 ok (and its tests, if any, passed), 1 the
    call failed or tests failed, 2 unknown tool or bad arguments, 130/143 interrupted."""
    # What start-up made (modules, models, settings, the tool) outlives the call: frozen once the event
    # loop is up (its modules loaded with the collector off, as start-up's were), the collector walks
    # only what the call makes, not those objects again (passes over them were ~15-20 ms of a one-off
    # call). It is on for the call's own objects; the freeze ends with the call (unless the caller had
    # frozen objects of its own: those stay as the caller left them).
    collecting = gc.isenabled()
    gc.disable()  # first (no closure here either): an object made while it is on starts a pass over all of start-up's
    ours = gc.get_freeze_count() == 0
    try:
        return _call_tool(session, name, arguments, renderer, timeout=timeout, started=functools.partial(_collect_from_here, collecting))
    finally:
        if collecting:
            gc.enable()
        if ours:
            gc.unfreeze()


def _collect_from_here(collecting: bool) -> None:
    """The event loop is up and the call about to run: what exists now is frozen, the collector back on."""
    gc.freeze()
    if collecting:
        gc.enable()


def _call_tool(session: Session, name: str, arguments: dict[str, Any], renderer: Renderer, *, timeout: float | None, started: Callable[[], None]) -> int:
    emit = EventEmitter(renderer.handle).emit
    call_id = new_call_id()
    tool = next((t for t in session.tools if t.name == name), None)
    static = None if tool is None else tool.static_presentation()

    def on_update(update: ToolUpdate) -> None:
        emit(ToolUpdateEvent.of(update))

    async def run() -> tuple[Any, list[int]]:
        started()
        abort = AbortSignal()
        async with abort_on_signals(abort) as received:
            emit(ToolCallStartEvent(id=call_id, tool_name=name, presentation=static))
            emit(ToolCallEndEvent(id=call_id, tool_name=name, arguments=arguments))
            result = await session.invoke_tool(name, arguments, call_id=call_id, on_update=on_update, timeout=timeout, signal=abort)
        return result, received

    result, received = anyio.run(run)
    emit(ToolResultEvent.of(result))
    renderer.close()
    details = result.details if isinstance(result.details, dict) else {}
    if result.error is None and (name in JOURNALED_IN_RUNS or details.get("changed_files")):
        from cogcli.shown.visible import say

        say("cog undo does not put back what cog tool changes (only a run's changes are recorded); "
            "git restore/git checkout does for files git tracks")
    if result.error is None and details.get("job") and details.get("running"):
        from cogcli.shown.visible import say

        say(f"{details['job']} ended with this cog tool call: a background command lives as long as its session "
            "(a run of cog edit or cog chat), so a later cog tool command_output or kill_command does not find it")
    if received:
        return 128 + received[0]  # 130 for SIGINT, 143 for SIGTERM
    return call_exit_status(result)  # what the call's end means is the session's to say
