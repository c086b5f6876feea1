"""What every runner reports, in one shape: per-test records, counts, build errors, and the outcome.

A runner (pytest, go, vitest, jest, node --test, cargo) turns its own machine-readable stream into
calls to :meth:`Report.add_test` and :meth:`Report.add_build_error`; the tool turns a finished
:class:`Section` (one runner's run) into the details, the model's text and the row. Nothing after
this module knows which runner ran.

A test record is a dict (JSON-shaped, it goes into ``details`` as is)::

    {"id": "tests/test_a.py::test_x", "outcome": "failed", "duration": 0.01, "when": "call",
     "message": "assert 1 == 2", "longrepr": "…the failure's text…", "file": "tests/test_a.py",
     "line": 12, "stop": 1700000000.0, "subtests": [...]}

``outcome`` is passed | failed | skipped | error | xfailed | xpassed. ``file`` and ``line`` say where
the failure is, when the runner tells (the ``--format github`` annotations use them).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable

from workspace_tools.runners.failure_text import plain

#: counts every report carries, in the order the summary line names them
COUNT_KEYS = ("passed", "failed", "skipped", "errors", "xfailed", "xpassed")
_COUNT_OF = {"passed": "passed", "failed": "failed", "skipped": "skipped", "error": "errors",
             "xfailed": "xfailed", "xpassed": "xpassed"}

#: the outcome of a run, worst first (a run of several sections takes the worst of them)
OUTCOMES = ("build-failed", "error", "failed", "passed", "no-tests")

OUTCOME_MEANING = {
    "passed": "all tests passed",
    "failed": "some tests failed",
    "error": "the runner stopped with an error before all tests ran",
    "no-tests": "no tests were collected",
    "build-failed": "some code did not build, so its tests did not run",
}


def empty_counts() -> dict[str, int]:
    return dict.fromkeys(COUNT_KEYS, 0)


class Report:
    """What one runner has reported so far. ``on_test`` is called with each finished test."""

    def __init__(self, runner: str, on_test: Callable[[Report, dict[str, Any]], None] | None = None) -> None:
        self.runner = runner
        self.on_test = on_test
        self.started = False
        self.collected: int | None = None
        self.tests: list[dict[str, Any]] = []
        self.counts = empty_counts()
        self.build_errors: list[dict[str, Any]] = []
        #: collection errors (a test file that could not be loaded): counted in ``errors`` too
        self.collect_errors = 0
        self.warnings = 0
        self.subtests = {"passed": 0, "failed": 0, "skipped": 0}
        #: lines the runner wants the model to read first (a missing install, a hint)
        self.notes: list[str] = []
        #: lines the result opens with: the verdict is not about the workspace's code (cog's own
        #: Python ran the tests, or they imported an installed copy of a workspace package)
        self.headline: list[str] = []
        #: the runner's own summary words (pytest's last line: plugins' categories such as
        #: pytest-subtests' counted its way), shown instead of cog's counts when known
        self.summary: str | None = None
        #: which Python environment ran (``source``, ``python``, ``env``), for a Python runner
        self.environment: dict[str, str | None] | None = None

    def add_test(self, record: dict[str, Any]) -> dict[str, Any]:
        for key in ("message", "longrepr"):  # what the model and the person read: no terminal colours
            record[key] = plain(record.get(key))
        record.setdefault("duration", 0.0)
        record.setdefault("stop", time.time())
        if record.get("when") == "collect" and record["outcome"] == "error":
            self.collect_errors += 1
        key = _COUNT_OF.get(record["outcome"])
        if key:
            self.counts[key] += 1
        for sub in record.get("subtests") or ():
            if sub.get("outcome") in self.subtests:
                self.subtests[sub["outcome"]] += 1
        self.tests.append(record)
        if self.on_test is not None:
            self.on_test(self, record)
        return record

    def add_build_error(self, target: str, text: str, *, file: str | None = None, line: int | None = None) -> None:
        """``target`` (a package, a crate) did not compile; ``text`` is the compiler's own message."""
        text = plain(text)
        message = first_line("\n".join(x for x in text.splitlines() if not x.startswith("#"))) or "build failed"
        self.counts["errors"] += 1
        self.build_errors.append(
            {"id": target, "outcome": "error", "when": "build", "message": message, "longrepr": text.rstrip(),
             "file": file, "line": line, "duration": 0.0, "stop": time.time()}
        )

    @property
    def total(self) -> int:
        return len(self.tests)

    def progress(self, current: str) -> dict[str, Any]:
        """The details of a per-test update: counts so far, collected when known, the test that just ended."""
        return {**self.counts, "total_so_far": len(self.tests), "collected": self.collected, "current": current,
                "runner": self.runner}

    def problems(self) -> list[dict[str, Any]]:
        return [*self.build_errors, *(t for t in self.tests if t["outcome"] in ("failed", "error"))]

    def outcome(self, exit_code: int, *, no_tests_codes: tuple[int, ...] = ()) -> str:
        """One word for the run (see :data:`OUTCOMES`), from what was reported and the exit code."""
        if self.build_errors:
            return "build-failed"
        if self.collect_errors:
            return "error"
        if self.counts["failed"] or self.counts["errors"]:
            return "failed"
        if exit_code in no_tests_codes or (exit_code == 0 and not self.tests):
            return "no-tests"
        if exit_code != 0:
            return "error"
        return "passed"


@dataclass
class Section:
    """One runner's finished run."""

    runner: str
    #: the runner's folder, relative to the workspace ("" for the workspace itself)
    root: str
    command: str
    exit_code: int
    duration: float
    report: Report
    output: str
    output_dropped: int = 0
    #: the selection as the model asked for it ("all tests" when none)
    selection: str = "all tests"
    #: False for a command cog cannot read per-test results from (only its exit code counts)
    counted: bool = True
    outcome: str = "passed"


def worst(outcomes: list[str]) -> str:
    """The outcome of several sections: the worst one, and ``no-tests`` only when none ran any."""
    ran = [o for o in outcomes if o != "no-tests"] or outcomes
    return min(ran, key=OUTCOMES.index) if ran else "no-tests"


def counts_text(counts: dict[str, int], warnings: int = 0, subtests: dict[str, int] | None = None) -> str:
    """pytest's summary words: ``1 failed, 3 passed, 1 skipped, 2 warnings, 2 subtests passed``."""
    order = [("failed", "failed"), ("passed", "passed"), ("skipped", "skipped"), ("xfailed", "xfailed"),
             ("xpassed", "xpassed"), ("errors", "error")]
    parts = []
    for key, word in order:
        n = counts.get(key, 0)
        if n:
            parts.append(f"{n} {word}{'s' if word == 'error' and n > 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings > 1 else ''}")
    for state in ("passed", "failed", "skipped"):
        n = (subtests or {}).get(state, 0)
        if n:
            parts.append(f"{n} subtest{'s' if n > 1 else ''} {state}")
    return ", ".join(parts) or "no tests ran"


#: the runner's summary words that cog counts itself (so its own numbers are the ones shown)
_COUNTED = re.compile(r"^\d+ (?:failed|passed|skipped|xfailed|xpassed|errors?|warnings?|subtests? (?:passed|failed|skipped))$")


def report_words(r: Report) -> str:
    """A report's counts as people read them, one number for one meaning: cog's counts (the same
    as the details': each test once), then what else the runner's summary counted that cog does
    not (``2 passed, 1 deselected``; ``no tests ran (3 deselected)`` when none ran)."""
    own = counts_text(r.counts, r.warnings, r.subtests)
    extra = [part.strip() for part in (r.summary or "").split(",") if part.strip() and not _COUNTED.match(part.strip())]
    if not extra:
        return own
    return f"{own} ({', '.join(extra)})" if not r.tests else ", ".join([own, *extra])


def runner_counts_differ(r: Report) -> bool:
    """Whether the runner's own summary counts failed or passed tests otherwise than cog (pytest
    counts a failed subtest as a failed test of its own, and the test around it as passed)."""
    said = dict((word, int(n)) for n, word in re.findall(r"(\d+) (failed|passed)(?! subtest)", r.summary or ""))
    return bool(said) and any(said.get(k, 0) != r.counts[k] for k in ("failed", "passed"))


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return ""


_PY_WHERE = re.compile(r"^([^\s:][^:\n]*\.py):(\d+): ", re.MULTILINE)


def python_locations(text: str | None) -> list[tuple[str, int]]:
    """Every ``path.py:LINE:`` of a pytest failure text, outermost frame first."""
    return [(path, int(line)) for path, line in _PY_WHERE.findall(text or "")]


def python_location(text: str | None) -> tuple[str | None, int | None]:
    """The last ``path.py:LINE:`` of a pytest failure text: the deepest frame, where it raised."""
    found = _PY_WHERE.findall(text or "")
    if not found:
        return None, None
    return found[-1][0], int(found[-1][1])
