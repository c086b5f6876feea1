"""The one way a call ends: redact → ``tool-result`` event → ``on_tool_result`` → queued for memory.

Every outcome of a call in a run — it ran, failed, was refused, was aborted, or never ran because
the model's stream was cut — goes through :meth:`Conclude.__call__`, so each reader sees the same
redacted :class:`ToolResult` exactly once. A result is redacted once, by whoever hands it out:
here for a run's calls, in :func:`cogcli.contract.invoke.invoke_tool` for a call made on its own (``cog
tool``, ``cog mcp``, the Python API) — both with :func:`cogcli.secrets.redactor.redact_result`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from cogcli.wire.emitter import EventEmitter
from cogcli.contract.result import ToolResult
from cogcli.secrets.redactor import redact_result
from cogcli.wire.events import ToolResultEvent

log = logging.getLogger("cogcli")

ToolResultCallback = Callable[[ToolResult], "Any | Awaitable[Any]"]
#: what runs on a redacted result before anyone reads it (the run's PostToolUse hooks); returns the result to hand out
AfterCall = Callable[[ToolResult], Awaitable[ToolResult]]

#: how long ``on_tool_result`` may take for a call that ends while its run is being cancelled
NOTIFY_WHEN_CANCELLED_S = 5.0


class Slots:
    """One turn's results in call order, filled as its calls end (what memory records)."""

    def __init__(self, size: int) -> None:
        self.results: list[ToolResult | None] = [None] * size

    def open(self) -> list[int]:
        return [i for i, r in enumerate(self.results) if r is None]

    def done(self) -> list[ToolResult]:
        return [r for r in self.results if r is not None]


class Conclude:
    """Ends a run's calls: ``await conclude(slots, i, result)``."""

    def __init__(self, emitter: EventEmitter, on_tool_result: ToolResultCallback | None, after: AfterCall | None = None) -> None:
        self.emitter = emitter
        self.on_tool_result = on_tool_result
        self.after = after

    async def __call__(self, slots: Slots, index: int, result: ToolResult) -> ToolResult:
        if slots.results[index] is not None:  # concluded already: every call ends exactly once
            return slots.results[index]  # type: ignore[return-value]
        result = redact_result(result)  # the one redaction of a run's call (invoke_tool's, of a call on its own)
        slots.results[index] = result
        if self.after is not None:
            result = slots.results[index] = await self._after(result)
        self.emitter.emit(ToolResultEvent.of(result))
        if self.on_tool_result is not None:
            if _cancelled():
                with anyio.move_on_after(NOTIFY_WHEN_CANCELLED_S, shield=True):
                    await self._notify(result)
            else:
                await self._notify(result)
        return result

    async def _after(self, result: ToolResult) -> ToolResult:
        assert self.after is not None
        try:
            if not _cancelled():
                return await self.after(result)
            with anyio.move_on_after(NOTIFY_WHEN_CANCELLED_S, shield=True):
                return await self.after(result)
        except Exception:
            log.warning("the hooks after %s failed; the run goes on", result.name, exc_info=True)
        return result

    async def _notify(self, result: ToolResult) -> None:
        assert self.on_tool_result is not None
        try:
            returned = self.on_tool_result(result)
            if inspect.isawaitable(returned):
                await returned
        except Exception:
            log.warning("on_tool_result failed for %s; the run goes on", result.name, exc_info=True)


def _cancelled() -> bool:
    """True inside a cancelled scope (a run whose caller cancelled it, ending its calls)."""
    try:
        return anyio.current_effective_deadline() == float("-inf")
    except Exception:
        return False
