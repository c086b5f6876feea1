"""A ``test_command`` cog cannot read per-test results from: run by the shell, its output streamed
line by line, its exit code the verdict (0 passed, anything else failed). The result says plainly
that there are no counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workspace_tools.runners.base import Invocation, Runner, Selection
from workspace_tools.runners.report import Report


class CommandRunner(Runner):
    name = "command"

    def __init__(self, workspace: Any, root: Path, command: str) -> None:
        super().__init__(workspace, root)
        self.command = command
        self.lines = 0

    def invocation(self, selection: Selection) -> Invocation:
        import shlex

        full = " ".join([self.command, *(shlex.quote(a) for a in [*selection.args, *selection.paths])])
        return Invocation(argv=["/bin/sh", "-c", full], shown=full)

    def on_line(self, line: bytes, report: Report) -> None:
        self.lines += 1
        report.started = True
