"""A ``test_command`` cog cannot read per-test results from: run by the shell, its output streamed
line by line, its exit code the verdict (0 passed, anything else failed). The result says plainly
that there are no counts. A command the shell cannot find (exit 127, ``sh: 1: nosetests: not
found``) is an ``error``, not a test failure: nothing was tested."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from workspace_tools.runners.base import Invocation, Runner, Selection, missing_command
from workspace_tools.runners.report import Report


class CommandRunner(Runner):
    name = "command"
    by_exit_code = True

    def __init__(self, workspace: Any, root: Path, command: str) -> None:
        super().__init__(workspace, root)
        self.command = command
        self.lines = 0

    def invocation(self, selection: Selection) -> Invocation:
        full = " ".join([self.command, *(shlex.quote(a) for a in [*selection.args, *selection.paths])])
        return Invocation(argv=["/bin/sh", "-c", full], shown=full)

    def on_line(self, line: bytes, report: Report) -> None:
        self.lines += 1
        report.started = True

    def judge(self, exit_code: int, report: Report, output: str) -> tuple[str, bool]:
        missing = missing_command(exit_code, output)
        if missing is not None:
            report.notes.append(not_found(missing))
            return "error", False
        return ("passed" if exit_code == 0 else "failed"), False


def not_found(program: str) -> str:
    """The note for a program the shell did not find: nothing was tested."""
    return (f"command not found: {program} — install it, or set test_command "
            "([tool.cog] test_command, --test-command or COG_TEST_COMMAND) to the command that runs the tests.")
