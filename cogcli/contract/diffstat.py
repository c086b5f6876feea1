"""Lines added and removed per file of a unified diff: what a run changed, counted one way everywhere;
and a hunk's two sides (what undo checks and puts back, what ACP shows as old and new text)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("cogcli")


@dataclass(frozen=True, slots=True)
class DiffStat:
    """Lines added and removed in one file."""
    path: str | None
    added: int
    removed: int


def diff_stats(diff: str) -> list[DiffStat]:
    """``+``/``-`` line counts per file of a unified diff (new and deleted files included), as
    unidiff parses it: hunk lengths decide, so a removed ``--- …`` line is never a header.
    A diff unidiff cannot parse (a stream from elsewhere) counts as no change, never an error."""
    if not diff.strip():
        return []
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    try:
        patch = PatchSet(diff)
    except UnidiffParseError:
        log.debug("a diff that does not parse was not counted", exc_info=True)
        return []
    return [DiffStat(f.path or None, f.added, f.removed) for f in patch]


def diff_totals(diff: str) -> tuple[int, int]:
    """(added, removed) lines of the whole diff: :func:`diff_stats` summed over its files."""
    stats = diff_stats(diff)
    return sum(s.added for s in stats), sum(s.removed for s in stats)


def hunk_sides(hunk: Any) -> tuple[list[str], list[str]]:
    """The hunk's lines before (context and removed) and after (context and added), each with its
    line ending, ``\\ No newline at end of file`` applied."""
    before: list[str] = []
    after: list[str] = []
    last = ""
    for line in hunk:
        kind = line.line_type
        if kind == "\\":
            if last in (" ", "-") and before:
                before[-1] = before[-1].removesuffix("\n")
            if last in (" ", "+") and after:
                after[-1] = after[-1].removesuffix("\n")
            continue
        if kind in (" ", "-"):
            before.append(line.value)
        if kind in (" ", "+"):
            after.append(line.value)
        last = kind
    return before, after
