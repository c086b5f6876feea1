"""JSON lines: each wire event as one compact JSON object per line, flushed at once.

stdout holds only these lines (logs go to stderr), and each is flushed as it is written so a
consumer on a pipe sees every event live. Reading them back: :func:`read_events`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from cogcli.events import BaseEvent, UnknownEventType, parse_event
from cogcli.render.summary import RunSummary

log = logging.getLogger("cogcli")


def event_line(event: BaseEvent) -> str:
    """One event as its wire line (no newline): compact JSON, camelCase fields."""
    return json.dumps(event.to_wire(), ensure_ascii=False, separators=(",", ":"))


class JsonlWriter:
    """Writes events to a binary stream (``sys.stdout.buffer``) as UTF-8 JSON lines.

    If the reader goes away (``cog edit --json | head -3``) writing stops quietly and
    :attr:`broken` is set; the run itself goes on and its thread is saved."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.broken = False
        self.summary = RunSummary()

    def handle(self, event: BaseEvent) -> None:
        self.summary.add(event)
        if self.broken:
            return
        try:
            self.out.write(event_line(event).encode("utf-8") + b"\n")
            self.out.flush()
        except BrokenPipeError:
            self.broken = True
            log.info("stdout was closed by its reader; events are no longer written")

    def close(self) -> None:
        pass


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
