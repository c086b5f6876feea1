"""``cog tool NAME key=value …``: one workspace tool called through ``invoke_tool()``, drawn
with the same events (and so the same rows) as a call in a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from cogcli.commands.common import abort_on_signals
from cogcli.context import AbortSignal, ToolUpdate
from cogcli.errors import ErrorCode
from cogcli.events import EventEmitter, ToolCallEndEvent, ToolCallStartEvent, ToolUpdateEvent
from cogcli.invoke import invoke_tool, new_call_id
from cogcli.render import Renderer
from cogcli.exit_codes import EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE
from cogcli.tools import Tool

#: a call that could not start because of how it was asked for: exit 2, as for any usage error
USAGE_CODES = {ErrorCode.TOOL_NOT_FOUND, ErrorCode.INVALID_ARGUMENTS}


def call_tool(
    name: str, arguments: dict[str, Any], tools: Sequence[Tool[Any]], renderer: Renderer, *, timeout: float | None = None
) -> int:
    """Run the call, draw it, return the exit code: 0 ok (and its tests, if any, passed), 1 the
    call failed or tests failed, 2 unknown tool or bad arguments, 130/143 interrupted."""
    emit = EventEmitter(renderer.handle).emit
    call_id = new_call_id()
    tool = next((t for t in tools if t.name == name), None)
    static = None if tool is None else tool.static_presentation()

    def on_update(update: ToolUpdate) -> None:
        emit(ToolUpdateEvent.of(update))

    async def run() -> tuple[Any, list[int]]:
        abort = AbortSignal()
        async with abort_on_signals(abort) as received:
            emit(ToolCallStartEvent(id=call_id, tool_name=name, presentation=static))
            emit(ToolCallEndEvent(id=call_id, tool_name=name, arguments=arguments))
            result = await invoke_tool(name, arguments, tools=tools, call_id=call_id, on_update=on_update, timeout=timeout, signal=abort)
        return result, received

    result, received = anyio.run(run)
    emit(result.to_event())
    renderer.close()
    if received:
        return 128 + received[0]  # 130 for SIGINT, 143 for SIGTERM
    if result.error_code in USAGE_CODES:
        return EXIT_USAGE
    if result.error is not None or not renderer.summary.tests_ok or tests_failed(result.details):
        return EXIT_TASK_FAILED
    return EXIT_OK


def tests_failed(details: Any) -> bool:
    """A test run whose ``outcome`` is anything but ``passed``: failing tests, a build that failed,
    no tests collected, a runner error, or a plain test command that exited non-zero."""
    return isinstance(details, dict) and details.get("outcome") not in (None, "passed")
