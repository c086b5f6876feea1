"""Line matching for diffs in bounded time: Myers' O((N+M)·D) greedy algorithm with a budget.

:class:`difflib.SequenceMatcher` without its autojunk heuristic is superlinear on repeated lines
(1,200 identical lines took over 30 s), long enough for a preview to be dropped. Here the work is
counted — every diagonal tried and every line compared — and when it passes ``budget`` the caller
gets None and shows the span as one replace (:func:`workspace_tools.text.diffs._core_opcodes`). So a
diff costs at most ``budget`` steps plus linear passes, whatever the files hold. Myers' algorithm
is also what ``git diff`` uses by default, so the hunks read as git's.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence

Opcode = tuple[str, int, int, int, int]

#: the default number of steps (diagonals tried plus lines compared) a match may take
BUDGET = 2_000_000


def myers_opcodes(a: Sequence[Hashable], b: Sequence[Hashable], budget: int = BUDGET) -> list[Opcode] | None:
    """:meth:`difflib.SequenceMatcher.get_opcodes`-style opcodes of a shortest edit script from
    ``a`` to ``b``, or None when finding it would take more than ``budget`` steps."""
    ids: dict[Hashable, int] = {}
    xs = [ids.setdefault(line, len(ids)) for line in a]
    ys = [ids.setdefault(line, len(ids)) for line in b]
    trace = _forward(xs, ys, budget)
    if trace is None:
        return None
    return _opcodes(_backtrack(trace, len(xs), len(ys)), len(xs), len(ys))


def _forward(xs: list[int], ys: list[int], budget: int) -> list[array] | None:
    """The furthest-reaching x of each diagonal after each step d (a slice for k in -d..d)."""
    n, m = len(xs), len(ys)
    most = n + m
    off = most + 1
    v = array("l", [0]) * (2 * most + 3)
    trace: list[array] = []
    work = 0
    for d in range(most + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and xs[x] == ys[y]:
                x += 1
                y += 1
            work += 1 + x - start
            v[off + k] = x
            if x >= n and y >= m:
                trace.append(v[off - d : off + d + 1])
                return trace
        trace.append(v[off - d : off + d + 1])
        if work > budget:
            return None
    return trace  # not reached: d = n + m always ends


def _backtrack(trace: list[array], n: int, m: int) -> list[tuple[str, int, int]]:
    """The edit script, first edit first: ``("=", x, y)`` a kept line, ``("-", x, y)`` a removed
    ``a[x]``, ``("+", x, y)`` an added ``b[y]``."""
    steps: list[tuple[str, int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        before = trace[d - 1]  # k in -(d-1)..d-1 at index k + d - 1
        k = x - y
        if k == -d or (k != d and before[k - 1 + d - 1] < before[k + 1 + d - 1]):
            prev_k = k + 1
        else:
            prev_k = k - 1
        prev_x = before[prev_k + d - 1]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y and (x - prev_x) + (y - prev_y) > 1:
            x -= 1
            y -= 1
            steps.append(("=", x, y))
        if x == prev_x:
            steps.append(("+", x, y - 1))
        else:
            steps.append(("-", x - 1, y))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        steps.append(("=", x, y))
    steps.reverse()
    return steps


def _opcodes(steps: list[tuple[str, int, int]], n: int, m: int) -> list[Opcode]:
    ops: list[Opcode] = []
    i = j = 0
    at = 0
    while at < len(steps):
        kind = steps[at][0]
        if kind == "=":
            end = at
            while end < len(steps) and steps[end][0] == "=":
                end += 1
            count = end - at
            ops.append(("equal", i, i + count, j, j + count))
            i, j, at = i + count, j + count, end
            continue
        removed = added = 0
        while at < len(steps) and steps[at][0] != "=":
            if steps[at][0] == "-":
                removed += 1
            else:
                added += 1
            at += 1
        tag = "replace" if removed and added else "delete" if removed else "insert"
        ops.append((tag, i, i + removed, j, j + added))
        i, j = i + removed, j + added
    assert i == n and j == m
    return ops
