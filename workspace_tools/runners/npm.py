"""A package's test script run as written with ``npm test`` (:class:`ScriptRunner`), judged by its
exit code; the tests of every ``node --test`` it starts counted through cog's reporter, and any
TAP it prints (tape under nyc, a ``tap`` reporter) read as it comes (:mod:`.tap_producers`)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from workspace_tools.runners.base import Invocation, Selection, missing_command, split_command
from workspace_tools.runners.plain_command import not_found
from workspace_tools.runners.node import NodeRunner, linked_modules
from workspace_tools.runners.node_reporters import NODE_TEST_REPORTER, REPORTER_DIR
from workspace_tools.runners.node_script import TestScript, read_package_json, test_script
from workspace_tools.runners.report import Report
from workspace_tools.runners.tap_producers import TapReader


#: the variable naming the named pipe cog's ``node --test`` reporter opens (a script run by npm)
REPORT_PATH_ENV = "COGCLI_REPORT_PATH"
#: node's test reporters, set through NODE_OPTIONS for every ``node --test`` a script starts
_REPORTER_OPTIONS = ("--test-reporter=spec", "--test-reporter-destination=stdout",
                     f"--test-reporter={NODE_TEST_REPORTER}", "--test-reporter-destination=stdout")
_node_options_ok: dict[str, bool] = {}


def reporters_in_node_options(node: str) -> bool:
    """Whether this ``node`` takes ``--test-reporter`` in NODE_OPTIONS (Node 20 does; an older one
    refuses to start at all, which would fail the whole script): asked once per node."""
    if node not in _node_options_ok:
        import subprocess

        try:
            done = subprocess.run([node, "-e", ""], env={"PATH": os.environ.get("PATH", ""), "NODE_OPTIONS": _node_options()},
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
            _node_options_ok[node] = done.returncode == 0
        except (OSError, subprocess.SubprocessError):
            _node_options_ok[node] = False
    return _node_options_ok[node]


def _node_options() -> str:
    def quoted(option: str) -> str:
        name, _, value = option.partition("=")
        if not re.search(r'[\s"\\]', value):
            return option
        return name + '="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return " ".join(quoted(o) for o in _REPORTER_OPTIONS)


def shown_script(text: str) -> str:
    """A script (workspace text) as a note quotes it: printable, on one line, bounded."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return flat if len(flat) <= 200 else flat[:199] + "…"


class ScriptRunner(NodeRunner):
    """The package's test script run as written (``npm test``, or a ``test_command`` such as
    ``npm run test:ci``), judged by its exit code.

    Per-test results come from every ``node --test`` the script starts: cog's reporter is set in
    NODE_OPTIONS and writes to a named pipe (npm hands its scripts no inherited fd). vitest and
    jest take a reporter only on their command line, so their tests are not counted; the result
    says so. A program the shell cannot find (exit 127) is an ``error`` naming it.
    """

    name = "npm"
    found_by = ("package.json: any other test script (chained commands, pre/post scripts, c8, another program): "
                "`npm test` as written, its exit code the verdict")
    needs = "Node.js and npm on PATH, and the project's node_modules (npm ci)"
    toolchain = "node"
    by_exit_code = True

    def __init__(self, workspace: Any, root: Path, command: str | None = None, script: TestScript | None = None) -> None:
        super().__init__(workspace, root)
        #: the test_command as given; None: the package's test script, ``npm test``
        self.command = command
        self.script = script if script is not None else test_script(root)
        self.lines = 0
        self.reported = False
        #: the TAP the script prints (tape, a ``tap`` reporter): its test points are counted
        self.tap = TapReader(self.rel_file)
        self._tap_line = False
        #: why cog's node --test reporter is not set for the script ("" when it is)
        self.not_injected = ""
        self._fifo_dir: Path | None = None

    def label(self) -> str:
        return f"npm test in {self.rel_root}/" if self.rel_root else "npm test"

    def invocation(self, selection: Selection) -> Invocation:
        extra = [*selection.args, *selection.paths]
        if self.command is None:
            words = ["npm", "test", *(["--", *extra] if extra else [])]
        else:
            words = split_command(self.command) or []
            if extra and words[:1] == ["npm"] and "--" not in words:
                extra = ["--", *extra]
            words = [*words, *extra] if words else []
        shown = shlex.join(words) if words else " ".join([str(self.command), *(shlex.quote(a) for a in extra)])
        program = shutil.which(words[0]) if words else None
        # a program that is not installed runs through the shell, which says so (exit 127)
        argv = [program, *words[1:]] if program else ["/bin/sh", "-c", shown]
        env = {"FORCE_COLOR": "0", "NO_COLOR": "1", "npm_config_update_notifier": "false", "npm_config_fund": "false",
               "npm_config_audit": "false"}
        inv = Invocation(argv=argv, env=env, shown=shown, readable=linked_modules(self.root, self.workspace.root))
        node = shutil.which("node")
        if self.script.own_reporter:
            self.not_injected = "the package sets node's test reporters itself"
        elif node is None or not reporters_in_node_options(node):
            self.not_injected = "this node takes no --test-reporter in NODE_OPTIONS"
        else:
            self.not_injected = ""
        if not self.not_injected:
            self._fifo_dir = Path(tempfile.mkdtemp(prefix="cog-report-"))
            fifo = self._fifo_dir / "report"
            os.mkfifo(fifo, 0o600)
            env["NODE_OPTIONS"] = _node_options()
            env[REPORT_PATH_ENV] = str(fifo)
            inv.report_fifo = fifo
            # read-only in the sandbox: a named pipe opens for writing there all the same
            inv.readable = [REPORTER_DIR, self._fifo_dir, *inv.readable]
        return inv

    def on_line(self, line: bytes, report: Report) -> None:
        self.lines += 1
        self._tap_line = self.tap.line(line.decode("utf-8", "replace"), report)

    def echoes(self, line: bytes) -> bool:
        """A line of TAP is not echoed: its test points are the updates (a TAP stream is long)."""
        return not self._tap_line

    def on_event(self, event: dict[str, Any], report: Report) -> None:
        if event.get("event") == "start":
            self.reported = True
        super().on_event(event, report)

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        self.tap.end(report)
        if report.collect_errors:
            super().finish(exit_code, report, output)

    def judge(self, exit_code: int, report: Report, output: str) -> tuple[str, bool]:
        counted = self.reported or self.tap.found
        what = f"`{shown_script(self.command)}` (the test_command)" if self.command is not None else (
            f"the test script (`{shown_script(self.script.text)}`)")
        missing = missing_command(exit_code, output)
        if missing is not None:
            report.notes.append(self.not_found(missing))
            outcome = "error"
        elif exit_code == 0:
            outcome = "passed"
            if report.counts["failed"] or report.counts["errors"]:
                report.notes.append(f"{what} exited 0 although tests it ran failed: it ignores their exit code.")
        else:
            outcome = "failed"
            if counted and not report.problems():
                report.notes.append(f"{what} exited {exit_code} although every test cog counted passed: another "
                                    "command in it failed (its output is below).")
        why = "it is the test_command" if self.command is not None else self.script.why
        if counted:
            source = " and ".join(x for x, on in (("the node --test runs in it", self.reported),
                                                   ("the TAP it printed", self.tap.found)) if on)
            note = f"{what} ran as written because {why}: its exit code is the verdict; the counts are those of {source}"
        else:
            note = f"counts unavailable: {what} ran as written because {why}; judged by its exit code"
        unseen = [k for k in self.script.inside if k in ("vitest", "jest", "mocha")]
        if unseen:
            note += (f" ({' and '.join(unseen)} take{'s' if len(unseen) == 1 else ''} cog's reporter only on the "
                     f"command line, so {'its' if len(unseen) == 1 else 'their'} tests are not counted here)")
        if "node" in self.script.inside and self.not_injected:
            note += f" (its node --test runs are not counted: {self.not_injected})"
        report.notes.append(note + ".")
        return outcome, counted

    def not_found(self, program: str) -> str:
        where = self.rel_root or "the workspace"
        if program == "npm":
            return ("command not found: npm — install Node.js with npm (apt install nodejs npm), or set test_command "
                    "to the command that runs the tests.")
        data = read_package_json(self.root)
        deps = {**(data.get("dependencies") or {}), **(data.get("devDependencies") or {})} if all(
            isinstance(data.get(k, {}), dict) for k in ("dependencies", "devDependencies")) else {}
        if program in deps or program in self.script.inside:
            return (f"command not found: {program} — the test script runs it from node_modules/.bin, "
                    f"which is not installed: run `npm ci` (or `npm install`) in {where} outside cog, then run the "
                    "tests again.")
        return not_found(program)

    def close(self) -> None:
        if self._fifo_dir is not None:
            shutil.rmtree(self._fifo_dir, ignore_errors=True)
            self._fifo_dir = None
