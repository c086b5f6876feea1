"""The ``run_tests`` tool: runs the workspace's tests and streams one update per test as it finishes.

By default it runs pytest with the workspace's own Python (``.venv/bin/python`` or
``venv/bin/python`` in the workspace, else cog's own) and loads a small standalone plugin
(:mod:`workspace_tools.pytest_plugin`) that writes one JSON line per finished test to an inherited
pipe. With ``test_command`` it runs that shell command instead and streams its output line by line.

Failing tests are not a tool error: the tool worked and reports them. pytest's internal and usage
errors (exit 3 and 4), or a pytest that does not start, are. A timeout or an abort kills the whole
process tree (see :mod:`workspace_tools.procs`).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from cogcli.context import ToolContext
from cogcli.details import CommandRunDetails, TestReportDetails
from cogcli.errors import ErrorCode, ToolCallError
from cogcli.output import ToolOutputResult, tool_output
from cogcli.tools import Tool, tool
from workspace_tools.bwrap import SandboxMode, failure_hint, sandbox_prefix
from workspace_tools.paths import Workspace
from workspace_tools.procs import LineSplitter, OutputTail, run_process_group
from workspace_tools.pytest_plugin import PLUGIN_DIR, PLUGIN_MODULE, REPORT_FD_ENV
from workspace_tools.testenv import child_environment

LABEL = "Run tests"
ICON = "flask-conical"
#: bytes of output kept (the tail) for the result
OUTPUT_TAIL_BYTES = 64 * 1024
#: characters of one failure's text the model reads
FAILURE_TEXT_CHARS = 1500
#: failures shown with their text; more are listed by id only
FAILURES_WITH_TEXT = 15
FAILURES_LISTED = 100

PYTEST_EXIT_MEANING = {
    0: "all tests passed",
    1: "some tests failed",
    2: "the run was interrupted (collection errors or a test stopped it)",
    3: "pytest hit an internal error",
    4: "pytest was called wrongly (usage error)",
    5: "no tests were collected",
}


class RunTestsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: list[str] | None = Field(
        default=None,
        description="Test files, directories or test ids (tests/test_a.py::test_x), relative to the "
        "workspace root. Omit to run all tests.",
    )
    keyword: str | None = Field(default=None, description="Only run tests matching this pytest -k expression.")


def _presentation(params: RunTestsParams) -> dict[str, Any]:
    parts = list(params.paths or [])
    if params.keyword:
        parts.append(f"-k {params.keyword}")
    return {"label": LABEL, "icon": ICON, "detail": " ".join(parts) or "all"}


def workspace_python(root: Path) -> str:
    """The workspace's own interpreter (``.venv`` or ``venv``), else the one running cog."""
    for venv in (".venv", "venv"):
        candidate = root / venv / "bin" / "python"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return sys.executable


def _test_args(workspace: Workspace, params: RunTestsParams) -> list[str]:
    """pytest's selection arguments; every path goes through the workspace boundary first."""
    args: list[str] = []
    for given in params.paths or []:
        file_part, sep, node = given.partition("::")
        rel = workspace.relative(workspace.resolve(file_part))
        if rel.startswith("-"):
            rel = f"./{rel}"
        args.append(rel + sep + node)
    if params.keyword is not None:
        args += ["-k", params.keyword]
    return args


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


# -- the report, built from the plugin's lines ------------------------------------------------

_COUNT_KEY = {"passed": "passed", "failed": "failed", "skipped": "skipped", "error": "errors",
              "xfailed": "xfailed", "xpassed": "xpassed"}


class _Report:
    """What the plugin has reported so far."""

    def __init__(self) -> None:
        self.started = False
        self.collected: int | None = None
        self.tests: list[dict[str, Any]] = []
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "xfailed": 0, "xpassed": 0}

    def add(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Take one plugin line; returns the test record when it finished a test (or a collection error)."""
        kind = event.get("event")
        if kind == "start":
            self.started = True
        elif kind == "collected":
            self.collected = event.get("count")
        elif kind in ("test", "collect_error"):
            record = {
                "id": str(event.get("id")),
                "outcome": str(event.get("outcome")),
                "duration": event.get("duration", 0.0),
                "when": event.get("when"),
                "message": event.get("message"),
                "longrepr": event.get("longrepr"),
                "stop": event.get("stop"),
            }
            if event.get("subtests"):
                record["subtests"] = event["subtests"]
            self.tests.append(record)
            key = _COUNT_KEY.get(record["outcome"])
            if key:
                self.counts[key] += 1
            return record
        return None

    def progress(self, current: str) -> dict[str, Any]:
        return {**self.counts, "total_so_far": len(self.tests), "collected": self.collected, "current": current}

    def problems(self) -> list[dict[str, Any]]:
        return [t for t in self.tests if t["outcome"] in ("failed", "error")]


def _summary_line(counts: dict[str, int], duration: float) -> str:
    return f"{_counts_text(counts)} in {duration:.2f} s"


def _counts_text(counts: dict[str, int]) -> str:
    order = [("failed", "failed"), ("passed", "passed"), ("skipped", "skipped"), ("xfailed", "xfailed"),
             ("xpassed", "xpassed"), ("errors", "error")]
    parts = []
    for key, word in order:
        n = counts.get(key, 0)
        if n:
            parts.append(f"{n} {word}{'s' if word == 'error' and n > 1 else ''}")
    return ", ".join(parts) or "no tests ran"


def _short_failure(test: dict[str, Any]) -> str:
    """The end of a failure's text (where the assertion and its location are), bounded."""
    text = (test.get("longrepr") or test.get("message") or "").rstrip()
    if len(text) > FAILURE_TEXT_CHARS:
        text = "…" + text[-FAILURE_TEXT_CHARS:]
    return "\n".join("    " + line for line in text.splitlines())


def _model_text(report: _Report, exit_code: int, duration: float, output: OutputTail, selection: str) -> str:
    if exit_code < 0:
        meaning = f"pytest was killed by {_signal_name(exit_code)}"
    else:
        meaning = PYTEST_EXIT_MEANING.get(exit_code, "pytest ended with an unexpected exit code")
    lines = [f"pytest ({selection}): {_summary_line(report.counts, duration)} — exit {exit_code}: {meaning}"]
    if exit_code == 5:
        lines.append("Nothing matched: check the paths and the -k expression, or the test file names (test_*.py).")
    problems = report.problems()
    for i, test in enumerate(problems[:FAILURES_LISTED]):
        head = f"{'ERROR' if test['outcome'] == 'error' else 'FAILED'} {test['id']}"
        if test["outcome"] == "error" and test.get("when"):
            head += f" (in {test['when']})"
        if i < FAILURES_WITH_TEXT:
            lines += ["", head, _short_failure(test)]
        else:
            lines.append(f"{head} - {(test.get('message') or '')[:200]}")
    if len(problems) > FAILURES_LISTED:
        lines.append(f"… and {len(problems) - FAILURES_LISTED} more failing tests")
    if exit_code < 0 or exit_code == 5 or (exit_code != 0 and not problems):
        lines += ["", "Output (end):", output.text()[-2000:]]
    return "\n".join(lines)


# -- the two ways to run ------------------------------------------------------------------------


def _child_env(extra: dict[str, str], sandbox: Sequence[str]) -> dict[str, str]:
    """The allow-listed environment (no credentials; see :mod:`workspace_tools.testenv`)."""
    env = child_environment(extra)
    if sandbox:
        env["TMPDIR"] = "/tmp"  # the sandbox's private /tmp is the only writable place besides the workspace
    return env


def _sandbox_name(sandbox: Sequence[str]) -> str:
    return "bwrap" if sandbox else "none"


def _sandbox_note(sandbox: Sequence[str]) -> str:
    if not sandbox:
        return ""
    return (
        "\n(ran in a sandbox: no network beyond loopback; writable: the workspace except .git/ and .cog/, "
        "/tmp and a throwaway $HOME)"
    )


def _with_hint(text: str, details: TestReportDetails | CommandRunDetails, sandbox: Sequence[str], root: Path, exit_code: int, texts: list[Any]) -> str:
    """A failing run in the sandbox whose failures look like the sandbox's: one line on top saying so."""
    hint = failure_hint(root, (str(t) for t in texts if t)) if sandbox and exit_code != 0 else ""
    if hint:
        details.sandbox_note = hint
        return hint + "\n" + text
    return text


async def _run_pytest(
    workspace: Workspace, params: RunTestsParams, context: ToolContext, sandbox: Sequence[str]
) -> ToolOutputResult[str]:
    selection = _test_args(workspace, params)
    python = workspace_python(workspace.root)
    pythonpath = os.pathsep.join(p for p in (str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")) if p)
    read_fd, write_fd = os.pipe()
    argv = [*sandbox, python, "-m", "pytest", "-p", PLUGIN_MODULE, *selection]
    env = _child_env({"PYTHONPATH": pythonpath, REPORT_FD_ENV: str(write_fd)}, sandbox)

    report = _Report()
    output = OutputTail(OUTPUT_TAIL_BYTES)
    splitter = LineSplitter(max_line=1 << 20)

    def on_report(chunk: bytes) -> None:
        for raw in splitter.feed(chunk):
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            record = report.add(event) if isinstance(event, dict) else None
            if record is not None:
                context.update(
                    content=f"{record['id']} {record['outcome']}",
                    details=report.progress(record["id"]),
                    presentation={"label": LABEL, "icon": ICON, "detail": record["id"]},
                )

    started = time.perf_counter()
    exit_code = await run_process_group(
        argv, cwd=workspace.root, env=env, on_output=output.feed, extra_pipe=(read_fd, write_fd, on_report)
    )
    duration = time.perf_counter() - started
    command = shlex.join(argv[len(sandbox) :])

    if not report.started and exit_code != 0:
        raise ToolCallError(
            f"pytest did not start with {python} (exit {exit_code}); is pytest installed in the workspace's "
            f"environment?\n{output.text()[-3000:]}",
            code=ErrorCode.TOOL_ERROR,
        )
    if exit_code in (3, 4):
        raise ToolCallError(
            f"pytest exit {exit_code}: {PYTEST_EXIT_MEANING[exit_code]}\n{output.text()[-3000:]}",
            code=ErrorCode.TOOL_ERROR,
        )
    shown = " ".join(selection) or "all tests"
    details = TestReportDetails(
        command=command,
        exit_code=exit_code,
        sandbox=_sandbox_name(sandbox),
        **report.counts,
        collected=report.collected,
        duration_s=round(duration, 3),
        tests=report.tests,
        output_tail=output.text(),
        output_dropped_bytes=output.dropped,
    )
    presentation = _presentation(params)  # the row says how the run went: "all · 1 failed, 2 passed"
    presentation["detail"] += f" · {_counts_text(report.counts)}"
    text = _model_text(report, exit_code, duration, output, shown) + _sandbox_note(sandbox)
    texts = [t.get("longrepr") or t.get("message") for t in report.problems()] + [output.text()]
    return tool_output(
        _with_hint(text, details, sandbox, workspace.root, exit_code, texts),
        details=details,
        presentation=presentation,
    )


async def _run_command(
    workspace: Workspace, command: str, params: RunTestsParams, context: ToolContext, sandbox: Sequence[str]
) -> ToolOutputResult[str]:
    if params.keyword is not None:
        raise ToolCallError(
            f"keyword (-k) works with pytest only; this workspace runs its tests with {command!r}. "
            "Leave keyword out, or pass paths.",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    full = command
    for given in params.paths or []:
        full += " " + shlex.quote(workspace.relative(workspace.resolve(given)))
    output = OutputTail(OUTPUT_TAIL_BYTES)
    splitter = LineSplitter()
    presentation = {"label": LABEL, "icon": ICON, "detail": full}
    count = 0

    def emit(lines: list[bytes]) -> None:
        nonlocal count
        for line in lines:
            count += 1
            context.update(
                content=line.decode("utf-8", "replace"), details={"line": count}, presentation=presentation
            )

    def on_output(chunk: bytes) -> None:
        output.feed(chunk)
        emit(splitter.feed(chunk))

    started = time.perf_counter()
    exit_code = await run_process_group(
        [*sandbox, "/bin/sh", "-c", full], cwd=workspace.root, env=_child_env({}, sandbox), on_output=on_output
    )
    emit(splitter.flush())
    duration = time.perf_counter() - started
    if exit_code == 0:
        verdict = "passed (exit 0)"
    elif exit_code < 0:
        verdict = f"was killed by {_signal_name(exit_code)}"
    else:
        verdict = f"failed (exit {exit_code})"
    text = f"`{full}` {verdict} in {duration:.2f} s\nOutput (end):\n{output.text()[-6000:]}{_sandbox_note(sandbox)}"
    details = CommandRunDetails(
        command=full,
        exit_code=exit_code,
        sandbox=_sandbox_name(sandbox),
        duration_s=round(duration, 3),
        lines=count,
        output_tail=output.text(),
        output_dropped_bytes=output.dropped,
    )
    text = _with_hint(text, details, sandbox, workspace.root, exit_code, [output.text()])
    return tool_output(text, details=details, presentation=presentation)


def run_tests_tool(
    workspace: Workspace,
    *,
    test_command: str | None = None,
    timeout: float | None = 600,
    sandbox: SandboxMode = "off",
) -> Tool[Any]:
    """The ``run_tests`` tool for ``workspace``: pytest by default, or ``test_command`` (a shell command).

    ``sandbox``: ``"auto"`` runs the tests under bubblewrap when it works on this machine,
    ``"on"`` requires it, ``"off"`` never uses it; ``details.sandbox`` says which ran.
    """
    if test_command is not None and not test_command.strip():
        raise ValueError("test_command is empty; pass None to run pytest")
    if sandbox not in ("auto", "on", "off"):
        raise ValueError(f"sandbox must be 'auto', 'on' or 'off', not {sandbox!r}")

    async def execute(params: RunTestsParams, context: ToolContext) -> ToolOutputResult[str]:
        readable = [PLUGIN_DIR, Path(sys.prefix), Path(sys.base_prefix)]
        prefix = await anyio.to_thread.run_sync(sandbox_prefix, sandbox, workspace.root, readable)
        if test_command is not None:
            return await _run_command(workspace, test_command, params, context, prefix)
        return await _run_pytest(workspace, params, context, prefix)

    if test_command is None:
        description = (
            "Run the workspace's tests with pytest and report each test's outcome. Pass `paths` (files, "
            "directories or test ids like tests/test_a.py::test_x) and/or `keyword` (-k) to run some of them. "
            "Failing tests are reported with their failure text."
        )
    else:
        description = (
            f"Run the workspace's tests with `{test_command}` and report its exit code and output. "
            "`paths` are appended to the command."
        )
    return tool(
        name="run_tests",
        description=description,
        parameters=RunTestsParams,
        execute=execute,
        presentation=_presentation,
        timeout=timeout,
        side_effects=("runs code",),
        reports_tests=True,
    )
