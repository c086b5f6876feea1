"""The ``details`` the workspace tools return, as pydantic models: what an application can rely on.

Published by ``cog schema details``. A tool returns one of these as its ``details``; it goes on the
wire and into the thread as the JSON it dumps to (snake_case keys, as always). Each model allows
extra keys, so a field added later never breaks an older reader. One model per tool: the schema's
description (:func:`details_json_schema`) says which.

Everything the run, memory and the renderers read of a call's details or arguments is read by the
accessors of :mod:`cogcli.contract.details_readers`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Details(BaseModel):
    # built on first use: listing or calling one tool does not pay for every kind of details
    model_config = ConfigDict(extra="allow", defer_build=True)


class FileEditDetails(_Details):
    #: a unified diff (``--- a/path`` / ``+++ b/path``), applicable with ``git apply``
    diff: str
    added: int
    removed: int


class FileWriteDetails(FileEditDetails):
    created: bool


class PatchedFile(FileEditDetails):  # one file apply_patch changed: created | modified | deleted | moved
    path: str
    change: str
    new_path: str | None = None  # where a moved file went


class PatchDetails(FileEditDetails):  # apply_patch: every file's diff and their sums; each file's own; and
    files_patched: list[PatchedFile] = []  # changed_files (paths: {path, change}) as move_file's details


class TestCaseRecord(_Details):
    """One test as it finished (``subtests`` is present only for a test that had some)."""

    __test__ = False  # not a pytest test class

    id: str
    #: passed | failed | skipped | error | xfailed | xpassed
    outcome: str
    duration: float | None = 0.0
    #: the phase that decided the outcome: setup | call | teardown
    when: str | None = None
    message: str | None = None
    longrepr: str | None = None
    #: where a failure is shown: the test's own line that failed (relative to the workspace)
    file: str | None = None
    line: int | None = None
    #: the deepest frame, where it raised, when that is elsewhere (pytest)
    crash_file: str | None = None
    crash_line: int | None = None
    #: when it finished (seconds since the epoch)
    stop: float | None = None


class _RunDetails(_Details):
    #: the command line that ran (without the sandbox around it)
    command: str
    exit_code: int
    #: bwrap | off
    sandbox: str | None = None
    #: passed | failed | error | no-tests | build-failed: anything but passed is a failed test run
    outcome: str | None = None
    #: one line saying the failures look like the sandbox's doing (no network, a read-only folder):
    #: the model reads it first, and a person sees it under the row
    sandbox_note: str | None = None
    #: what the run's verdict rests on, first things first (cog's own Python ran the tests, a
    #: package came from an installed copy, a link the sandbox did not show, counts unavailable…):
    #: the model reads them, and a person sees them under the row
    notes: list[str] = []


class TestReportDetails(_RunDetails):
    __test__ = False

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    xfailed: int = 0
    xpassed: int = 0
    collected: int | None = None
    duration_s: float = 0.0
    #: the runner's own summary words (pytest's last line, plugins' categories counted its way)
    summary: str | None = None
    #: which Python environment ran the tests: ``python``, ``source`` (.venv, poetry, $VIRTUAL_ENV,
    #: PATH, cog …) and ``env`` (its folder, None for a bare interpreter)
    environment: dict[str, str | None] | None = None
    tests: list[TestCaseRecord] = []
    #: failed tests and errors in all; ``failures`` keeps the first of them (renderers say "… and N more")
    failures_total: int | None = None
    output_tail: str = ""
    output_dropped_bytes: int = 0


class CommandRunDetails(_RunDetails):
    duration_s: float = 0.0
    #: output lines streamed as updates
    lines: int = 0
    output_tail: str = ""
    output_dropped_bytes: int = 0


class ShellCommandDetails(_Details):
    """``run_command``: what ran, how it ended, its output (each stream's head and tail, bounded)."""

    command: str
    #: the command's exit code (negative: killed by that signal; None: it never started or timed out)
    exit_code: int | None = None
    duration_ms: float = 0.0
    stdout: str = ""
    stderr: str = ""
    #: bytes of each stream left out between its head and its tail
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    timed_out: bool = False
    #: "bwrap" (in the sandbox) or "none" (``--sandbox off``, or no sandbox here)
    sandbox: str = "none"
    #: whether the command had the host's network (the person's ``--command-network``)
    network: bool = False
    #: workspace files the command created, modified or deleted (git-ignored ones left out), at most 200:
    #: ``path``, ``change``, and in a run ``added``/``removed`` lines of a text file (as a tool write's
    #: diff counts them) or ``lines_not_counted`` (why: ``binary``, ``over 1 MB``, past 4 MB a command, not kept)
    changed_files: list[dict[str, str | int]] = []
    #: how many there were in all, and whether the scan saw the whole tree
    changed_total: int = 0
    changes_complete: bool = True
    #: changes recorded for ``cog undo`` (from the snapshot taken before the command), and what it cannot put back
    undo_recorded: int = 0
    undo_notes: list[str] = []


class BackgroundJobDetails(_Details):
    """``run_command(background=true)``, ``command_output`` and ``kill_command``: one background command's state."""

    job: str
    command: str
    running: bool
    #: its exit code once it ended (negative: killed by that signal)
    exit_code: int | None = None
    #: ended by ``kill_command`` or the session's end
    killed: bool = False
    #: what it printed since the last read (its newest bytes), and how many bytes before them were left out
    output: str = ""
    dropped: int = 0
    #: bytes it printed in all
    bytes_total: int = 0
    #: "bwrap" (in the sandbox) or "none"; whether it shares the session's one loopback network
    sandbox: str | None = None
    shared_network: bool | None = None
    privileges_removed: list[dict[str, Any]] = []


class SearchMatch(_Details):
    path: str
    line: int
    text: str


class SearchDetails(_Details):
    pattern: str
    #: the folder searched, relative to the workspace
    path: str
    glob: str | None = None
    matches: list[SearchMatch] = []
    #: matches found (counting stops at a limit; ``truncated`` says some were not shown)
    total: int = 0
    truncated: bool = False
    files_searched: int = 0
    files_skipped: int = 0
    secrets_skipped: int = 0
    #: environment and cache folders not searched: ``{"path": ".venv/", "kind": "virtualenv", "files": n}``
    left_out: list[dict[str, Any]] = []


class Diagnostic(_Details):
    """One problem a checker reported (``ruff``, ``mypy``, ``tsc``, ``go vet``, ``cargo check`` …)."""

    #: relative to the workspace
    file: str
    line: int
    column: int | None = None
    #: the checker's own code (``F401``, ``return-value``, ``TS2322``, ``E0308``), else the checker's name
    rule: str
    message: str
    #: error | warning | note
    severity: str = "error"
    #: the checker that said it
    source: str


class SkippedSource(_Details):
    source: str
    #: why it did not run to the end: over its time budget, turned off, failed to start …
    why: str


class DiagnosticsDetails(_Details):
    """What a file change did to the checkers' verdict (``details.diagnostics`` of edit_file,
    write_file, apply_patch and move_file), or the ``diagnostics`` tool's own details: ``new`` are
    problems the change introduced, ``fixed`` those it removed; ``existing`` counts the ones that were
    there before and still are (the backlog, never listed for the model)."""

    files: list[str] = []
    new: list[Diagnostic] = []
    fixed: list[Diagnostic] = []
    existing: int = 0
    #: the checkers that ran to the end, and those that did not (with why)
    sources: list[str] = []
    skipped: list[SkippedSource] = []
    duration_s: float = 0.0
    #: "bwrap" or "none"
    sandbox: str = "none"
    #: the ``diagnostics`` tool only: every problem in the files it checked (at most 1,000), the backlog included
    problems: list[Diagnostic] = []
    #: files a checker left setuid/setgid or with capabilities, whose privileges cog removed (as run_tests')
    privileges_removed: list[dict[str, Any]] = []


class SubagentFile(_Details):
    path: str
    added: int = 0
    removed: int = 0


class SubagentDetails(_Details):
    """The ``task`` tool's details: a subagent's run (its own thread, open it like any other), what it
    changed and tested, what it spent (counted in its parent run's usage and budget too)."""

    #: the agent it ran as ("general": the parent's instructions; else a named agent's file)
    agent: str = "general"
    description: str = ""
    thread_id: str
    #: how its run ended (a run's status: completed, error, denied, budget_exceeded, …)
    status: str
    steps: int = 0
    tool_calls: int = 0
    files_changed: list[SubagentFile] = []
    #: its last test run's counts (passed, failed, …), if it ran tests
    tests: dict[str, int] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    error: str | None = None


class SubagentStep(_Details):
    """A running ``task`` call's progress (``tool-update`` details): the subagent's current step."""

    subagent: str
    thread_id: str
    #: the subagent's call: its id, tool, how it is drawn, and ``running`` / ``done`` / ``failed``
    call_id: str
    tool_name: str
    title: str
    status: str
    #: its calls so far (each once, in the order they started)
    calls: int = 0


DETAILS_MODELS: tuple[type[BaseModel], ...] = (
    FileEditDetails,
    FileWriteDetails,
    PatchDetails,
    TestReportDetails,
    CommandRunDetails,
    SearchDetails,
    ShellCommandDetails,
    BackgroundJobDetails,
    DiagnosticsDetails,
    SubagentDetails,
    SubagentStep,
)


def details_json_schema() -> dict[str, Any]:
    """JSON Schema of the workspace tools' details, one definition per model."""
    from pydantic.json_schema import models_json_schema

    _, schema = models_json_schema([(m, "serialization") for m in DETAILS_MODELS], title="cogcli tool details")
    schema["description"] = (
        "The `details` of the workspace tools' results (tool-result events, thread metadata): edit_file → "
        "FileEditDetails, write_file / move_file / delete_file → FileWriteDetails, apply_patch → PatchDetails, "
        "run_tests → TestReportDetails (pytest) or CommandRunDetails (a test command), search_text → "
        "SearchDetails, run_command → ShellCommandDetails (BackgroundJobDetails when it starts a background "
        "command, and for command_output / kill_command), diagnostics → DiagnosticsDetails (also under "
        "`diagnostics` in a file change's details), task → SubagentDetails (its progress: SubagentStep). Keys are only ever added."
    )
    return schema
