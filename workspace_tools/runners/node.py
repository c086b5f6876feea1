"""Node: vitest, jest and ``node --test``, each with cog's own reporter on its command line, and
a package's test script run as written.

Which one is read from ``package.json`` (:func:`test_script`): a ``test`` script that is exactly
one ``vitest``, ``jest`` or ``node --test`` invocation is driven by cog; any other test script
(chained commands, ``npm run``, ``pretest``/``posttest``, ``c8``/``nyc``, another program) runs as
written with ``npm test`` (:class:`ScriptRunner`), judged by its exit code; with no test script,
the runner in devDependencies. vitest and jest run from the project's ``node_modules`` (a missing
install is an error naming ``npm ci``); ``node --test`` needs only Node. The reporters
(:mod:`workspace_tools.runners.node_reporters`) write one JSON line per finished test to the
inherited report pipe, as the pytest plugin does. ``keyword`` is ``-t`` (vitest, jest) or
``--test-name-pattern`` (node).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.errors import ErrorCode, ToolCallError
from workspace_tools.runners.base import (REPORT_FD_ENV, Invocation, Runner, Selection, find_tool, missing_command,
                                          split_command)
from workspace_tools.runners.command import not_found
from workspace_tools.runners.node_reporters import JEST_REPORTER, NODE_TEST_REPORTER, REPORTER_DIR, VITEST_REPORTER
from workspace_tools.runners.report import Report


def read_package_json(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


#: ``npm init``'s placeholder: the package has no tests
_NO_TESTS = re.compile(r"""^\s*echo\s+["']?Error: no test specified["']?\s*&&\s*exit 1\s*$""")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: vitest's first word when it is not a file filter
_VITEST_MODES = ("run", "watch", "dev", "related", "bench", "typecheck", "list", "init")


@dataclass
class TestScript:
    """What the package's ``test`` script asks for.

    ``kind`` is ``vitest``, ``jest`` or ``node`` when the script is exactly one invocation of that
    runner (maybe after ``NAME=value`` settings or ``cross-env``): cog drives it itself, with
    ``args`` (the runner's own words from the script) and ``env``. It is ``npm`` when the script
    must run as written (``why`` says why: it chains commands, npm runs its pre/post scripts, it
    wraps the runner in ``c8``/``nyc``, or it runs a program cog does not drive), and None when the
    package has no tests (no test script and no runner in its devDependencies, or npm's placeholder).
    ``inside`` lists the runners cog knows that the script runs somewhere.
    """

    kind: str | None
    text: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    why: str = ""
    inside: list[str] = field(default_factory=list)
    #: a script of the package sets node's test reporters itself (cog's would clash with them)
    own_reporter: bool = False


def test_script(root: Path) -> TestScript:
    """The package in ``root``'s test script, read (see :class:`TestScript`)."""
    data = read_package_json(root)
    scripts = data.get("scripts") if isinstance(data.get("scripts"), dict) else {}
    text = scripts.get("test")
    if not isinstance(text, str) or not text.strip():
        deps: dict[str, Any] = {}
        for key in ("devDependencies", "dependencies"):
            if isinstance(data.get(key), dict):
                deps.update(data[key])
        for name in ("vitest", "jest"):
            if name in deps:  # no test script: the runner the package installs, as `npx NAME` would run
                return TestScript(name, inside=[name])
        return TestScript(None)
    if _NO_TESTS.match(text):
        return TestScript(None, text=text)
    script = _read_script(scripts, text)
    script.own_reporter = any(isinstance(v, str) and "--test-reporter" in v for v in scripts.values())
    return script


def _read_script(scripts: dict[str, Any], text: str) -> TestScript:
    inside = _runners_in(_script_words(scripts, "test", depth=3))
    hooks = [f"{p}test" for p in ("pre", "post") if isinstance(scripts.get(f"{p}test"), str)]
    if hooks:
        return TestScript("npm", text, why=f"npm runs its {' and '.join(hooks)} script{'s' if len(hooks) > 1 else ''} "
                          "with it", inside=inside)
    words = split_command(text)
    if words is None:
        chained = any(op in text for op in ("&&", "||", ";", "|"))
        why = "it chains commands" if chained else "it uses the shell (variables, redirections or subshells)"
        return TestScript("npm", text, why=why, inside=inside)
    env: dict[str, str] = {}
    while words and (_ASSIGNMENT.match(words[0]) or words[0] == "cross-env"):
        if words[0] != "cross-env":
            name, _, value = words[0].partition("=")
            env[name] = value
        words = words[1:]
    if words[:1] == ["npx"] and len(words) > 1 and not words[1].startswith("-"):
        words = words[1:]
    head = words[0].rsplit("/", 1)[-1] if words else ""
    rest = words[1:]
    if head == "vitest" and (not rest or rest[0].startswith("-") or rest[0] == "run" or rest[0] not in _VITEST_MODES):
        return TestScript("vitest", text, args=rest[1:] if rest[:1] == ["run"] else rest, env=env, inside=inside)
    if head == "jest":
        return TestScript("jest", text, args=rest, env=env, inside=inside)
    if head == "node" and "--test" in rest:
        return TestScript("node", text, args=rest, env=env, inside=inside)
    if head in ("npm", "pnpm", "yarn", "npm-run-all", "run-s", "run-p", "concurrently", "turbo", "lerna", "nx"):
        why = "it runs other scripts"
    elif head in ("c8", "nyc"):
        why = f"it runs the tests under {head} (coverage), whose own checks count"
    else:
        why = f"it runs {head or 'nothing'}, which cog does not drive"
    return TestScript("npm", text, why=why, inside=inside)


def _runners_in(words: list[str]) -> list[str]:
    """The runners cog knows among a script's words (``node`` only with ``--test``)."""
    found = []
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base in ("vitest", "jest") and base not in found:
            found.append(base)
        elif base == "node" and "node" not in found:
            for after in words[i + 1:]:
                if after in ("&&", "||", ";", "|") or after.endswith(";"):
                    break
                if after == "--test":
                    found.append("node")
                    break
    return found


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
    """A failure's text without the stack frames of the test runner itself."""
    if not isinstance(text, str):
        return None
    return "\n".join(line for line in text.splitlines() if not _RUNNER_FRAME.match(line))


def _line_in(text: str | None, file: str) -> int | None:
    """The line of ``file`` in the first stack frame that names it."""
    found = re.search(re.escape(file.removeprefix("file://")) + r":(\d+):\d+", text or "")
    return int(found.group(1)) if found else None


def _script_words(scripts: dict[str, Any], name: str, depth: int) -> list[str]:
    """The words of script ``name``, with the scripts it runs (``npm run test:unit``) in place."""
    script = str(scripts.get(name) or "")
    words = split_command(script) or script.split()
    out: list[str] = []
    for i, word in enumerate(words):
        if depth > 0 and i > 0 and words[i - 1] in ("run", "run-script") and word in scripts and word != name:
            out += _script_words(scripts, word, depth - 1)
        else:
            out.append(word)
    return out


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
            if outcome == "failed" and event.get("file"):
                line = _line_in(text, str(event["file"])) or line
            report.add_test({
                "id": f"{file}::{event.get('name')}" if file else str(event.get("name")),
                "outcome": outcome if outcome in ("passed", "failed", "skipped") else "failed",
                "duration": float(event.get("duration") or 0.0),
                "when": "call",
                "message": event.get("message"),
                "longrepr": text,
                "file": file if outcome == "failed" else None,
                "line": line if outcome == "failed" else None,
                **({"stop": float(event["stop"])} if isinstance(event.get("stop"), (int, float)) else {}),
            })
        elif kind == "collect_error":
            file = self.rel_file(event.get("file")) or "?"
            report.add_test({"id": file, "outcome": "error", "when": "collect", "message": event.get("message"),
                             "longrepr": _trim_stack(event.get("longrepr")), "file": file, "line": None})

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        if not report.started and exit_code != 0:
            raise ToolCallError(f"{self.name} did not start (exit {exit_code}):\n{output[-3000:]}", code=ErrorCode.TOOL_ERROR)
        if report.collect_errors:
            n = report.collect_errors
            report.notes.append(f"{n} test file{'s' if n > 1 else ''} could not be loaded: fix the error shown, then run the tests again.")


class VitestRunner(NodeRunner):
    name = "vitest"
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


class NodeTestRunner(NodeRunner):
    name = "node"
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
    by_exit_code = True

    def __init__(self, workspace: Any, root: Path, command: str | None = None, script: TestScript | None = None) -> None:
        super().__init__(workspace, root)
        #: the test_command as given; None: the package's test script, ``npm test``
        self.command = command
        self.script = script if script is not None else test_script(root)
        self.lines = 0
        self.reported = False
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

    def on_event(self, event: dict[str, Any], report: Report) -> None:
        if event.get("event") == "start":
            self.reported = True
        super().on_event(event, report)

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        if report.collect_errors:
            super().finish(exit_code, report, output)

    def judge(self, exit_code: int, report: Report, output: str) -> tuple[str, bool]:
        counted = self.reported
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
            note = (f"{what} ran as written because {why}: its exit code is the verdict; the counts are those of "
                    "the node --test runs in it")
        else:
            note = f"counts unavailable: {what} ran as written because {why}; judged by its exit code"
        unseen = [k for k in self.script.inside if k in ("vitest", "jest")]
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
