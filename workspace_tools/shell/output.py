"""A command's output as ``run_command`` keeps it: bounded head and tail, and the live lines people
watch, coalesced when they come fast.

- :class:`HeadTail` keeps the first and the last bytes of a stream and counts what it left out
  between them: what the model reads of a long build (how it started, how it ended) and what the
  details keep, in memory bounded whatever the command prints.
- :class:`LiveLines` turns output chunks into progress updates: one update per line, several lines
  in one update when they come faster than :data:`COALESCE_S` (a build printing ten thousand lines
  a second sends at most a few dozen updates a second), a key block printed across lines redacted
  whole, an over-long line cut.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from workspace_tools.host.processes import LineSplitter

#: lines arriving within this long of the last update wait and go in the next one
COALESCE_S = 0.05
#: most lines one update carries (the rest of a burst is counted, not sent)
MAX_LINES_PER_UPDATE = 200
#: a line longer than this is cut in an update
MAX_LINE = 4096


class HeadTail:
    """The first ``head`` and the last ``tail`` bytes of a stream; ``dropped`` counts those between."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        excess = len(self._tail) - self.tail_limit
        if excess > 0:
            del self._tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        """All of it when nothing was left out; else head, a line saying how much was left out, tail."""
        head = bytes(self._head).decode("utf-8", "replace")
        tail = bytes(self._tail).decode("utf-8", "replace")
        if not self.dropped:
            return head + tail
        joint = "" if head.endswith("\n") or not head else "\n"
        return f"{head}{joint}…[{self.dropped:,} bytes of output left out]…\n{tail}"


Send = Callable[[str, int, int], None]


class LiveLines:
    """Output chunks in, ``send(text, first_line, lines)`` out: one update per line, coalesced."""

    def __init__(self, send: Send, *, clock: Callable[[], float] = time.monotonic) -> None:
        from cogcli.secrets.redactor import KeyLines

        self._send = send
        self._clock = clock
        self._split = LineSplitter(max_line=MAX_LINE)
        self._is_key = KeyLines()  # a key block printed by the command: cut into lines, none of which says PRIVATE KEY
        self._pending: list[str] = []
        self._skipped = 0
        self._last = float("-inf")
        self.lines = 0  # lines seen so far
        self._first = 1  # number of the first pending line

    def feed(self, chunk: bytes) -> None:
        for line in self._split.feed(chunk):
            self._add(line)
        if self._pending and self._clock() - self._last >= COALESCE_S:
            self.flush()

    def close(self) -> None:
        """The last line (no newline at the end) and whatever is still waiting."""
        for line in self._split.flush():
            self._add(line)
        self.flush()

    def _add(self, line: bytes) -> None:
        from cogcli.secrets.redactor import REDACTED

        self.lines += 1
        if len(self._pending) >= MAX_LINES_PER_UPDATE:
            self._skipped += 1
            return
        self._pending.append(REDACTED if self._is_key(line) else line.decode("utf-8", "replace").rstrip("\r"))

    def flush(self) -> None:
        if not self._pending:
            return
        lines = self._pending
        if self._skipped:
            lines = [*lines, f"…[{self._skipped} more lines]"]
        self._send("\n".join(lines), self._first, len(self._pending) + self._skipped)
        self._first = self.lines + 1
        self._pending, self._skipped = [], 0
        self._last = self._clock()
