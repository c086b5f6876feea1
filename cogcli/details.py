"""The ``details`` the workspace tools return, as pydantic models: what an application can rely on.

Published by ``cog schema details``. A tool returns one of these as its ``details``; it goes on the
wire and into the thread as the JSON it dumps to (snake_case keys, as always). Each model allows
extra keys, so a field added later never breaks an older reader.

- :class:`FileEditDetails` — ``edit_file``: the unified diff of the change and its line counts;
- :class:`FileWriteDetails` — ``write_file``: the same, and whether the file was created;
- :class:`TestReportDetails` — ``run_tests`` with pytest: counts, one record per test, output tail;
- :class:`CommandRunDetails` — ``run_tests`` with a configured command: exit code, output tail;
- :class:`SearchDetails` — ``search_text``: the matches shown and how many there were.

:func:`diff_text` and :func:`read_test_report` are how the run and the renderers read a call's diff and
test report; they read these shapes (and the loose shapes other tools, MCP servers say, return).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Details(BaseModel):
    # built on first use: listing or calling one tool does not pay for every kind of details
    model_config = ConfigDict(extra="allow", defer_build=True)


class FileEditDetails(_Details):
    #: a unified diff (``--- a/path`` / ``+++ b/path``), applicable with ``git apply``
    diff: str
    added: int
    removed: int


class FileWriteDetails(FileEditDetails):
    created: bool


class TestCaseRecord(_Details):
    """One test as it finished (``subtests`` is present only for a test that had some)."""

    __test__ = False  # not a pytest test class

    id: str
    #: passed | failed | skipped | error | xfailed | xpassed
    outcome: str
    duration: float | None = 0.0
    #: the phase that decided the outcome: setup | call | teardown
    when: str | None = None
    message: str | None = None
    longrepr: str | None = None
    #: when it finished (seconds since the epoch)
    stop: float | None = None


class _RunDetails(_Details):
    #: the command line that ran (without the sandbox around it)
    command: str
    exit_code: int
    #: bwrap | off
    sandbox: str | None = None


class TestReportDetails(_RunDetails):
    __test__ = False

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    xfailed: int = 0
    xpassed: int = 0
    collected: int | None = None
    duration_s: float = 0.0
    tests: list[TestCaseRecord] = []
    #: failed tests and errors in all; ``failures`` keeps the first of them (renderers say "… and N more")
    failures_total: int | None = None
    output_tail: str = ""
    output_dropped_bytes: int = 0


class CommandRunDetails(_RunDetails):
    duration_s: float = 0.0
    #: output lines streamed as updates
    lines: int = 0
    output_tail: str = ""
    output_dropped_bytes: int = 0


class SearchMatch(_Details):
    path: str
    line: int
    text: str


class SearchDetails(_Details):
    pattern: str
    #: the folder searched, relative to the workspace
    path: str
    glob: str | None = None
    matches: list[SearchMatch] = []
    #: matches found (counting stops at a limit; ``truncated`` says some were not shown)
    total: int = 0
    truncated: bool = False
    files_searched: int = 0
    files_skipped: int = 0
    secrets_skipped: int = 0
    #: environment and cache folders not searched: ``{"path": ".venv/", "kind": "virtualenv", "files": n}``
    left_out: list[dict[str, Any]] = []


DETAILS_MODELS: tuple[type[BaseModel], ...] = (
    FileEditDetails,
    FileWriteDetails,
    TestReportDetails,
    CommandRunDetails,
    SearchDetails,
)


def details_json_schema() -> dict[str, Any]:
    """JSON Schema of the workspace tools' details, one definition per model."""
    from pydantic.json_schema import models_json_schema

    _, schema = models_json_schema([(m, "serialization") for m in DETAILS_MODELS], title="cogcli tool details")
    schema["description"] = (
        "The `details` of the workspace tools' results (tool-result events, thread metadata): "
        "edit_file → FileEditDetails, write_file → FileWriteDetails, run_tests → TestReportDetails "
        "(pytest) or CommandRunDetails (a test command), search_text → SearchDetails. Keys are only ever added."
    )
    return schema


# --- reading a call's details ---------------------------------------------------------------


def diff_text(details: Any) -> str | None:
    """The unified diff a call's details carry (``details.diff``, or details that are a diff), if any."""
    if isinstance(details, dict):
        value = details.get("diff")
        return value if isinstance(value, str) and value.strip() else None
    if isinstance(details, str) and (details.startswith("--- ") or details.startswith("diff --git")):
        return details
    return None


def file_change_diff(details: Any) -> str | None:
    """The diff of details shaped like :class:`FileEditDetails` (one file's change: ``diff``,
    ``added``, ``removed``), or None — a view of many files' changes (git_diff's ``files``) is not one."""
    if not isinstance(details, dict) or "files" in details:
        return None
    if not isinstance(details.get("added"), int) or not isinstance(details.get("removed"), int):
        return None
    return diff_text(details)


#: error codes that say a call meant to change a file left it as it was
FILE_CHANGE_FAILURES = frozenset({"EDIT_NO_MATCH", "EDIT_AMBIGUOUS", "FILE_CHANGED"})
#: error codes that say so of a call whose arguments carry the new text (``new_text``, ``content``)
_WRITE_FAILURES = frozenset({"FILE_NOT_FOUND", "FILE_NOT_TEXT", "FILE_TOO_LARGE", "SECRET_FILE", "TOOL_ERROR"})


def failed_file_change(arguments: Any, error_code: str | None) -> bool:
    """Whether a failed call was a change to a file that did not happen: its error code says so,
    or its arguments carried the text to write and the file could not be had."""
    if error_code in FILE_CHANGE_FAILURES:
        return True
    carries_text = isinstance(arguments, dict) and any(isinstance(arguments.get(k), str) for k in ("new_text", "content"))
    return carries_text and error_code in _WRITE_FAILURES


@dataclass(frozen=True, slots=True)
class Failure:
    name: str
    message: str = ""
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class TestReport:
    """The counts and failures of one test run, however the tool shaped them."""

    __test__ = False  # not a pytest test class

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    #: the failures the details kept (run_tests keeps the first 100 of them)
    failures: tuple[Failure, ...] = field(default_factory=tuple)
    #: how many there were in all (``failures_total``; else the failed and errored tests counted)
    failures_total: int = 0

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.errors == 0

    @property
    def failures_not_listed(self) -> int:
        """Failures the details did not keep: what a renderer says after the ones it shows."""
        return max(0, self.failures_total - len(self.failures))

    def counts(self) -> dict[str, int]:
        return {"passed": self.passed, "failed": self.failed, "errors": self.errors, "skipped": self.skipped}


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
    """The test report a call's details carry (``passed`` and ``failed`` counts, as in
    :class:`TestReportDetails`, or under ``counts``/``summary``), if any."""
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
    errors = _int(counts.get("errors")) or _int(counts.get("error")) or 0
    total = _int(details.get("failures_total"))
    if total is None:  # a shape without the total: the counts say how many failed
        total = failed + errors
    return TestReport(
        passed=passed,
        failed=failed,
        errors=errors,
        skipped=_int(counts.get("skipped")) or 0,
        failures=failures,
        failures_total=max(total, len(failures)),
    )

