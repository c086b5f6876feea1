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


def first_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
