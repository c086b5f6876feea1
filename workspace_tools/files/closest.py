"""Where text the model expected to find comes closest to a file's lines: the feedback that lets
it retry an edit that did not match (difflib ratio over windows as long as the expected text)."""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass

from workspace_tools.text.textfile import split_lines

THRESHOLD = 0.6
#: characters of window text compared at most; past it only windows sharing a line are tried
_BUDGET = 2_000_000
_MAX_CANDIDATES = 2_000
#: a longer text (or window) is compared by its first this many characters: one difflib ratio
#: grows with the product of the two lengths, and a 100 KB line against a 100 KB line never ends
_MAX_COMPARED = 2_000
#: the search for the closest window stops after this long with the best found so far
_DEADLINE = 2.0


@dataclass(frozen=True, slots=True)
class Near:
    """The window of lines most like a text searched for."""
    ratio: float
    start: int  # 0-based first line of the window
    stop: int  # 0-based line after it


def closest_window(lines: list[str], needle: str) -> Near | None:
    """The window of ``len(needle's lines)`` lines most like ``needle`` (ratio ≥ 0.6), or None.
    Bounded: long texts are compared by their beginnings, and the search stops after
    :data:`_DEADLINE` seconds with the best window so far."""
    needle_lines = split_lines(needle)
    k = max(1, len(needle_lines))
    if not lines:
        return None
    k = min(k, len(lines))
    needle = needle[:_MAX_COMPARED]
    starts: list[int] | range = range(len(lines) - k + 1)
    if len(starts) * len(needle) > _BUDGET:
        wanted = {line.strip() for line in needle_lines if line.strip()}
        found: set[int] = set()
        for i, line in enumerate(lines):
            if line.strip() in wanted:
                found.update(range(max(0, i - k + 1), min(i, len(lines) - k) + 1))
                if len(found) >= _MAX_CANDIDATES:
                    break
        starts = sorted(found)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(needle)
    best: Near | None = None
    give_up = time.monotonic() + _DEADLINE
    for n, s in enumerate(starts):
        if n % 64 == 63 and time.monotonic() > give_up:
            break
        matcher.set_seq1("".join(lines[s : s + k])[:_MAX_COMPARED])
        floor = best.ratio if best else THRESHOLD
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue
        ratio = matcher.ratio()
        if ratio >= floor and (best is None or ratio > best.ratio):
            best = Near(ratio, s, s + k)
    return best


def show_lines(lines: list[str], start: int, stop: int, *, context: int = 2) -> str:
    """Lines ``start``..``stop`` (0-based) with ``context`` lines around, numbered like read_file."""
    first = max(0, start - context)
    last = min(len(lines), stop + context)
    out = []
    for n in range(first, last):
        marker = ">" if start <= n < stop else " "
        out.append(f"{marker}{n + 1:>5}\t{lines[n].rstrip(chr(10))}\n")
    return "".join(out)
