"""Picking among attempts: each attempt's row (tests, files, lines, tokens, cost) and the order
that picks the winner — most tests passing, then the fewest changed lines, then the lowest cost
(an unknown cost last), then the lowest attempt number. An attempt whose run did not complete (a
model error, an interruption, a budget spent) or that changed nothing wins only when every attempt
is like that. The table is what ``cog edit --attempts`` prints."""

from __future__ import annotations

import math

from pydantic import BaseModel

#: run statuses an attempt may win with
FINISHED = frozenset({"completed"})


class AttemptRow(BaseModel):
    """One attempt as the comparison shows it (also the ``attempts`` JSON line's rows)."""

    attempt: int
    name: str
    branch: str
    path: str
    status: str = "error"
    thread_id: str | None = None
    #: the commit of its changes on its branch (None: it changed nothing)
    commit: str | None = None
    #: the tests run in its worktree after the run (None: they could not run; ``tests_error`` says why)
    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    tests_error: str | None = None
    files: int = 0
    added: int = 0
    removed: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    error: str | None = None

    @property
    def lines(self) -> int:
        return self.added + self.removed

    def eligible(self) -> bool:
        return self.status in FINISHED and self.commit is not None

    def key(self) -> tuple[int, int, int, float, int]:
        cost = math.inf if self.cost_usd is None else self.cost_usd
        return (0 if self.eligible() else 1, -(self.passed or 0), self.lines, cost, self.attempt)


def pick(rows: list[AttemptRow]) -> AttemptRow | None:
    """The winner (see the module), None when no attempt changed anything."""
    changed = [r for r in rows if r.commit is not None]
    return min(changed, key=AttemptRow.key) if changed else None


def _tests(row: AttemptRow) -> str:
    if row.passed is None:
        return "not run"
    bad = (row.failed or 0) + (row.errors or 0)
    return f"{row.passed} passed" + (f", {bad} failed" if bad else "")


def said(row: AttemptRow) -> str:
    """One attempt as it ends, in a line: ``attempt 2 (cog/try-…-2): completed: 1 file (+1 -1), 3 passed, 0 failed``."""
    tests = "tests not run" if row.passed is None else f"{row.passed} passed, {(row.failed or 0) + (row.errors or 0)} failed"
    files = f"{row.files} file" if row.files == 1 else f"{row.files} files"
    return f"attempt {row.attempt} ({row.branch}): {row.status}: {row.error or f'{files} (+{row.added} -{row.removed}), {tests}'}"


def table(rows: list[AttemptRow], winner: AttemptRow | None) -> list[str]:
    """The comparison: one line per attempt, the winner marked with ``*``."""
    head = f"  {'attempt':<8} {'status':<16} {'tests':<20} {'files':>5} {'lines':>11} {'tokens':>9} {'cost':>9}  branch"
    lines = [head]
    for r in rows:
        mark = "*" if winner is not None and r.attempt == winner.attempt else " "
        cost = "?" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        change = f"+{r.added} -{r.removed}"
        lines.append(f"{mark} {r.attempt:<8} {r.status:<16} {_tests(r):<20} {r.files:>5} {change:>11} {r.tokens:>9,} {cost:>9}  {r.branch}")
    return lines
