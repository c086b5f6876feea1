"""The ``run_tests`` tool: finds the workspace's test runner(s), runs them, and streams one update
per test as it finishes.

Runners (:mod:`workspace_tools.runners`): pytest (cog's plugin), Go (``go test -json``), vitest,
jest and ``node --test`` (cog's reporters), cargo (``cargo test``'s per-test lines). Each is read
through its own machine-readable stream and fills the same report, so every runner gives the same
updates and the same result:

- an update per finished test: ``content`` ``"<id> <outcome>"``; ``details`` the counts so far
  (``passed``, ``failed``, ``skipped``, ``errors``, ``xfailed``, ``xpassed``), ``total_so_far``,
  ``collected`` (when the runner knows it), ``current`` (the test's id) and ``runner``;
- a result whose ``details`` are described in :mod:`workspace_tools.runners.finished` (``outcome``,
  ``exit_code``, counts, ``failures`` with file and line, bounded ``tests``, ``report_file``, …).

Which runner: ``test_command`` when set (driven through cog's stream when it names a runner cog
knows, else run by the shell with its exit code as the only verdict), else ``runner`` when set,
else every project found in the workspace; ``paths`` pick the project(s) they point into. Failing
tests are not a tool error: the tool worked and reports them. A runner that cannot start (not
installed, a broken conftest, a missing module offline) is. A timeout or an abort kills the whole
process tree (:mod:`workspace_tools.host.processes`); a timeout reports the counts reached so far.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import ToolOutputResult, tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.sandbox.bwrap import SandboxMode, sandbox_prefix, writable_paths
from workspace_tools.sandbox.leftovers import Removed, removed_text, strip_after
from workspace_tools.sandbox.hints import failure_hint
from workspace_tools.runners.toolchains import missing_program, toolchain_homes
from workspace_tools.workspace.paths import Workspace
from workspace_tools.host.processes import LineSplitter, OutputTail, run_process_group
from workspace_tools.runners import RUNNER_NAMES, RUNNERS, check_args, detect, forced, from_command, route
from workspace_tools.runners.base import Invocation, Runner, Selection
from workspace_tools.runners.failure_text import plain as uncoloured
from workspace_tools.runners.npm import ScriptRunner, shown_script
from workspace_tools.runners.pytest import workspace_python  # noqa: F401 (kept importable from here)
from workspace_tools.runners.report import Report, Section, counts_text
from workspace_tools.runners.finished import details as make_details
from workspace_tools.runners.finished import model_text, summary_words, write_report
from workspace_tools.sandbox.environment import PassedEnv

if TYPE_CHECKING:
    from cogcli.contract.context import ToolContext

LABEL = "Run tests"
ICON = "flask-conical"
#: bytes of output kept (the tail) for the result
OUTPUT_TAIL_BYTES = 64 * 1024


class RunTestsParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    paths: list[str] | None = Field(
        default=None,
        description="Test files, directories, packages or test ids (tests/test_a.py::test_x), relative to the "
        "workspace root. Omit to run all tests.",
    )
    keyword: str | None = Field(
        default=None,
        description="Only run tests whose name matches: pytest -k expression, go -run regex, vitest/jest -t, "
        "node --test-name-pattern, cargo test name filter.",
    )
    args: list[str] | None = Field(
        default=None,
        description='More arguments for the runner, e.g. ["-x", "--lf"] for pytest or ["-count=1"] for go.',
    )

    @field_validator("paths", "args", mode="before")
    @classmethod
    def _one_is_a_list(cls, value: Any) -> Any:
        """``paths=tests/x.py``: a single string is a one-item list."""
        return [value] if isinstance(value, str) else value


def _presentation(params: RunTestsParams) -> dict[str, Any]:
    parts = list(params.paths or [])
    if params.keyword:
        parts.append(f"-k {params.keyword}")
    parts += params.args or []
    return {"label": LABEL, "icon": ICON, "detail": " ".join(parts) or "all"}


def _venv_env(runner: Runner) -> dict[str, str]:
    """The project's environment (:func:`workspace_tools.sandbox.python.find_project_python`) first on PATH,
    as an activated venv would put it; nothing when there is none (cog's own)."""
    from workspace_tools.sandbox.python import find_project_python

    if runner.toolchain is not None:
        return {}  # their own toolchains: no Python environment is looked for (nor its tools asked)
    env = find_project_python(runner.root, runner.workspace.root).env
    if env is None or not (env / "bin").is_dir():
        return {}
    return {"PATH": f"{env / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(env)}


def _sandbox_argv(prefix: list[str], chdir: Path, writable: list[tuple[Path, str]]) -> list[str]:
    """The sandbox prefix for a runner in ``chdir`` with ``writable`` binds (before the ``--`` that
    ends bwrap's options; a setup command may follow it)."""
    if not prefix:
        return prefix
    out = list(prefix)
    end = out.index("--") if "--" in out else len(out)
    extra: list[str] = []
    for host, inside in writable:
        extra += ["--bind", str(host), inside]
    if "--chdir" in out[:end]:
        out[out.index("--chdir") + 1] = str(chdir)
    else:
        extra += ["--chdir", str(chdir)]
    return [*out[:end], *extra, *out[end:]]


class _Runs:
    """Drives runners one after the other for one call; keeps what has been reported so far."""

    def __init__(self, workspace: Workspace, context: ToolContext, sandbox: SandboxMode, passed: PassedEnv) -> None:
        self.workspace = workspace
        self.context = context
        self.sandbox = sandbox
        self.passed = passed
        self.sandboxed = False
        self.sections: list[Section] = []
        self.current: Report | None = None
        self.removed: list[Removed] = []  # files the tests left setuid/setgid, their bits removed (sandbox/leftovers.py)

    def _on_test(self, report: Report, record: dict[str, Any]) -> None:
        self.context.update(
            content=f"{record['id']} {record['outcome']}",
            details=report.progress(record["id"]),
            presentation={"label": LABEL, "icon": ICON, "detail": record["id"]},
        )

    async def run(self, runner: Runner, selection: Selection) -> Section:
        since, self.binds = time.time_ns(), list(writable_paths() if self.passed.writable is None else self.passed.writable)
        try:
            return await self._run(runner, selection)
        finally:  # also after a timeout or an abort
            runner.close()
            self.removed += await strip_after(self.workspace.root, self.binds, since_ns=since)

    async def _run(self, runner: Runner, selection: Selection) -> Section:
        import anyio.to_thread  # anyio is imported when tests run, not when the tool is listed

        inv: Invocation = runner.invocation(selection)
        self.binds += [host for host, _ in inv.writable]  # swept for setuid files too, after the run
        readable = [*inv.readable, *toolchain_homes(runner.toolchain)] if self.sandbox != "off" else inv.readable
        notes: list[str] = []  # what the sandbox does not show that the runner asked for (a link out)
        prefix = await anyio.to_thread.run_sync(
            functools.partial(sandbox_prefix, self.sandbox, self.workspace.root, readable, notes=notes,
                              environments=inv.environments, writable=self.passed.writable, network=self.passed.network))
        extra = {**_venv_env(runner), **inv.env}
        missing = missing_program(runner.toolchain, inv.argv, extra.get("PATH", os.environ.get("PATH", "")))
        if missing is not None:  # said before anything starts, with the sandbox or without
            raise ToolCallError(missing, code=ErrorCode.TOOL_ERROR)
        if prefix:
            self.sandboxed = True
            extra.update(inv.sandbox_env)
            for host, _ in inv.writable:
                host.mkdir(parents=True, exist_ok=True)
            prefix = _sandbox_argv(prefix, runner.root, inv.writable)
        report = Report(runner.name, on_test=self._on_test)
        report.notes += [*runner.notes, *notes]
        self.current = report
        output = OutputTail(OUTPUT_TAIL_BYTES)
        plain = runner.by_exit_code  # a command judged by its exit code: each output line is an update
        out_lines = LineSplitter(max_line=8192 if plain else 1 << 20)
        pipe_lines = LineSplitter(max_line=1 << 20)
        presentation = {"label": LABEL, "icon": ICON, "detail": inv.shown}
        # output streams a line an update, so a key block printed by a test is cut into lines no
        # single one of which says PRIVATE KEY: the block is followed across lines here
        from cogcli.secrets.redactor import REDACTED, KeyLines

        is_key = KeyLines()
        lines = 0

        def on_output(chunk: bytes) -> None:
            nonlocal lines
            output.feed(chunk)
            for line in out_lines.feed(chunk):
                runner.on_line(line, report)
                if plain and runner.echoes(line):
                    lines += 1
                    text = REDACTED if is_key(line) else uncoloured(line.decode("utf-8", "replace"))
                    self.context.update(content=text, details={"line": lines}, presentation=presentation)

        def on_pipe(chunk: bytes) -> None:
            for raw in pipe_lines.feed(chunk):
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    runner.on_event(event, report)

        extra_pipe = None
        if inv.report_fifo is not None:
            # the reporters open the named pipe by path; cog holds a write end too (passed to the
            # command, closed here once it started) so the reader sees no end before the command's
            read_fd = os.open(inv.report_fifo, os.O_RDONLY | os.O_NONBLOCK)
            write_fd = os.open(inv.report_fifo, os.O_WRONLY)
            extra_pipe = (read_fd, write_fd, on_pipe)
        elif inv.report_fd_env:
            read_fd, write_fd = os.pipe()
            extra[inv.report_fd_env] = str(write_fd)
            extra_pipe = (read_fd, write_fd, on_pipe)
        started = time.perf_counter()
        exit_code = await run_process_group(
            [*prefix, *inv.argv], cwd=runner.root, env=self.passed.child_env(extra, bool(prefix)), on_output=on_output, extra_pipe=extra_pipe
        )
        for line in out_lines.flush():
            runner.on_line(line, report)
        duration = time.perf_counter() - started
        try:  # what the model and the person read of the output: no terminal colours
            runner.finish(exit_code, report, said := uncoloured(output.text()))
        except ToolCallError as exc:  # a runner that could not start: what the sandbox did not show may be why
            if notes:
                raise ToolCallError("\n".join([exc.message, *notes]), code=exc.code) from None
            raise
        if plain:
            outcome, counted = runner.judge(exit_code, report, said)
        else:
            outcome, counted = report.outcome(exit_code, no_tests_codes=runner.no_tests_codes), True
        section = Section(
            runner=runner.name, root=runner.rel_root, command=inv.shown or shlex.join(inv.argv), exit_code=exit_code, duration=duration,
            report=report, output=said, output_dropped=output.dropped, selection=selection.describe(),
            counted=counted, outcome=outcome,
        )
        self.sections.append(section)
        return section

    def partial(self) -> str:
        """What was reported before the run was stopped, in words, with the report file."""
        reports = [s.report for s in self.sections] + ([self.current] if self.current is not None and
                                                         all(s.report is not self.current for s in self.sections) else [])
        counts: dict[str, int] = {}
        tests: list[dict[str, Any]] = []
        for r in reports:
            tests += r.tests
            for k, v in r.counts.items():
                counts[k] = counts.get(k, 0) + v
        if not tests:
            return "no test had finished"
        summary = {"outcome": "error", "partial": True, **counts, "tests_total": len(tests)}
        problems = [t for r in reports for t in r.problems()]
        path = write_report(self.workspace.root, summary, tests, problems)
        last = tests[-1]["id"]
        failing = "".join(f"\n  {t['outcome'].upper()} {t['id']}: {t.get('message') or ''}" for t in problems[:10])
        return (f"{counts_text(counts)} before it was stopped (the last test to finish: {last}){failing}"
                + (f"\nThe partial report is in {path}." if path else ""))


def _selection(params: RunTestsParams, r: Runner, paths: list[str]) -> Selection:
    """What one runner is asked to run: the paths, the keyword, the extra arguments it accepts."""
    return Selection(paths=paths, keyword=params.keyword, args=check_args(params.args or [], r))


def _plan(workspace: Workspace, params: RunTestsParams, test_command: str | None, runner_name: str | None) -> list[tuple[Runner, list[str]]]:
    if test_command is not None:
        runners = [from_command(workspace, test_command)]
        if runners[0].by_exit_code and params.keyword is not None:
            raise ToolCallError(
                f"keyword works only with a runner cog knows; this workspace runs its tests with {test_command!r}, "
                "which cog runs as a plain command. Leave keyword out, or pass paths.",
                code=ErrorCode.INVALID_ARGUMENTS,
            )
    elif runner_name is not None:
        runners = forced(workspace, runner_name)
    else:
        runners = detect(workspace)
    plan = route(runners, workspace, list(params.paths or []))
    if params.keyword is not None or params.args or params.paths:
        plan = [(_for_selection(workspace, r), paths) for r, paths in plan]
    if params.args and len(plan) > 1:
        names = ", ".join(r.label() for r, _ in plan)
        raise ToolCallError(
            f"args go to one runner, and this run has several ({names}): pass paths inside one project with them",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    return plan


def _for_selection(workspace: Workspace, runner: Runner) -> Runner:
    """The runner for some tests only. A package's test script runs as written only whole (``npm
    test`` hands paths to the last of its commands alone): for a selection, the one runner cog
    knows inside it runs directly, and the result says so."""
    if not isinstance(runner, ScriptRunner) or runner.command is not None:
        return runner
    script = runner.script
    shown = shown_script(script.text)
    if len(script.inside) != 1:
        known = f"runs {' and '.join(script.inside)}" if script.inside else "runs no runner cog knows"
        raise ToolCallError(
            f"the test script in {runner.rel_root or 'the workspace root'} (`{shown}`) runs as written, whole, "
            f"and {known}: paths, keyword and args cannot go to it. Call run_tests without them"
            + (f", or set runner to one of {', '.join(script.inside)} to run its tests directly." if script.inside else "."),
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    chosen = forced(workspace, script.inside[0])
    direct = next((r for r in chosen if r.root == runner.root), None) or RUNNERS[script.inside[0]](workspace, runner.root)
    direct.notes.append(f"ran {direct.name} directly for the selection: the package's test script (`{shown}`) runs "
                        "as written only when run_tests is called without paths, keyword or args.")
    return direct


def run_tests_tool(
    workspace: Workspace,
    *,
    test_command: str | None = None,
    timeout: float | None = 600,
    sandbox: SandboxMode = "off",
    runner: str | None = None,
    passed: PassedEnv | None = None,
) -> Tool[Any]:
    """The ``run_tests`` tool for ``workspace``: the runners found in it, or ``runner`` (one of
    :data:`~workspace_tools.runners.RUNNER_NAMES`), or ``test_command`` (a shell command).
    ``passed``: the variables and writable paths the tests get beyond the allow-list.

    ``sandbox``: ``"auto"`` runs the tests under bubblewrap when it works on this machine,
    ``"on"`` requires it, ``"off"`` never uses it; ``details.sandbox`` says which ran.
    """
    if test_command is not None and not test_command.strip():
        raise ValueError("test_command is empty; pass None to find the runner")
    if sandbox not in ("auto", "on", "off"):
        raise ValueError(f"sandbox must be 'auto', 'on' or 'off', not {sandbox!r}")
    if runner is not None and runner not in RUNNER_NAMES:
        raise ValueError(f"runner must be one of {', '.join(RUNNER_NAMES)}, not {runner!r}")

    async def execute(params: RunTestsParams, context: ToolContext) -> ToolOutputResult[str]:
        import anyio

        plan = _plan(workspace, params, test_command, runner)
        selections = [(r, _selection(params, r, paths)) for r, paths in plan]
        runs = _Runs(workspace, context, sandbox, passed or PassedEnv())
        # our own deadline, a little before the call's: the counts so far still reach the model
        budget = None if timeout is None else max(timeout - min(5.0, timeout * 0.2), timeout * 0.5)
        try:
            with anyio.fail_after(budget):
                for r, selection in selections:
                    await runs.run(r, selection)
        except TimeoutError:
            raise ToolCallError(
                f"run_tests timed out after {timeout:g} s (its processes were stopped at {budget:.1f} s, to report "
                f"what had finished): {runs.partial()}",
                code=ErrorCode.TOOL_TIMEOUT,
            ) from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                runs.partial()  # an abort: the counts so far are kept in .cog/test-reports/
            raise
        sections = runs.sections
        details = make_details(sections, "bwrap" if runs.sandboxed else "none", workspace.root)
        presentation = _presentation(params)  # the row says how the run went: "all · 1 failed, 2 passed"
        presentation["detail"] += f" · {summary_words(sections)}"
        text = model_text(sections, runs.sandboxed)
        if runs.removed:  # what the tests left setuid: named for the model and the application
            details["privileges_removed"], text = [r.as_dict() for r in runs.removed], text + "\n" + removed_text(runs.removed)
        if runs.sandboxed and any(sec.outcome != "passed" for sec in sections):
            texts = [t.get("longrepr") or t.get("message") for sec in sections for t in sec.report.problems()]
            hint = failure_hint(workspace.root, (str(t) for t in [*texts, *(sec.output for sec in sections)] if t),
                                network_given=runs.passed.network)
            if hint:  # the failures look like the sandbox's: one line on top saying so
                details["sandbox_note"], text = hint, hint + "\n" + text
        return tool_output(text, details=details, presentation=presentation)

    def preview(params: RunTestsParams) -> dict[str, Any]:
        """The command lines the call would run (one per runner), as its result names them; nothing runs."""
        commands = []
        for r, paths in _plan(workspace, params, test_command, runner):
            try:
                inv = r.invocation(_selection(params, r, paths))
                commands.append(inv.shown or shlex.join(inv.argv))
            finally:
                r.close()
        return {"command": "\n".join(commands)}

    if test_command is not None:
        description = (
            f"Run the workspace's tests with `{test_command}` and report each test's outcome when cog knows the "
            "runner (else its exit code and output). `paths` and `args` are passed to it."
        )
    else:
        description = (
            "Run the workspace's tests (pytest, go test, vitest, jest, node --test or cargo test: found from the "
            "project's files) and report each test's outcome. Pass `paths` (files, directories, packages or test "
            "ids like tests/test_a.py::test_x) and/or `keyword` to run some of them, `args` for runner options. "
            "Failing tests are reported with their failure text; build errors as build errors."
        )
    return tool(
        kind="execute",
        name="run_tests",
        description=description,
        parameters=RunTestsParams,
        execute=execute,
        presentation=_presentation,
        timeout=timeout,
        side_effects=("runs code",),
        reports_tests=True,
        recall=_recall,
        preview=preview,
    )


def _recall(args: Mapping[str, Any]) -> tuple[str, str]:
    """``run_tests {"paths": ["tests/a.py"]}``: what an old run was (the plain description), and
    how to get its result again, for its stub in a compacted history."""
    shown = {k: v for k, v in args.items() if v not in (None, "", [], {})}
    return "run_tests" + (f" {json.dumps(shown, ensure_ascii=False)[:300]}" if shown else ""), "run the tests again if needed"
