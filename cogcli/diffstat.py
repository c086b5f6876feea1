"""Lines added and removed per file of a unified diff: what a run changed, counted one way everywhere."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DiffStat:
    path: str | None
    added: int
    removed: int


_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def diff_stats(diff: str) -> list[DiffStat]:
    """``+``/``-`` line counts per file of a unified diff (new and deleted files included).

    Hunk headers give each hunk's length, so a removed line that itself starts with ``--`` is
    never taken for a file header."""
    stats: list[DiffStat] = []
    path: str | None = None
    added = removed = 0
    started = False
    old_left = new_left = 0
    lines = diff.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if old_left > 0 or new_left > 0:
            if line.startswith("+"):
                added += 1
                new_left -= 1
            elif line.startswith("-"):
                removed += 1
                old_left -= 1
            elif not line.startswith("\\"):
                old_left -= 1
                new_left -= 1
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if started:
                stats.append(DiffStat(path, added, removed))
            old, new = _strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:])
            path, added, removed, started = new or old, 0, 0, True
            i += 1
        elif match := _HUNK.match(line):
            started = True
            old_left = int(match.group(1) or 1)
            new_left = int(match.group(2) or 1)
        i += 1
    if started:
        stats.append(DiffStat(path, added, removed))
    return stats


def _strip_prefix(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        return name[2:]
    return name
