"""Reading a call's ``details`` for display: unified diffs and test reports.

Renderers never know a tool's code, only the details shapes of :mod:`cogcli.details` (published
by ``cog schema details``): a unified diff (a string, or a dict with a ``diff`` string) or a test
report (``passed`` / ``failed`` counts and the tests that failed). Anything else is not drawn.
"""

from __future__ import annotations

from cogcli.details import Failure, TestReport, diff_text, read_test_report  # noqa: F401 (the renderers' readers)
from cogcli.diffstat import DiffStat, diff_stats  # noqa: F401 (re-exported for the renderers)

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


def changes_view_diff(details: object) -> str | None:
    """The diff of details that describe the changes of many files (a ``files`` list beside the
    ``diff``, as git_status and git_diff return), or None. Such a diff holds every line of every
    changed and untracked file; renderers draw what the model read of it (a line per file or
    folder) and say where the rest is, not all of it."""
    if isinstance(details, dict) and isinstance(details.get("files"), list):
        return diff_text(details)
    return None
