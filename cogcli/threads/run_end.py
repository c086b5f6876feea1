"""How a run ended, computed once from its results: :class:`RunEnd`.

What the run changed (lines added and removed per file) and how its tests went are worked out
here, from the finished calls and what their tools declare (``writes_files``, ``reports_tests``),
never from tool names. The ``finish`` event, the thread's ``run_end`` entry and ``RunResult`` are
all made from the one :class:`RunEnd`, and a stored thread's ``finish`` is redrawn from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field

from cogcli.contract.details_readers import TESTS_NOT_RUN, changed_lines, diff_text, file_argument, read_test_report, run_outcome
from cogcli.contract.diffstat import diff_stats
from cogcli.contract.errors import ErrorCode
from cogcli.threads.entries import RunEndEntry, RunEndFields
from cogcli.wire.events import FileChange, FinishEvent, RunStatus, Usage
from cogcli.contract.result import ToolResult
from cogcli.contract.tool import Tool


class RunEnd(RunEndFields):
    usage: Usage = Field(default_factory=Usage)

    @classmethod
    def of(
        cls,
        status: RunStatus,
        results: Sequence[ToolResult],
        tools: Iterable[Tool[Any]] | Mapping[str, Tool[Any]],
        **fields: Any,
    ) -> RunEnd:
        """The end of a run whose calls ended with ``results``, made by ``tools``."""
        index = tools if isinstance(tools, Mapping) else {t.name: t for t in tools}
        tests, tests_error = test_outcome(results, index)
        return cls(status=status, files_changed=files_changed(results, index), tests=tests, tests_error=tests_error, **fields)

    def finish_event(self, message_id: str, thread_id: str) -> FinishEvent:
        return FinishEvent(
            message_id=message_id, thread_id=thread_id, **self.model_dump(include=set(FinishEvent.model_fields))
        )

    def entry(self, message_id: str) -> RunEndEntry:
        return RunEndEntry(message_id=message_id, **self.model_dump(include=set(RunEndEntry.model_fields)))

    @classmethod
    def from_entry(cls, entry: RunEndEntry) -> RunEnd:
        data = entry.model_dump(include=set(cls.model_fields), exclude_none=True)
        return cls(**data)


def files_changed(
    results: Iterable[ToolResult], tools: Iterable[Tool[Any]] | Mapping[str, Tool[Any]] = ()
) -> list[FileChange]:
    """Lines added and removed per path, summed over the successful calls that changed files: those
    whose details carry a diff, of tools that declare they write files (a tool that only shows a
    diff, like git_diff, changed nothing). A result of a tool not in ``tools`` counts when it carries a diff.
    The files a command changed (``changed_files``) count with the lines its record counted (in a
    run: a text file's, as a diff counts them), or say why there are none (``lines_not_counted``)."""
    index = tools if isinstance(tools, Mapping) else {t.name: t for t in tools}
    totals: dict[str, FileChange] = {}
    for r in results:
        tool = index.get(r.name)
        if r.error is not None or (tool is not None and not tool.writes_files):
            continue
        for path, added, removed, why in changed_lines(r.details) if tool is not None else ():
            change = totals.setdefault(path, FileChange(path=path))
            change.added += added
            change.removed += removed
            change.lines_not_counted = why or change.lines_not_counted
        diff = diff_text(r.details) if isinstance(r.details, dict) else None
        if diff is None:
            continue
        for stat in diff_stats(diff):
            path = stat.path or file_argument(r.arguments)
            if path is None:
                continue
            change = totals.setdefault(path, FileChange(path=path))
            change.added += stat.added
            change.removed += stat.removed
    return list(totals.values())


#: a call that ended with one of these never started: it is no test run
_NEVER_RAN = frozenset({ErrorCode.DENIED, ErrorCode.OUTPUT_CUT, ErrorCode.INVALID_ARGUMENTS, ErrorCode.TOOL_NOT_FOUND})


def test_outcome(results: Sequence[ToolResult], tools: Mapping[str, Tool[Any]]) -> tuple[dict[str, int] | None, str | None]:
    """(the counts of the last test run, why it did not finish): from the last call of a tool that
    declares ``reports_tests`` and ran — its report's counts when it ran, its error when it failed.
    A call that never started (refused, cut, bad arguments) is no test run: when no call ran at
    all, the reason is :data:`TESTS_NOT_RUN` and the first such call's error."""
    never_ran: str | None = None
    for r in reversed(results):
        tool = tools.get(r.name)
        if tool is None or not tool.reports_tests or r.error_code == "PLAN_MODE":  # refused in plan mode: no test run
            continue
        if r.error is not None and r.error_code in _NEVER_RAN:
            never_ran = f"{TESTS_NOT_RUN}: {r.error}"
            continue
        if r.error is not None:
            return None, r.error
        report = read_test_report(r.details)
        counts = report.counts() if report is not None else None
        return counts, _not_passed(r.details, counts)
    return None, never_ran


#: what a test run's ``outcome`` (other than passed, or failed with failures counted) means
_OUTCOME_WORDS = {
    "error": "the test run had errors (a collection error, or the runner stopped)",
    "build-failed": "the tests did not build",
    "no-tests": "no tests ran",
    "failed": "the test command failed",
}


def _not_passed(details: Any, counts: dict[str, int] | None) -> str | None:
    """Why a run whose report counts no failure still did not pass (its ``outcome`` says so:
    a build that failed, no tests, a plain command's exit code), or None."""
    outcome, exit_code = run_outcome(details)
    if outcome in (None, "passed") or (outcome == "failed" and counts is not None and counts.get("failed", 0) > 0):
        return None
    words = _OUTCOME_WORDS.get(str(outcome), f"the tests ended {outcome}")
    return words + (f" (exit {exit_code})" if exit_code is not None and exit_code != 0 else "")


test_outcome.__test__ = False  # type: ignore[attr-defined]  # a function named test_*, not a test
