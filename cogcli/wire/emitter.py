"""The one place a run's events are stamped (``seq`` 0, 1, 2, … and ``timestamp``) and handed
out (:class:`EventEmitter`), what the model wrote in them redacted first."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from cogcli.wire.events import BaseEvent, TextDeltaEvent, ToolCallDeltaEvent

log = logging.getLogger("cogcli")


#: (millisecond, its ISO text): events stamped within one millisecond share the string
_stamp: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """The time now in ISO 8601, UTC, to the millisecond (``2026-12-01T12:00:00.000Z``).

    Formatted once per millisecond: a burst of progress events must not pay for datetime each."""
    global _stamp
    ms = time.time_ns() // 1_000_000
    last, text = _stamp
    if ms != last:
        moment = datetime.fromtimestamp(ms // 1000, UTC).replace(microsecond=(ms % 1000) * 1000)
        text = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        _stamp = (ms, text)
    return text


#: the events that carry what the model wrote (its text, its reasoning, its calls' arguments)
_MODEL_WRITTEN = frozenset({"text-delta", "text-end", "reasoning-delta", "reasoning-end", "tool-call-delta", "tool-call-end", "tool-update"})


class EventEmitter:
    """The one place a run's events are stamped (``seq`` 0, 1, 2, … and ``timestamp``) and
    handed to ``on_event``. A callback that raises is logged; the run goes on."""

    def __init__(self, on_event: Callable[[BaseEvent], Any] | None = None) -> None:
        self.on_event = on_event
        self.seq = 0
        self._failures = 0
        self._redactor: Any = None

    def emit(self, event: BaseEvent) -> BaseEvent:
        """Stamp and hand out ``event`` — what the model wrote in it redacted first
        (:mod:`cogcli.secrets.stream`: a streamed piece may be held back until it is whole)."""
        if event.type in _MODEL_WRITTEN:  # type: ignore[attr-defined]
            if self._redactor is None:
                from cogcli.secrets.stream import EventRedactor

                self._redactor = EventRedactor(TextDeltaEvent, ToolCallDeltaEvent)
            for shown in self._redactor.events(event):
                self._emit(shown)
            return event
        return self._emit(event)

    def _emit(self, event: BaseEvent) -> BaseEvent:
        # stamped in place: every emit gets an event made for it, and a copy would cost more
        # than writing the event's JSON line (this is the hot path of every progress update)
        event.seq = self.seq
        event.timestamp = now_iso()
        stamped = event
        self.seq += 1
        if self.on_event is not None:
            try:
                returned = self.on_event(stamped)
                if returned is not None and inspect.isawaitable(returned):
                    log.warning("on_event must be a plain function; a coroutine it returned was not awaited")
                    getattr(returned, "close", lambda: None)()
            except Exception:
                self._failures += 1
                log.warning("on_event failed on a %s event; the run goes on", event.type, exc_info=self._failures == 1)  # type: ignore[attr-defined]
        return stamped
