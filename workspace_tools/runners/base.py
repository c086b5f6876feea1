"""A test runner as ``run_tests`` drives it: the command to start, what it writes, how it ended.

Each runner module (:mod:`.pytest`, :mod:`.go`, :mod:`.node`, :mod:`.cargo`, :mod:`.plain_command`) has
one :class:`Runner` subclass. The tool asks it for an :class:`Invocation` (argv, working folder,
environment), runs that as a process group (:func:`workspace_tools.host.processes.run_process_group`),
feeds it every output line (:meth:`Runner.on_line`) and, when the runner writes one, every JSON
line of the inherited report pipe (:meth:`Runner.on_event`), then lets it finish the report from
the exit code (:meth:`Runner.finish`). Runners never call ``context.update()`` or build results:
they only fill a :class:`~workspace_tools.runners.report.Report`.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.workspace.paths import Workspace
from workspace_tools.runners.report import Report

#: the variable naming the inherited pipe fd a reporter writes its JSON lines to (Node reporters)
REPORT_FD_ENV = "COGCLI_REPORT_FD"


@dataclass
class Selection:
    """What to run, as the model or person asked: paths relative to the runner's folder, a name
    filter, and arguments passed through to the runner (already validated)."""

    paths: list[str] = field(default_factory=list)
    keyword: str | None = None
    args: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = list(self.paths)
        if self.keyword:
            parts.append(f"-k {self.keyword}")
        parts += self.args
        return " ".join(parts) or "all tests"


@dataclass
class Invocation:
    """How a test runner is started: its argv and environment."""
    argv: list[str]
    #: variables on top of the child environment (``_child_env``'s ``extra``)
    env: dict[str, str] = field(default_factory=dict)
    #: the env var that gets the number of the report pipe's write end; None: no pipe
    report_fd_env: str | None = None
    #: paths the command must read inside the sandbox (only those under /tmp need a bind)
    readable: list[Path] = field(default_factory=list)
    #: Python environments outside the workspace the host confirmed, shown read-only wherever they
    #: are (:func:`workspace_tools.sandbox.python_binds.environments`)
    environments: list[Path] = field(default_factory=list)
    #: (host folder, folder inside the sandbox) bound writable; the host one is created first
    writable: list[tuple[Path, str]] = field(default_factory=list)
    #: variables set only when the command runs in the sandbox (a writable cache's place)
    sandbox_env: dict[str, str] = field(default_factory=dict)
    #: the command as people should see it, when argv is not it (a shell command)
    shown: str | None = None
    #: a named pipe the reporters open by path (the runner names it in ``env``), for a command that
    #: does not hand an inherited fd down to them (``npm test``: npm passes only stdin, stdout, stderr)
    report_fifo: Path | None = None


class Runner:
    """One test runner rooted at one folder of the workspace."""

    #: the runner's name in details, config (``runner = "go"``) and messages
    name: ClassVar[str] = ""
    #: how it is found in a folder, and what it needs installed (``cog tools`` says both)
    found_by: ClassVar[str] = ""
    needs: ClassVar[str] = ""
    #: the host program whose installation the sandbox shows (read-only) for it to build and run
    #: offline (``cargo``, ``go``, ``node``); None: a Python runner, run in the project's environment
    toolchain: ClassVar[str | None] = None
    #: exit codes that mean "nothing was collected"
    no_tests_codes: ClassVar[tuple[int, ...]] = ()
    #: options refused in ``args``: they change where output goes or load code from elsewhere
    refused_options: ClassVar[tuple[str, ...]] = ()
    #: whether a one-letter option may have its value glued on (``-pfoo``); Go's flags are words (``-count``)
    glued_short_options: ClassVar[bool] = True
    #: True for a command judged by its exit code (each output line is an update); see :meth:`judge`
    by_exit_code: ClassVar[bool] = False

    def __init__(self, workspace: Workspace, root: Path) -> None:
        self.workspace = workspace
        self.root = root
        self._rel_files: dict[str, str | None] = {}
        #: lines for the report's notes, decided before the run (why this runner runs)
        self.notes: list[str] = []

    @property
    def rel_root(self) -> str:
        rel = self.workspace.relative(self.root)
        return "" if rel == "." else rel

    def label(self) -> str:
        return f"{self.name} in {self.rel_root}/" if self.rel_root else self.name

    def invocation(self, selection: Selection) -> Invocation:
        raise NotImplementedError

    def on_line(self, line: bytes, report: Report) -> None:
        """One line of the runner's output (stdout and stderr merged)."""

    def on_event(self, event: dict[str, Any], report: Report) -> None:
        """One JSON line of the report pipe."""

    def echoes(self, line: bytes) -> bool:
        """Whether the output line just read (:meth:`on_line`) is an update of its own, for a runner
        judged by its exit code (:attr:`by_exit_code`); False when it was read into the report."""
        return True

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        """The run ended: complete the report (pending build errors, notes) or raise a
        :class:`ToolCallError` when the runner could not run the tests at all."""

    def judge(self, exit_code: int, report: Report, output: str) -> tuple[str, bool]:
        """``(outcome, counted)`` of a run judged by its exit code (:attr:`by_exit_code`): counted
        when per-test results came anyway. Only called for those runners."""
        return ("passed" if exit_code == 0 else "failed"), False

    def close(self) -> None:
        """The run is over (or never started): remove what :meth:`invocation` made."""

    def test_id(self, path_in_root: str, name: str = "") -> str:
        """A test id relative to the workspace: ``backend/tests/test_a.py::test_x``."""
        path = os.path.normpath(os.path.join(self.rel_root, path_in_root)) if path_in_root else (self.rel_root or ".")
        return f"{path}::{name}" if name else path

    def rel_file(self, path: str | None) -> str | None:
        """A file the runner named (absolute or relative to its folder) relative to the workspace."""
        if not path:
            return None
        if path in self._rel_files:  # asked once per test: resolve() costs syscalls
            return self._rel_files[path]
        self._rel_files[path] = rel = self._rel_file(path)
        return rel

    def _rel_file(self, path: str) -> str | None:
        full = Path(path) if os.path.isabs(path) else self.root / path
        try:
            return full.resolve().relative_to(self.workspace.root).as_posix()
        except ValueError:
            return path


def find_tool(name: str, root: Path, workspace_root: Path) -> str | None:
    """``node_modules/.bin/NAME`` in ``root`` or a folder above it inside the workspace."""
    here = root
    while True:
        candidate = here / "node_modules" / ".bin" / name
        if candidate.exists():
            return str(candidate)
        if here == workspace_root or here.parent == here:
            return None
        here = here.parent


_NOT_FOUND = re.compile(r"(?:^|: )([\w.+@/-]{1,200}): (?:command )?not found\s*$", re.MULTILINE)


def missing_command(exit_code: int, output: str) -> str | None:
    """The program the shell could not find (exit 127: ``sh: 1: jest: not found``), else None."""
    if exit_code != 127:
        return None
    found = _NOT_FOUND.findall(output[-4000:])
    return found[-1] if found else None


def split_command(command: str) -> list[str] | None:
    """``command`` as argv when it is one plain command (no pipes, ``&&``, redirections, variables)."""
    if any(ch in command for ch in "|&;<>()$`\n"):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def check_args(args: Sequence[str], runner: Runner) -> list[str]:
    """The pass-through arguments, or a :class:`ToolCallError` naming the one refused and why.

    Refused: options that change where the runner writes its output or its report, or that load
    code from outside the workspace (each runner lists them), and any path outside the workspace.
    """
    out: list[str] = []
    for i, arg in enumerate(args):
        if not isinstance(arg, str) or "\x00" in arg:
            raise ToolCallError("args must be strings", code=ErrorCode.INVALID_ARGUMENTS)
        name, eq, value = arg.partition("=")
        disabling = arg.startswith("-pno:") or (arg == "-p" and i + 1 < len(args) and args[i + 1].startswith("no:"))
        if arg.startswith("-") and not disabling:
            for refused in runner.refused_options:
                glued = runner.glued_short_options and len(refused) == 2 and not arg.startswith("--")
                if name == refused or (glued and arg.startswith(refused)):
                    raise ToolCallError(
                        f"args: {refused} is not allowed for {runner.name}: it changes where output goes or loads "
                        "code from outside the workspace, and cog reads the runner's results itself. "
                        "Leave it out (select tests with paths and keyword).",
                        code=ErrorCode.INVALID_ARGUMENTS,
                    )
            candidate = value if eq else None
        else:
            candidate = arg
        if candidate and ("/" in candidate or candidate.startswith("..")):
            path_part = candidate.split("::", 1)[0]
            if os.path.isabs(path_part) or ".." in Path(path_part).parts:
                runner.workspace.resolve(os.path.join(runner.rel_root or ".", path_part) if not os.path.isabs(path_part) else path_part)
        out.append(arg)
    return out
