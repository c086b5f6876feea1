"""A stored thread's events as SSE, a part at a time (issue 53: Studio's first rows of a 2,000-step
thread before the last event is made).

``GET /api/threads/{id}/events`` with ``Accept: text/event-stream`` sends the same frames, in the same
order, as the whole list would (``id: <seq>``, ``data: <event>``, then ``data: [DONE]``), but reads and
redraws the thread's entries in parts: the first :data:`FIRST_PART` entries, then :data:`PART` at a
time, each part's frames sent as soon as they are made. A part ends before an assistant or a user
entry only, so each call's result is read with (or before) the call and every event is the one the
whole thread gives (:class:`cogcli.threads.redraw.Redraw`). ``Last-Event-ID: N`` skips the events up
to ``seq`` N (a reconnecting client). The JSON array is made whole, as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from cogcli.contract.errors import ConfigError
from cogcli.server.sse import DONE, frames

#: entries in the first part (~200 calls: more than the page waits for, LONG_THREAD_ROWS) and in each after it
FIRST_PART = 400
PART = 1000


class ThreadParts:
    """The thread's store opened once; :meth:`next_part` (blocking: call it in a worker thread) gives
    the next part's events as (seq, JSON line), or None after the last."""

    def __init__(self, root: Path, thread_id: str) -> None:
        from cogcli.threads.redraw import Redraw
        from cogcli.threads.store import default_store, default_store_path

        if not default_store_path(root).exists():
            raise ConfigError(f"no thread {thread_id!r}: {root} has no stored threads yet")
        self.store = default_store(root)
        try:
            self.thread_id = self.store.require_id(thread_id)
        except BaseException:
            self.store.close()
            raise
        self.redraw = Redraw(self.thread_id)
        self.after = -1  # the last entry read
        self.held: list = []  # read, not yet redrawn: from the last assistant or user entry on
        self.done = False

    def next_part(self) -> list[tuple[int, bytes]] | None:
        from cogcli.render.jsonl import event_bytes
        from cogcli.threads.entries import AssistantEntry, UserEntry

        while not self.done:
            size = FIRST_PART if self.after < 0 else PART
            read = self.store.entries(self.thread_id, after=self.after, limit=size)
            if read:
                self.after = read[-1].seq
            entries = self.held + read
            if len(read) < size:  # the end: all of it
                self.done, cut = True, len(entries)
            else:
                cut = next((i for i in range(len(entries) - 1, 0, -1) if isinstance(entries[i].entry, (AssistantEntry, UserEntry))), 0)
            self.held = entries[cut:]
            if cut:
                return [(e.seq if e.seq is not None else 0, event_bytes(e)) for e in self.redraw.feed(entries[:cut])]
        return None

    def close(self) -> None:
        self.store.close()


async def thread_stream(parts: ThreadParts, after: int) -> AsyncIterator[bytes]:
    """SSE frames of ``parts`` after ``seq`` ``after``, part by part, then ``[DONE]``."""
    try:
        while (part := await anyio.to_thread.run_sync(parts.next_part)) is not None:
            part = [(seq, data) for seq, data in part if seq > after]
            if part:
                yield frames(part)
        yield DONE
    finally:
        parts.close()
