"""A running command's output as the terminal draws it: the last few lines under its row.

The text renderer keeps one live area per run (:class:`~cogcli.render.text.TextRenderer`); for a
command's output updates (:func:`cogcli.contract.details.read_output_lines`) that area is the call's row and
the last :data:`TAIL_LINES` lines of output below it, like a small terminal, redrawn in place. Off
a terminal (a CI log) every output line is printed once, indented under the row, in order.
"""

from __future__ import annotations

from collections import deque

#: lines of a running command's output kept under its row on a terminal
TAIL_LINES = 6
#: how an output line is indented under its row
OUTPUT_PREFIX = "  │ "


class OutputTails:
    """The last lines of each running call's output."""

    def __init__(self, keep: int = TAIL_LINES) -> None:
        self.keep = keep
        self._tails: dict[str, deque[str]] = {}

    def add(self, call_id: str, lines: list[str]) -> list[str]:
        """Add a call's new lines; its tail now."""
        tail = self._tails.setdefault(call_id, deque(maxlen=self.keep))
        tail.extend(lines)
        return list(tail)

    def end(self, call_id: str) -> None:
        self._tails.pop(call_id, None)


def live_block(head: str, tail: list[str]) -> str:
    """The live area's text: the row, then the output's last lines (``\\n`` between them)."""
    return "\n".join([head, *(OUTPUT_PREFIX + line.expandtabs(4) for line in tail)])
