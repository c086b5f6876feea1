"""JSON lines: each wire event as one compact JSON object per line.

stdout holds only these lines (logs go to stderr). When someone can watch the stream as it is
written — a pipe, a socket, a terminal — each line is flushed as it is written, so a consumer
sees every event live. Written to a file (or /dev/null), lines are buffered and flushed at every
event that is not high-frequency progress, at least every :data:`FLUSH_INTERVAL` seconds while
progress flows, and at the end; no event is ever dropped. Reading them back: :func:`read_events`.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from pydantic_core import PydanticSerializationError

from cogcli.wire.events import BaseEvent, UnknownEventType, parse_event
from cogcli.render.summary import RunSummary

log = logging.getLogger("cogcli")

#: events that come in bursts (progress, streamed text): buffered on a file
_BURSTY = frozenset({"tool-update", "text-delta", "reasoning-delta", "tool-call-delta"})
#: longest a buffered line waits while more progress keeps coming (file output only)
FLUSH_INTERVAL = 0.1


def event_bytes(event: BaseEvent) -> bytes:
    """One event as its wire line (no newline): compact UTF-8 JSON, camelCase fields.

    Serialised by pydantic-core straight from the model (no dict, no ``json.dumps``): this is
    the hot path of every progress update. Text that UTF-8 cannot carry (lone surrogates, as in
    an undecodable file name) is written with JSON escapes instead of losing the event."""
    try:
        return type(event).__pydantic_serializer__.to_json(event, by_alias=True, exclude_none=True)
    except PydanticSerializationError:
        return json.dumps(event.to_wire(), ensure_ascii=True, separators=(",", ":"), default=repr).encode("ascii")


def is_live(out: IO[bytes]) -> bool:
    """True when a reader may watch ``out`` as it is written: a terminal, a pipe, a socket, or a
    stream that is not a file descriptor (flushing per line is the safe choice there)."""
    try:
        fd = out.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return True
    return os.isatty(fd) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class JsonlWriter:
    """Writes events to a binary stream (``sys.stdout.buffer``) as UTF-8 JSON lines.

    ``live`` flushes after every line; by default it is :func:`is_live` of ``out``.
    If the reader goes away (``cog edit --json | head -3``) writing stops quietly and
    :attr:`broken` is set; the run itself goes on and its thread is saved."""

    def __init__(self, out: IO[bytes], *, live: bool | None = None) -> None:
        self.out = out
        self.live = is_live(out) if live is None else live
        self.broken = False
        self.summary = RunSummary()
        self._flushed_at = time.monotonic()

    def handle(self, event: BaseEvent) -> None:
        self.summary.add(event)
        if self.broken:
            return
        try:
            self.out.write(event_bytes(event) + b"\n")
            now = time.monotonic()
            if self.live or getattr(event, "type", None) not in _BURSTY or now - self._flushed_at >= FLUSH_INTERVAL:
                self.out.flush()
                self._flushed_at = now
        except BrokenPipeError:
            self._broke()

    def close(self) -> None:
        if self.broken:
            return
        try:
            self.out.flush()
        except BrokenPipeError:
            self._broke()
        except ValueError:  # already closed by its owner
            pass

    def _broke(self) -> None:
        self.broken = True
        log.info("stdout was closed by its reader; events are no longer written")


def read_events(
    lines: Iterable[str], on_problem: Callable[[int, str], None] | None = None
) -> Iterator[BaseEvent]:
    """Parse JSON lines into events. Blank lines and unknown event types are skipped; a malformed
    line is reported to ``on_problem(line_number, message)`` and skipped — never raised."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield parse_event(line)
        except UnknownEventType as exc:
            log.debug("line %d: %s; skipped", number, exc)
        except ValueError as exc:
            if on_problem is not None:
                on_problem(number, str(exc))
        except RecursionError:  # json.loads of a line nested 100,000 deep
            if on_problem is not None:
                on_problem(number, "not JSON: nested too deeply to read")
