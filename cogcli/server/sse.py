"""Server-sent events framed as the reference server adapters frame theirs.

Per event ``id: <seq>`` and ``data: <event json>`` (the exact line ``cog edit --json`` writes),
a ``: keep-alive`` comment after :data:`KEEP_ALIVE` seconds with nothing else to send, and
``data: [DONE]`` once the run's ``finish`` has been sent. A client that reconnects with
``Last-Event-ID: N`` gets every event after ``seq`` N.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from cogcli.server.live_runs import ServedRun

#: seconds of silence before a keep-alive comment
KEEP_ALIVE = 5.0
DONE = b"data: [DONE]\n\n"
KEEP_ALIVE_FRAME = b": keep-alive\n\n"


def frame(seq: int, data: bytes) -> bytes:
    """One event as an SSE frame. ``data`` is one JSON line: JSON has no raw newlines."""
    return b"id: %d\ndata: %s\n\n" % (seq, data)


def frames(events: Iterable[tuple[int, bytes]]) -> bytes:
    return b"".join(frame(seq, data) for seq, data in events)


def parse_last_event_id(value: str | None) -> int:
    """The ``seq`` a client already has (-1: none). Raises ValueError for a value that is not one."""
    if value is None or not value.strip():
        return -1
    seq = int(value.strip())
    if seq < -1:
        raise ValueError(value)
    return seq


async def run_stream(run: ServedRun, after: int, *, keep_alive: float = KEEP_ALIVE) -> AsyncIterator[bytes]:
    """A run's events after ``seq`` ``after`` as SSE, live until ``[DONE]``. Events that piled up
    while the client was busy go out in one chunk (the last one always among them)."""
    cursor = run.index_after(after)
    while True:
        changed = run.changed  # taken before looking: an event appended after the look sets it
        events: Sequence[tuple[int, bytes]] = run.events[cursor:]
        if events:
            cursor += len(events)
            yield frames(events)
            continue
        if run.finished:
            yield DONE
            return
        with anyio.move_on_after(keep_alive) as scope:
            await changed.wait()
        if scope.cancelled_caught:
            yield KEEP_ALIVE_FRAME

