"""Reading a call's details and arguments: everything the run, memory and the renderers read of them.

The shapes are :mod:`cogcli.contract.details`'s models and the loose shapes other tools and MCP servers
return; nothing else sniffs a details dict's keys or an argument's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


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


def changes_view_diff(details: Any) -> str | None:
    """The diff of details that describe the changes of many files (a ``files`` list beside the
    ``diff``, as git_status and git_diff return), or None. Such a diff holds every line of every
    changed and untracked file; renderers draw what the model read of it (a line per file or
    folder) and say where the rest is, not all of it."""
    if isinstance(details, dict) and isinstance(details.get("files"), list):
        return diff_text(details)
    return None


def changed_lines(details: Any) -> list[tuple[str, int, int, str | None]]:
    """The workspace files a command changed with their lines: ``(path, added, removed, why not
    counted)`` (0, 0 and None where ``changed_files`` says nothing of them: outside a run)."""
    files = details.get("changed_files") if isinstance(details, dict) else None
    out: list[tuple[str, int, int, str | None]] = []
    for f in files if isinstance(files, list) else ():
        if isinstance(f, dict) and isinstance(f.get("path"), str) and f["path"]:
            why = f.get("lines_not_counted")
            out.append((f["path"], _int(f.get("added")) or 0, _int(f.get("removed")) or 0, why if isinstance(why, str) else None))
    return out


def sandbox_note(details: Any) -> str | None:
    """The line a test run's details carry when its failures look like the sandbox's doing
    (:attr:`TestReportDetails.sandbox_note`), if any."""
    note = details.get("sandbox_note") if isinstance(details, dict) else None
    return note if isinstance(note, str) and note else None


def environment_note(details: Any) -> str | None:
    """The line a test run's details carry when the interpreter that ran the tests was not the
    project's (``environment.note``: cog's own Python, or the person's python3): shown whatever the outcome."""
    env = details.get("environment") if isinstance(details, dict) else None
    note = env.get("note") if isinstance(env, dict) else None
    return note if isinstance(note, str) and note else None


def run_notes(details: Any) -> list[str]:
    """The notes a test run's details carry (:attr:`TestReportDetails.notes`), in order."""
    notes = details.get("notes") if isinstance(details, dict) else None
    return [n for n in notes if isinstance(n, str) and n] if isinstance(notes, list) else []


def run_outcome(details: Any) -> tuple[str | None, int | None]:
    """(``outcome``, ``exit_code``) of a test run's details (:class:`TestReportDetails`,
    :class:`CommandRunDetails`): None for what they do not say."""
    if not isinstance(details, dict):
        return None, None
    outcome, exit_code = details.get("outcome"), details.get("exit_code")
    return (outcome if isinstance(outcome, str) else None), _int(exit_code)


#: the argument that names the file a call reads or changes, as every workspace tool names it
#: (and the default ``ordered_by`` of a tool, :class:`cogcli.contract.tool.Tool`)
FILE_ARGUMENT = "path"


def file_argument(arguments: Any) -> str | None:
    """The file a call's arguments name (:data:`FILE_ARGUMENT`), if they name one."""
    value = arguments.get(FILE_ARGUMENT) if isinstance(arguments, dict) else None
    return value if isinstance(value, str) else None


#: the argument that names the first line a call reads (read_file's ``offset``, 1-based)
LINE_ARGUMENT = "offset"


def line_argument(arguments: Any) -> int | None:
    """The first line a call's arguments ask for (:data:`LINE_ARGUMENT`), if they ask for one."""
    value = arguments.get(LINE_ARGUMENT) if isinstance(arguments, dict) else None
    return _int(value) if _int(value) is not None and value >= 1 else None


#: error codes that say a call meant to change a file left it as it was
FILE_CHANGE_FAILURES = frozenset({"EDIT_NO_MATCH", "EDIT_AMBIGUOUS", "FILE_CHANGED"})
#: error codes that say so of a call whose arguments carry the new text (``new_text``, ``content``)
_WRITE_FAILURES = frozenset({"FILE_NOT_FOUND", "FILE_NOT_TEXT", "FILE_TOO_LARGE", "SECRET_FILE", "TOOL_ERROR"})
#: the arguments that carry the text a call writes into a file
_NEW_TEXT_ARGUMENTS = ("new_text", "content")


def failed_file_change(arguments: Any, error_code: str | None) -> bool:
    """Whether a failed call was a change to a file that did not happen: its error code says so,
    or its arguments carried the text to write and the file could not be had."""
    if error_code in FILE_CHANGE_FAILURES:
        return True
    carries_text = isinstance(arguments, dict) and any(isinstance(arguments.get(k), str) for k in _NEW_TEXT_ARGUMENTS)
    return carries_text and error_code in _WRITE_FAILURES


def file_touched(arguments: Any, details: Any, *, failed: bool, error_code: str | None = None) -> str | None:
    """The file a call changed — or meant to change and left as it was — by its shape: a call that
    ran with one file's change in its details (:func:`file_change_diff`), or a failed change
    (:func:`failed_file_change`); the file is the one its arguments name. None for any other call."""
    path = file_argument(arguments)
    if path is None:
        return None
    touched = failed_file_change(arguments, error_code) if failed else file_change_diff(details) is not None
    return path if touched else None


@dataclass(frozen=True, slots=True)
class Failure:
    """One failing test as a report names it."""
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



@dataclass(frozen=True, slots=True)
class TestProgress:
    """How far a running test run is, from the details of one of its updates (``run_tests``'s
    per-test update: the counts so far, ``total_so_far``, ``collected`` when the runner knows it,
    ``current``)."""

    __test__ = False  # not a pytest test class

    #: tests finished so far
    done: int
    #: tests the runner collected (None: it does not say)
    collected: int | None = None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    #: the test that just finished
    current: str | None = None


def read_test_progress(details: Any) -> TestProgress | None:
    """The progress a test run's update carries (``total_so_far`` and the counts so far), if any."""
    if not isinstance(details, dict):
        return None
    done = _int(details.get("total_so_far"))
    if done is None:
        return None
    collected = _int(details.get("collected"))
    current = details.get("current")
    return TestProgress(
        done=done,
        collected=collected if collected is not None and collected > 0 else None,
        passed=_int(details.get("passed")) or 0,
        failed=_int(details.get("failed")) or 0,
        errors=_int(details.get("errors")) or 0,
        skipped=_int(details.get("skipped")) or 0,
        current=current if isinstance(current, str) and current else None,
    )


def read_output_lines(details: Any, content: Any) -> list[str] | None:
    """The output lines a command's progress update carries (``details`` ``{"line": first, "lines":
    count}``, the lines in ``content``: :mod:`workspace_tools.shell.output`), or None for any
    other update."""
    if not isinstance(details, dict) or _int(details.get("lines")) is None or _int(details.get("line")) is None:
        return None
    if not isinstance(content, str):
        return None
    return content.split("\n")


def read_job_output(details: Any) -> list[str] | None:
    """The output lines a background command's details carry (``run_command(background=true)``,
    ``command_output``, ``kill_command``: :class:`~cogcli.contract.details.BackgroundJobDetails`'s
    ``job`` and ``output``), or None for other details or none printed."""
    if not isinstance(details, dict) or not isinstance(details.get("job"), str) or not isinstance(details.get("output"), str):
        return None
    text = details["output"].rstrip("\n")
    return text.split("\n") if text.strip() else None


#: how a run's ``tests_error`` starts when its test calls never ran (refused, cut, bad arguments)
TESTS_NOT_RUN = "the tests did not run"


def tests_not_run(tests_error: str | None) -> bool:
    """Whether a run's ``tests_error`` says its tests never ran (rather than did not finish)."""
    return bool(tests_error) and tests_error.startswith(TESTS_NOT_RUN)  # type: ignore[union-attr]


# --- what a change did to the checkers' verdict ---------------------------------------------------


@dataclass(frozen=True)
class DiagnosticsView:
    """A call's diagnostics (:class:`~cogcli.contract.details.DiagnosticsDetails`): the problems the
    change introduced (each ``file:line: rule: message``), how many it fixed and kept, the checkers
    that did not run to the end."""

    new: list[dict[str, Any]]
    fixed: int
    existing: int
    sources: list[str]
    skipped: list[tuple[str, str]]
    #: a file change's verdict (``details.diagnostics``), not the ``diagnostics`` tool's own details
    of_change: bool = False

    def headline(self) -> str:
        """``2 new errors``, ``1 new error, 1 new warning, 1 fixed``, ``no new problems``."""
        errors = sum(1 for d in self.new if d.get("severity", "error") == "error")
        others = len(self.new) - errors
        parts = [f"{errors} new error{'s' if errors != 1 else ''}"] if errors else []
        if others:
            parts.append(f"{others} new warning{'s' if others != 1 else ''}")
        if self.fixed:
            parts.append(f"{self.fixed} fixed")
        return ", ".join(parts) or "no new problems"

    def lines(self, limit: int = 3) -> list[str]:
        """The first ``limit`` new problems as ``file:line: rule: message``, then ``… and N more``."""
        shown = [f"{d.get('file')}:{d.get('line')}: {d.get('rule')}: {d.get('message')}" for d in self.new[:limit]]
        if len(self.new) > limit:
            shown.append(f"… and {len(self.new) - limit} more")
        return shown

    def unable(self) -> list[tuple[str, str]]:
        """The checkers that could not run here, with why (:func:`could_not_run`)."""
        return [(name, why) for name, why in self.skipped if could_not_run(why)]


def could_not_run(why: str) -> bool:
    """Whether a checker's reason for being skipped (``skipped[].why``) is that it could not run here
    (it failed to start in the sandbox, exited with an error, there is no sandbox), rather than the
    person's choice (``turned off``) or its time budget (said when it ran over)."""
    return not why.startswith(("turned off", "took longer", "skipped after changes"))


def read_diagnostics(details: Any) -> DiagnosticsView | None:
    """The diagnostics a file change's details carry (``details.diagnostics``), or the
    ``diagnostics`` tool's own details; None when there are none."""
    if not isinstance(details, dict):
        return None
    found = details.get("diagnostics") if isinstance(details.get("diagnostics"), dict) else details
    if not isinstance(found.get("new"), list) or _int(found.get("existing")) is None:
        return None
    new = [d for d in found["new"] if isinstance(d, dict)]
    fixed = found.get("fixed")
    skipped = [(str(s.get("source")), str(s.get("why"))) for s in found.get("skipped") or [] if isinstance(s, dict)]
    sources = [str(s) for s in found.get("sources") or []]
    return DiagnosticsView(new=new, fixed=len(fixed) if isinstance(fixed, list) else 0, existing=int(found["existing"]),
                           sources=sources, skipped=skipped, of_change=found is not details)


def subagent_step(details: Any) -> tuple[str, str, str] | None:
    """A running ``task`` call's progress (:class:`SubagentStep`): the subagent's call id, its title, its status; else None."""
    if not isinstance(details, dict) or not isinstance(details.get("subagent"), str):
        return None
    found = tuple(details.get(k) for k in ("call_id", "title", "status"))
    return found if all(isinstance(v, str) for v in found) else None  # type: ignore[return-value]


def read_background_job(details: Any) -> tuple[str, bool] | None:
    """``(job id, running)`` when a result's details are a background command's state
    (:class:`cogcli.contract.details.BackgroundJobDetails`: ``run_command(background=true)``,
    ``command_output``, ``kill_command``)."""
    if not isinstance(details, dict):
        return None
    job, running = details.get("job"), details.get("running")
    if not isinstance(job, str) or not isinstance(running, bool) or "command" not in details:
        return None
    return job, running
