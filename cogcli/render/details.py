"""Reading a call's ``details`` for display: unified diffs and test reports.

Renderers never know a tool's code, only the details shapes of :mod:`cogcli.contract.details` (published
by ``cog schema details``) through its accessors: a unified diff (a string, or a dict with a
``diff`` string), a view of many files' changes, a test report (``passed`` / ``failed`` counts and
the tests that failed), a sandbox note, the file a call changed. Anything else is not drawn.
"""

from __future__ import annotations

# the renderers' readers of details and arguments: declared in cogcli.contract.details_readers, nowhere else
from cogcli.contract.details_readers import (
    Failure,
    TestProgress,
    TestReport,
    changes_view_diff,
    diff_text,
    environment_note,
    file_argument,
    file_touched,
    read_diagnostics,
    read_output_lines,
    read_test_progress,
    read_test_report,
    run_notes,
    run_outcome,
    sandbox_note,
    tests_not_run,
)
from cogcli.contract.diffstat import DiffStat, diff_stats

__all__ = [
    "read_diagnostics",
    "read_output_lines",
    "tests_not_run",
    "ERROR_LINE_LIMIT",
    "MAX_FAILURES_SHOWN",
    "DiffStat",
    "Failure",
    "TestProgress",
    "TestReport",
    "changes_view_diff",
    "diff_stats",
    "diff_text",
    "environment_note",
    "file_argument",
    "file_touched",
    "first_line",
    "read_test_progress",
    "read_test_report",
    "run_notes",
    "run_outcome",
    "sandbox_note",
]

#: how many failures a test report block lists before "… and N more"
MAX_FAILURES_SHOWN = 10
#: characters of an error's first line shown: errors and hints are wrapped, never cut, but a
#: message of one endless line is not printed whole (``--json`` has it all)
ERROR_LINE_LIMIT = 2000


def first_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
