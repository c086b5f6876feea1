"""Reading a call's ``details`` for display: unified diffs and test reports.

Renderers never know a tool's code, only what its details look like: a unified diff (a string,
or a dict with a ``diff`` string) or a test report (a dict with ``passed`` / ``failed`` counts and
a list of failures). Anything else is not drawn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cogcli.diffstat import DiffStat, diff_stats  # noqa: F401 (re-exported for the renderers)

#: how many failures a test report block lists before "… and N more"
MAX_FAILURES_SHOWN = 10


@dataclass(frozen=True, slots=True)
class Failure:
    name: str
    message: str = ""
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class TestReport:
    __test__ = False  # not a pytest test class

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.errors == 0

    def counts(self) -> dict[str, int]:
        return {"passed": self.passed, "failed": self.failed, "errors": self.errors, "skipped": self.skipped}


def diff_text(details: Any) -> str | None:
    """The unified diff a call's details carry, if any."""
    if isinstance(details, dict):
        value = details.get("diff")
        return value if isinstance(value, str) and value.strip() else None
    if isinstance(details, str) and (details.startswith("--- ") or details.startswith("diff --git")):
        return details
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_WHERE = re.compile(r"^([^\s:][^:\n]*\.py):(\d+): ", re.MULTILINE)


def _failure(item: Any) -> Failure | None:
    if isinstance(item, str):
        return Failure(name=item)
    if not isinstance(item, dict):
        return None
    name = item.get("nodeid") or item.get("name") or item.get("id") or item.get("test") or "?"
    message = item.get("message") or item.get("longrepr") or item.get("error") or ""
    file = item.get("file") or item.get("path")
    line = _int(item.get("line")) or _int(item.get("lineno"))
    if line is None and isinstance(item.get("longrepr"), str):
        # pytest's long report ends with "path:line: ErrorType" for where the test failed
        found = _WHERE.findall(item["longrepr"])
        if found:
            file, line = found[-1][0], int(found[-1][1])
    if file is None and isinstance(name, str) and "::" in name:
        file = name.split("::", 1)[0]
    return Failure(name=str(name), message=str(message), file=str(file) if file else None, line=line)


def read_test_report(details: Any) -> TestReport | None:
    """The test report a call's details carry (``passed`` and ``failed`` counts), if any."""
    if not isinstance(details, dict):
        return None
    counts = details.get("summary") if isinstance(details.get("summary"), dict) else details
    counts = details.get("counts") if isinstance(details.get("counts"), dict) else counts
    passed, failed = _int(counts.get("passed")), _int(counts.get("failed"))
    if passed is None or failed is None:
        return None
    raw = details.get("failures")
    if raw is None:
        raw = [t for t in details.get("tests", []) or [] if isinstance(t, dict) and t.get("outcome") in ("failed", "error")]
    failures = tuple(f for f in (_failure(item) for item in raw or []) if f is not None)
    return TestReport(
        passed=passed,
        failed=failed,
        errors=_int(counts.get("errors")) or _int(counts.get("error")) or 0,
        skipped=_int(counts.get("skipped")) or 0,
        failures=failures,
    )


def first_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
