"""A running command's output as the terminal draws it: the last few lines under its row.

The text renderer keeps one live area per run (:class:`~cogcli.render.text.TextRenderer`); for a
command's output updates (:func:`cogcli.contract.details.read_output_lines`) that area is the call's row and
the last :data:`TAIL_LINES` lines of output below it, like a small terminal, redrawn in place. Off
a terminal (a CI log) every output line is printed once, indented under the row, in order.

A background command's output read by ``command_output`` (or printed when ``run_command`` started it,
or before ``kill_command`` ended it) comes in the call's result, not as updates: its last
:data:`TAIL_LINES` lines are drawn under the finished row the same way (:func:`job_tail`).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from cogcli.contract.details_readers import read_job_output

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


def job_tail(details: Any, keep: int = TAIL_LINES) -> list[str]:
    """The lines drawn under a background command's row: the last ``keep`` lines of the output its
    result carries, after a line counting the ones before; none when it printed nothing."""
    lines = read_job_output(details)
    if not lines:
        return []
    earlier = [f"{OUTPUT_PREFIX}… {len(lines) - keep} earlier line{'s' if len(lines) - keep != 1 else ''}"] if len(lines) > keep else []
    return earlier + [OUTPUT_PREFIX + line.expandtabs(4) for line in lines[-keep:]]
