"""What a change did to the checkers' verdict: the problems after it against those before it.

A problem is the same problem when its file, rule and message are the same and its line is where
the change moved the old line to (:func:`line_map`: the lines the diff keeps, shifted). The ones
left over are paired by rule and message alone, nearest lines first (a problem on a line the change
rewrote is still the old problem when the same rule says the same thing of it). What is left after
that is new (only after) or fixed (only before). Line numbers inside messages (mypy's "defined on
line 12") are compared without their number, so a moved definition does not make a problem new.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cogcli.contract.details import Diagnostic
from workspace_tools.text.myers import myers_opcodes

#: old line (1-based) -> its new line, or None when the change removed or rewrote it
LineMap = Callable[[int], "int | None"]

_LINE_IN_MESSAGE = re.compile(r"\b(line|lines|at|on)(\s+)\d+", re.IGNORECASE)


@dataclass
class Comparison:
    """The problems a change added, fixed and left."""
    new: list[Diagnostic] = field(default_factory=list)
    fixed: list[Diagnostic] = field(default_factory=list)
    #: (before, after) pairs: problems that were there and still are
    kept: list[tuple[Diagnostic, Diagnostic]] = field(default_factory=list)


def line_map(old: Sequence[str], new: Sequence[str]) -> LineMap:
    """Where each line of ``old`` is in ``new`` (1-based), by the lines a diff keeps. A diff over its
    step budget keeps the common head and tail only."""
    codes = myers_opcodes(old, new)
    if codes is None:
        head = 0
        while head < min(len(old), len(new)) and old[head] == new[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
            tail += 1
        codes = [("equal", 0, head, 0, head), ("replace", head, len(old) - tail, head, len(new) - tail),
                 ("equal", len(old) - tail, len(old), len(new) - tail, len(new))]
    shifts = [(i1, i2, j1 - i1) for tag, i1, i2, j1, _ in codes if tag == "equal" and i2 > i1]

    def where(line: int) -> int | None:
        index = line - 1
        for start, end, shift in shifts:
            if start <= index < end:
                return line + shift
        return None

    return where


def _identity(line: int) -> int | None:
    return line


def _key(d: Diagnostic) -> tuple[str, str, str, str]:
    return d.file, d.source, d.rule, _LINE_IN_MESSAGE.sub(r"\1\2#", d.message)


def compare(before: Sequence[Diagnostic], after: Sequence[Diagnostic],
            moved: dict[str, LineMap] | None = None, renamed: dict[str, str] | None = None) -> Comparison:
    """The problems ``after`` a change against those ``before`` it. ``moved``: each changed file's
    line map (files not in it kept their lines); ``renamed``: old path -> new path of moved files."""
    maps = moved or {}
    names = renamed or {}
    result = Comparison()
    waiting: dict[tuple[str, str, str, str], list[Diagnostic]] = {}
    for d in after:
        waiting.setdefault(_key(d), []).append(d)
    unmatched: list[tuple[Diagnostic, int | None]] = []
    # first the problems that are exactly where the change moved them
    for d in before:
        file = names.get(d.file, d.file)
        at = maps.get(d.file, _identity)(d.line)
        key = _key(d.model_copy(update={"file": file}))
        candidates = waiting.get(key, [])
        hit = next((i for i, c in enumerate(candidates) if at is not None and c.line == at), None)
        if hit is None:
            unmatched.append((d, at))
        else:
            result.kept.append((d, candidates.pop(hit)))
    # then the same rule saying the same thing, nearest first
    for d, at in unmatched:
        key = _key(d.model_copy(update={"file": names.get(d.file, d.file)}))
        candidates = waiting.get(key, [])
        if not candidates:
            result.fixed.append(d)
            continue
        near = d.line if at is None else at
        best = min(range(len(candidates)), key=lambda i: abs(candidates[i].line - near))
        result.kept.append((d, candidates.pop(best)))
    order = {id(d): i for i, d in enumerate(after)}
    result.new = sorted((d for ds in waiting.values() for d in ds), key=lambda d: order[id(d)])
    return result
