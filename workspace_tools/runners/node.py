"""Node: vitest (1, 2 and 3), jest, mocha and ``node --test``, each with cog's own reporter on its
command line, and a package's test script run as written.

Which one is read from ``package.json`` (:func:`test_script`): a ``test`` script that is exactly
one ``vitest``, ``jest``, ``mocha``, ``tape`` or ``node --test`` invocation is driven by cog (tape:
:mod:`.tap_producers`); any other test script
(chained commands, ``npm run``, ``pretest``/``posttest``, ``c8``/``nyc``, another program) runs as
written with ``npm test`` (:class:`workspace_tools.runners.npm.ScriptRunner`), judged by its exit code; with no test script,
the runner in devDependencies. vitest and jest run from the project's ``node_modules`` (a missing
install is an error naming ``npm ci``); ``node --test`` needs only Node. The reporters
(:mod:`workspace_tools.runners.node_reporters`) write one JSON line per finished test to the
inherited report pipe, as the pytest plugin does. ``keyword`` is ``-t`` (vitest, jest), ``--grep``
(mocha) or ``--test-name-pattern`` (node).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.runners.base import REPORT_FD_ENV, Invocation, Runner, Selection, find_tool
from workspace_tools.runners.failure_text import js_line, message, plain
from workspace_tools.runners.node_reporters import JEST_REPORTER, MOCHA_REPORTER, NODE_TEST_REPORTER, REPORTER_DIR, VITEST_REPORTER
from workspace_tools.runners.node_script import test_script
from workspace_tools.runners.report import Report


_RUNNER_FRAME = re.compile(r"^\s+at .*(node_modules/|node:internal|node:async_hooks|\(<anonymous>\)|new Promise)")


def linked_modules(root: Path, workspace: Path) -> list[Path]:
    """The project's ``node_modules`` when it is a link out of the workspace (a shared install, a
    committed ``node_modules -> /root``), for the sandbox to decide on: it shows what the link leads
    to only when that is in a folder it shows anyway (the installation of the ``node`` found on the
    person's ``PATH``), never because of the link; else the run's result says the link was not shown."""
    modules = root / "node_modules"
    if not modules.is_symlink():
        return []
    try:
        target = modules.resolve()
    except (OSError, RuntimeError):
        return []
    return [modules] if target.is_dir() and not target.is_relative_to(workspace.resolve()) else []


def _trim_stack(text: Any) -> str | None:
    """A failure's text without the stack frames of the test runner itself, nor terminal colours."""
    if not isinstance(text, str):
        return None
    return "\n".join(line for line in plain(text).splitlines() if not _RUNNER_FRAME.match(line))


class NodeRunner(Runner):
    """The base of the three: the report pipe's JSON lines become records."""

    binary = ""

    def __init__(self, workspace: Any, root: Path, base_args: list[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        super().__init__(workspace, root)
        self.base_args = base_args or []
        #: the ``NAME=value`` settings the test script puts before the runner
        self.env = env or {}

    def executable(self) -> str:
        found = find_tool(self.binary, self.root, self.workspace.root)
        if found is None:
            where = self.rel_root or "the workspace"
            raise ToolCallError(
                f"{self.binary} is not installed in {where}/node_modules: run `npm ci` (or `npm install`) in {where} "
                "outside cog, then run the tests again (cog runs the project's own copy, offline)",
                code=ErrorCode.TOOL_ERROR,
            )
        return found

    def on_event(self, event: dict[str, Any], report: Report) -> None:
        kind = event.get("event")
        if kind == "start":
            report.started = True
        elif kind == "test":
            file = self.rel_file(event.get("file"))
            outcome = str(event.get("outcome"))
            text = _trim_stack(event.get("longrepr"))
            line = event.get("line")
            said = event.get("message")
            if outcome == "failed":
                line = js_line(text, event.get("file"), str(self.root)) or line
                said = message(said, event.get("expected"), event.get("actual"), text)
            report.add_test({
                "id": f"{file}::{event.get('name')}" if file else str(event.get("name")),
                "outcome": outcome if outcome in ("passed", "failed", "skipped") else "failed",
                "duration": float(event.get("duration") or 0.0),
                "when": "call",
                "message": said,
                "longrepr": text,
                "file": file if outcome == "failed" else None,
                "line": line if outcome == "failed" else None,
                **({"stop": float(event["stop"])} if isinstance(event.get("stop"), (int, float)) else {}),
            })
        elif kind == "collect_error":
            file = self.rel_file(event.get("file")) or "?"
            text = _trim_stack(event.get("longrepr"))
            report.add_test({"id": file, "outcome": "error", "when": "collect", "message": plain(event.get("message")),
                             "longrepr": text, "file": file, "line": js_line(text, event.get("file"), str(self.root))})

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        if not report.started and exit_code != 0:
            raise ToolCallError(f"{self.name} did not start (exit {exit_code}):\n{output[-3000:]}", code=ErrorCode.TOOL_ERROR)
        if report.collect_errors:
            n = report.collect_errors
            report.notes.append(f"{n} test file{'s' if n > 1 else ''} could not be loaded: fix the error shown, then run the tests again.")


class VitestRunner(NodeRunner):
    name = "vitest"
    found_by = "package.json: a `vitest run` test script (or none, and vitest in devDependencies)"
    needs = "Node.js and the project's node_modules (npm ci)"
    toolchain = "node"
    binary = "vitest"
    refused_options = ("--reporter", "--outputFile", "--config", "-c", "--root", "-r", "--dir", "--ui", "--api",
                       "--watch", "-w", "--inspect", "--inspect-brk", "--browser")

    def invocation(self, selection: Selection) -> Invocation:
        argv = [self.executable(), "run", "--reporter=default", f"--reporter={VITEST_REPORTER}",
                *self.base_args, *selection.args, *selection.paths]
        if selection.keyword is not None:
            argv += ["-t", selection.keyword]
        return Invocation(argv=argv, env={**self.env, "FORCE_COLOR": "0", "NO_COLOR": "1"}, report_fd_env=REPORT_FD_ENV,
                          readable=[REPORTER_DIR, *linked_modules(self.root, self.workspace.root)])


class JestRunner(NodeRunner):
    name = "jest"
    found_by = "package.json: a `jest` test script (or none, and jest in devDependencies)"
    needs = "Node.js and the project's node_modules (npm ci)"
    toolchain = "node"
    binary = "jest"
    refused_options = ("--reporters", "--outputFile", "--json", "--config", "-c", "--rootDir", "--testResultsProcessor",
                       "--watch", "--watchAll", "--globalSetup", "--globalTeardown", "--setupFiles", "--setupFilesAfterEnv",
                       "--roots", "--testRunner", "--resolver", "--transform")

    def invocation(self, selection: Selection) -> Invocation:
        argv = [self.executable(), *self.base_args, *selection.args, *selection.paths]
        if selection.keyword is not None:
            argv += ["-t", selection.keyword]
        # last: --reporters takes every word after it as one more reporter
        argv += ["--reporters=default", f"--reporters={JEST_REPORTER}"]
        return Invocation(argv=argv, env={**self.env, "FORCE_COLOR": "0", "NO_COLOR": "1"}, report_fd_env=REPORT_FD_ENV,
                          readable=[REPORTER_DIR, *linked_modules(self.root, self.workspace.root)])


class MochaRunner(NodeRunner):
    name = "mocha"
    found_by = "package.json: a `mocha` test script (or none, and mocha in devDependencies)"
    needs = "Node.js and the project's node_modules (npm ci)"
    toolchain = "node"
    binary = "mocha"
    refused_options = ("--reporter", "-R", "--reporter-option", "--reporter-options", "-O", "--config", "--package",
                       "--require", "-r", "--ui", "-u", "--watch", "-w", "--inspect", "--inspect-brk", "--no-config")

    def invocation(self, selection: Selection) -> Invocation:
        argv = [self.executable(), *self.base_args, *selection.args, *selection.paths]
        if selection.keyword is not None:
            argv += ["--grep", selection.keyword]
        configs = [p for p in self.root.glob(".mocharc*") if p.is_file()]
        if selection.paths and any('spec' in p.read_text(encoding="utf-8", errors="replace") for p in configs):
            self.notes.append("mocha adds the paths given to the spec its .mocharc names, so those files ran too: "
                              "pass keyword (mocha's --grep) to run fewer tests.")
        argv += ["--reporter", str(MOCHA_REPORTER)]  # last: it replaces any reporter the project's config names
        return Invocation(argv=argv, env={**self.env, "FORCE_COLOR": "0", "NO_COLOR": "1"}, report_fd_env=REPORT_FD_ENV,
                          readable=[REPORTER_DIR, *linked_modules(self.root, self.workspace.root)])


class NodeTestRunner(NodeRunner):
    name = "node"
    found_by = "package.json: a `node --test` test script"
    needs = "Node.js 20 or newer"
    toolchain = "node"
    binary = "node"
    refused_options = ("--test-reporter", "--test-reporter-destination", "--import", "--require", "-r", "--loader",
                       "--experimental-loader", "--eval", "-e", "--print", "-p", "--inspect", "--inspect-brk", "--watch")

    def executable(self) -> str:
        found = shutil.which("node")
        if found is None:
            raise ToolCallError("node is not installed: install Node.js 20 or newer (apt install nodejs)", code=ErrorCode.TOOL_ERROR)
        return found

    def script_args(self) -> list[str]:
        """The arguments after ``node`` in the package's own test script (its files, its flags) when
        the script is one ``node --test``; else plain ``--test``."""
        script = test_script(self.root)
        return script.args if script.kind == "node" else ["--test"]

    def invocation(self, selection: Selection) -> Invocation:
        own = self.script_args() if not self.base_args else self.base_args
        own = [w for w in own if not w.startswith("--test-reporter")]  # cog's reporters replace the script's
        flags = [w for w in own if w.startswith("-")]
        files = [w for w in own if not w.startswith("-")]
        argv = [self.executable(), *flags, "--test-reporter=spec", "--test-reporter-destination=stdout",
                f"--test-reporter={NODE_TEST_REPORTER}", "--test-reporter-destination=stdout", *selection.args]
        if selection.keyword is not None:
            argv.append(f"--test-name-pattern={selection.keyword}")
        argv += selection.paths or files
        return Invocation(argv=argv, env={**self.env, "FORCE_COLOR": "0", "NO_COLOR": "1"}, report_fd_env=REPORT_FD_ENV,
                          readable=[REPORTER_DIR, *linked_modules(self.root, self.workspace.root)])
