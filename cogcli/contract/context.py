"""What a running tool can reach: its call id, an abort signal, and ``update()`` for progress.

Updates are for people watching: they go to ``on_update`` only, never to the model or memory.
An update after the tool returned (a timer it left behind) or after the call was aborted is dropped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anyio

    from cogcli.contract.preview import Preview

from cogcli.contract.presentation import PresentationLike, ToolPresentation, as_presentation

log = logging.getLogger("cogcli")


class AbortSignal:
    """A cooperative abort flag shared by a run and its tool calls; safe to fire from any thread
    (a signal handler, another task, a worker thread)."""

    __slots__ = ("_flag", "_lock", "_waiters", "reason")

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self._flag.is_set()

    def abort(self, reason: str = "aborted") -> None:
        with self._lock:
            if self._flag.is_set():
                return
            self.reason = reason
            self._flag.set()
            waiters, self._waiters = self._waiters, []
        for wake in waiters:
            try:
                wake()
            except Exception:  # a waiter whose loop is gone
                log.debug("abort waiter failed", exc_info=True)

    async def wait(self) -> None:
        """Return once the signal fires (immediately if it already has)."""
        if self._flag.is_set():
            return
        import anyio.from_thread  # anyio is imported when first needed: `cog tools` never waits on a signal
        import anyio.lowlevel

        event = anyio.Event()
        token = anyio.lowlevel.current_token()
        loop_thread = threading.get_ident()

        def wake() -> None:
            if threading.get_ident() == loop_thread:
                event.set()
            else:
                anyio.from_thread.run_sync(event.set, token=token)

        with self._lock:
            if self._flag.is_set():
                return
            self._waiters.append(wake)
        try:
            await event.wait()
        finally:
            with self._lock:
                if wake in self._waiters:
                    self._waiters.remove(wake)


@dataclass(frozen=True, slots=True)
class ToolUpdate:
    """One ``context.update()``, as ``on_update`` receives it."""

    call_id: str
    tool_name: str
    content: Any = None
    details: Any = None
    presentation: ToolPresentation | None = None


UpdateCallback = Callable[[ToolUpdate], Any]


class ToolContext:
    """Passed to ``execute(params, context)``."""

    __slots__ = (
        "call_id", "tool_name", "signal", "sandboxed", "approved", "planned", "_on_update", "_open", "_loop_thread", "_token",
    )

    def __init__(
        self,
        call_id: str,
        tool_name: str,
        *,
        signal: AbortSignal | None = None,
        on_update: UpdateCallback | None = None,
        sandboxed: bool = False,
        approved: Preview | None = None,
        planned: Preview | None = None,
    ) -> None:
        self.call_id = call_id
        self.tool_name = tool_name
        self.signal = signal or AbortSignal()
        self.sandboxed = sandboxed
        #: when the call runs: the preview the person approved (None: none was shown); the tool
        #: refuses to do anything other than what it showed (see :mod:`cogcli.contract.preview`)
        self.approved = approved
        #: while the call is previewed: the preview of the call before it in the turn on the same
        #: path, which runs first (None: none)
        self.planned = planned
        self._on_update = None if sandboxed else on_update
        self._open = True
        self._loop_thread = threading.get_ident()
        import anyio.lowlevel

        try:
            self._token: Any = anyio.lowlevel.current_token()
        except RuntimeError:
            self._token = None

    @property
    def aborted(self) -> bool:
        """True once the call was aborted or timed out: a long loop should check it and stop."""
        return self.signal.aborted or not self._open

    def raise_if_aborted(self) -> None:
        if self.aborted:
            from cogcli.contract.errors import CogError, ErrorCode

            raise CogError("the call was aborted", code=ErrorCode.ABORTED)

    def update(
        self, content: Any = None, details: Any = None, presentation: PresentationLike | None = None
    ) -> None:
        """Report progress. Dropped after the tool returned or the call was aborted; never fails the tool."""
        callback = self._on_update
        if callback is None or not self._open or self.signal.aborted:
            return
        if presentation is not None and not isinstance(presentation, ToolPresentation):
            try:
                presentation = as_presentation(presentation)
            except Exception:
                log.warning("tool %r sent an invalid presentation in an update; dropped it", self.tool_name)
                presentation = None
        item = ToolUpdate(self.call_id, self.tool_name, content, details, presentation)
        if threading.get_ident() != self._loop_thread and self._token is not None:
            # a sync tool in a worker thread: deliver on the event loop's thread, in order
            import anyio.from_thread

            try:
                anyio.from_thread.run_sync(self._deliver, item, token=self._token)
            except Exception:
                log.warning("update from tool %r could not be delivered", self.tool_name, exc_info=True)
            return
        self._deliver(item)

    def _deliver(self, item: ToolUpdate) -> None:
        callback = self._on_update
        if callback is None or not self._open:
            return
        try:
            callback(item)
        except Exception:
            log.warning("on_update callback failed for tool %r; the call goes on", self.tool_name, exc_info=True)

    def close(self) -> None:
        """Called by invoke_tool when the call ends: later updates are dropped."""
        self._open = False


async def cancel_on_abort(signal: AbortSignal, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` once ``signal`` fires: start it in a task group beside the work to stop."""
    await signal.wait()
    scope.cancel()
