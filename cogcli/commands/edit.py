"""``cog edit "INSTRUCTION"``: parse → :class:`~cogcli.session.Session` → draw. The session makes
the model, the tools and the run and says what its end means; this command reads the
instruction, draws the events live, turns a closed output or a signal into its exit code, and
optionally commits what the run changed."""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from cogcli.gate.approval import Approve
from cogcli.commands.approve import make_approver, quiet_approvals
from cogcli.commands.common import abort_on_signals, leave_lingering_tools
from cogcli.settings.load import load_settings
from cogcli.contract.context import AbortSignal
from cogcli.contract.errors import CogError, ConfigError
from cogcli.wire.emitter import EventEmitter
from cogcli.wire.events import ErrorEvent, FinishEvent
from cogcli.wire.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE
from cogcli.settings.options import SettingFlags
from cogcli.render import Renderer, make_renderer
from cogcli.session import RunNotStarted, Session, exit_status, make_tools
from cogcli.shown.visible import say

log = logging.getLogger("cogcli")


@dataclass
class EditOptions:
    """``cog edit``'s command line, parsed."""
    instruction: str
    root: Path
    #: the settings given as flags (:mod:`cogcli.settings.options`: model, sandbox, approval, …)
    flags: SettingFlags = field(default_factory=SettingFlags)
    format: str = "text"
    thread: str | None = None
    record: Path | None = None
    commit: bool = False
    allow_dirty: bool = False
    #: --commit-hooks: let the commit run the repository's hooks (unchanged ones only)
    commit_hooks: bool = False
    #: read the instruction from this file (--file); ``instruction == "-"`` reads stdin
    instruction_file: Path | None = None
    #: continue the most recent thread (--last)
    last: bool = False
    #: the directory cog runs in (instruction files are read from the root down to it)
    cwd: Path | None = None
    #: --output-schema FILE (:mod:`cogcli.loop.output_schema`)
    output_schema: Path | None = None
    #: --plan: only tools that change nothing run; the run ends with a plan (``--last "go"`` runs it)
    plan: bool = False
    #: --image PATH (repeatable): images the model sees with the instruction
    images: list[Path] = field(default_factory=list)
    #: --worktree [NAME]: run in a new git worktree ("" : cog names it); None: here
    worktree: str | None = None
    #: --attempts N: best-of-N in worktrees, picked by the tests (:mod:`cogcli.worktrees.attempts`)
    attempts: int | None = None
    #: --ray [ADDRESS]: the attempts as Ray tasks ("local": a Ray started for them; :mod:`cogcli.commands.attempts_ray`)
    ray: str | None = None
    #: called once the run is under way (its first event) or before a path that runs long starts
    #: (attempts); ``cog`` turns the cyclic collector back on there (:func:`cogcli.cli.lean_start.resume_gc`)
    on_started: Callable[[], None] | None = None


#: the run stopped because its output's reader went away (``cog edit --json | head -1``): 128 + SIGPIPE
EXIT_OUTPUT_CLOSED = 141


def _failed_before_run(fmt: str, message: str, code: str | None, exit_code: int = EXIT_USAGE) -> int:
    """A failure before the run started: said on stderr, and with ``--json`` also as an ``error``
    and a ``finish`` line (status ``error``, no thread), so a reader of the stream always learns
    what went wrong."""
    say(message)
    if fmt == "jsonl":
        _end_stream(make_renderer(fmt), EventEmitter(), message, code)
    return exit_code


def _end_stream(renderer: Any, emitter: EventEmitter, message: str, code: str | None, *, message_id: str | None = None, thread_id: str = "") -> None:
    import uuid

    emitter.on_event = renderer.handle
    emitter.emit(ErrorEvent(message=message, code=code))
    emitter.emit(FinishEvent(message_id=message_id or f"msg_{uuid.uuid4().hex[:20]}", thread_id=thread_id, status="error"))
    renderer.close()


def edit_command(
    *, instruction: str | None, json_flag: bool, fmt: str, thread: str | None, record: Path | None,
    directory: Path | None, commit: bool, allow_dirty: bool, commit_hooks: bool, instruction_file: Path | None,
    last: bool, plan: bool, output_schema: Path | None, worktree: bool, worktree_name: str | None,
    attempts: int | None, ray: str | None, image: list[Path] | None, flags: SettingFlags,
    on_started: Callable[[], None] | None = None,
) -> int:
    """``cog edit``'s parameters as its command line gives them (typer's, :mod:`cogcli.cli.edit`,
    or the quick path's, :mod:`cogcli.cli.lean_start`: both call this) → :func:`run_edit`'s code."""
    from cogcli.settings.load import find_workspace

    try:
        root = find_workspace(directory)
    except ConfigError as exc:
        say(exc.message)
        return EXIT_USAGE
    return run_edit(
        EditOptions(
            instruction=instruction,  # type: ignore[arg-type]  # None: read_instruction says it is missing
            root=root,
            flags=flags,
            format="jsonl" if json_flag else fmt,
            thread=thread,
            record=record,
            commit=commit,
            allow_dirty=allow_dirty,
            commit_hooks=commit_hooks,
            instruction_file=instruction_file,
            last=last,
            cwd=(directory or Path.cwd()).expanduser().resolve(),
            output_schema=output_schema,
            plan=plan,
            images=list(image or []),
            worktree=(worktree_name or "") if worktree or worktree_name else None,
            attempts=attempts,
            ray=ray,
            on_started=on_started,  # the collector, off since start-up, back on once the run is under way
        )
    )


def run_edit(opts: EditOptions) -> int:
    """Run the agent once; return the exit code (0 done and tests pass, 1 task failed, 2 usage or
    configuration, 130/143 interrupted, 141 the output's reader went away)."""
    from cogcli.commands.edit_input import read_instruction

    try:
        settings = load_settings(opts.root, opts.flags, output_schema=opts.output_schema)
    except ConfigError as exc:
        return _failed_before_run(opts.format, exc.message, exc.code)
    try:  # the instruction may come from stdin (-) or --file
        opts.instruction = read_instruction(opts.instruction, opts.instruction_file, approval=settings.approval)
    except ConfigError as exc:
        return _failed_before_run(opts.format, exc.message, "USAGE")
    if not opts.instruction.strip():
        return _failed_before_run(opts.format, 'the instruction is empty; say what to do, e.g. cog edit "Fix the failing test"', "USAGE")
    from cogcli.gate.plan_mode import plan_command

    # "/NAME …" only (the modules that read commands are imported for such an instruction alone)
    if opts.instruction.strip().startswith("/") and (planned := plan_command(opts.instruction)) is not None:  # "/plan …" as --plan, "/go" (with --last) runs the plan
        opts.instruction, opts.plan = planned[0], opts.plan or planned[1]
        if not opts.instruction.strip():
            return _failed_before_run(opts.format, 'say what to plan: cog edit --plan "…" (or "/plan …")', "USAGE")
    if opts.flags.get("plan_allow") and not opts.plan:  # the flag alone (config.toml's holds for every plan)
        return _failed_before_run(opts.format, "--plan-allow goes with --plan (it lets a tool run in plan mode)", "USAGE")
    try:  # "/NAME args": a custom command (.agents/commands/NAME.md, ~/.config/cog/commands/NAME.md)
        picked = None
        if opts.instruction.startswith("/"):
            from cogcli.project.custom_commands import expand_instruction

            opts.instruction, picked, _ = expand_instruction(opts.instruction, opts.root, opts.flags.model or None)
        if picked:  # the command's own model (a workspace command's held to the workspace), as --model
            opts.flags = opts.flags.replace(model=picked)
            settings = load_settings(opts.root, opts.flags, output_schema=opts.output_schema)
    except ConfigError as exc:
        return _failed_before_run(opts.format, exc.message, "USAGE")
    try:  # --image: each checked (its bytes, its size) before anything runs
        attached = []
        if opts.images:
            from workspace_tools.files.image import attached_images

            attached = attached_images(opts.images, opts.cwd or Path.cwd())
    except ValueError as exc:
        return _failed_before_run(opts.format, str(exc), "USAGE")
    if opts.ray is not None and opts.attempts is None:
        return _failed_before_run(opts.format, "--ray runs best-of-N attempts on Ray: it goes with --attempts N (2 or more); "
                                  "for a file of tasks use cog batch TASKS.jsonl --ray", "USAGE")
    if opts.attempts is not None:  # --attempts 1 too: refused there, naming the fix (not quietly a plain run)
        from cogcli.commands.attempts import run_attempts_command

        _started(opts)

        return run_attempts_command(opts, settings, attached)
    entered = None
    if opts.worktree is not None and settings.model is not None:  # the session moves into a new worktree
        from cogcli.worktrees.enter import enter

        try:
            entered = enter(opts.root, opts.cwd, opts.worktree)
            opts.root, opts.cwd = entered.root, entered.cwd
            settings = load_settings(opts.root, opts.flags, output_schema=opts.output_schema)
        except ConfigError as exc:
            return _failed_before_run(opts.format, exc.message, exc.code)
    hooks = None
    try:
        if opts.commit and settings.model is not None:
            from cogcli.commands.gitcommit import ensure_committable

            hooks = ensure_committable(settings.root, allow_dirty=opts.allow_dirty, hooks=opts.commit_hooks)  # as before the run
        # the model, trust in the workspace's commands, the tools: checked before anything runs
        session = Session.open(settings, cwd=opts.cwd, record=opts.record, make_tools=make_tools)
    except ConfigError as exc:
        return _failed_before_run(opts.format, exc.message, exc.code)
    try:
        approve = make_approver(settings.approval)
    except ConfigError as exc:
        session.close()
        return _failed_before_run(opts.format, exc.message, exc.code)

    renderer = make_renderer(opts.format)
    quiet_approvals(renderer, approve)
    output = RunOutput(renderer, on_first_event=opts.on_started)
    try:
        result, received = anyio.run(_run, session, opts, output, approve, attached)
    finally:
        _started(opts)
        getattr(approve, "close", lambda: None)()
        session.close()
    not_started = close_output(result, output, opts.format)
    if not_started is not None:
        return not_started

    # what the run's end means is the session's to say; a broken-off run failed
    code = exit_status(result) if output.finish is not None and not isinstance(result, CogError) else EXIT_TASK_FAILED
    if received and code == EXIT_INTERRUPTED:
        code = 128 + received[0]
    if output.closed and not received:
        code = EXIT_OUTPUT_CLOSED
    thread_id = getattr(result, "thread_id", None) or renderer.summary.thread_id
    if thread_id and opts.format != "jsonl":
        go = "carry out the plan" if opts.plan else "continue it"  # a plan-mode run changed nothing: say how to run its plan
        say(f'thread {thread_id} ({go}: cog edit{_workspace_flag(settings.root)} --thread {thread_id} "{"go" if opts.plan else "…"}")')
    if opts.commit:
        code = _commit(settings, opts, result, code, hooks)
    elif entered is not None:
        from cogcli.worktrees.enter import finish

        finish(entered, opts.instruction, [f.path for f in getattr(result, "files_changed", None) or []])
    return leave_lingering_tools(code)


def _started(opts: EditOptions) -> None:
    if opts.on_started is not None:
        opts.on_started()


def _workspace_flag(root: Path) -> str:
    """`` -C ROOT`` when cog was started outside the workspace (so the hint works where it is
    pasted: the folder cog was pointed at), else nothing."""
    try:
        here = Path.cwd().resolve()
    except OSError:
        here = None
    if here is not None and (here == root or root in here.parents):
        return ""
    import shlex

    return f" -C {shlex.quote(str(root))}"


def close_output(result: Any, output: RunOutput, fmt: str) -> int | None:
    """Close the run's output after :func:`run_watched`. A run that never started (``result`` a
    :class:`CogError` found before its start event) is said on stderr (with ``--json`` also as an
    ``error`` and a ``finish`` line) and its exit code returned (2 configuration, 1 otherwise); a
    run that broke off without its ``finish`` (it never should) gets one; otherwise the renderer is
    closed. Returns None when the run started."""
    renderer = output.renderer
    if isinstance(result, CogError) and output.start is None:  # found before the run started: nothing ran
        exit_code = EXIT_USAGE if isinstance(result, ConfigError) else EXIT_TASK_FAILED
        say(result.message)
        if fmt == "jsonl":
            _end_stream(renderer, EventEmitter(), result.message, result.code)
        else:
            renderer.close()
        return exit_code
    if output.finish is None:  # the run broke off without its finish (it never should): end the stream
        message = result.message if isinstance(result, CogError) else "the run ended unexpectedly"
        say(message)
        emitter = EventEmitter()
        emitter.seq = output.next_seq
        start = output.start
        _end_stream(output, emitter, message, getattr(result, "code", None), message_id=getattr(start, "message_id", None), thread_id=getattr(start, "thread_id", ""))
    else:
        renderer.close()
    return None


class RunOutput:
    """Where the run's events go: the renderer, plus what the command needs to know of them —
    a renderer whose output's reader went away (``| head -1``) aborts the run rather than
    letting it go on changing files nobody sees; the start and finish seen."""

    def __init__(self, renderer: Renderer, on_first_event: Callable[[], None] | None = None) -> None:
        self.renderer = renderer
        #: called (once) before the first event is drawn
        self.on_first_event = on_first_event
        self.abort: AbortSignal | None = None
        self.start: Any = None
        self.finish: Any = None
        self.next_seq = 0
        #: the output's reader went away
        self.closed = False

    @property
    def summary(self) -> Any:
        return self.renderer.summary

    def handle(self, event: Any) -> None:
        if self.on_first_event is not None:
            self.on_first_event, started = None, self.on_first_event
            started()
        kind = getattr(event, "type", None)
        if kind == "start":
            self.start = event
        elif kind == "finish":
            self.finish = event
        self.next_seq = max(self.next_seq, (getattr(event, "seq", None) or 0) + 1)
        try:
            self.renderer.handle(event)
        except BrokenPipeError:
            self.renderer.broken = True  # type: ignore[attr-defined]
        if getattr(self.renderer, "broken", False) and not self.closed:
            self.closed = True
            log.warning("stdout was closed: stopping the run")
            if self.abort is not None:
                self.abort.abort("stdout was closed by its reader")

    def close(self) -> None:
        self.renderer.close()


async def _run(session: Session, opts: EditOptions, output: RunOutput, approve: Approve | None, images: Sequence[Any] = ()) -> tuple[Any, list[int]]:
    """The one run of ``cog edit``; the session is closed under the same signal watch."""
    from cogcli.gate.plan_mode import PlanMode

    plan = PlanMode.of(session.settings.plan_allow) if opts.plan else None
    return await run_watched(session, opts.instruction, output, thread=opts.thread, last=opts.last, approve=approve, close_session=True, plan=plan, images=images)


async def run_watched(
    session: Session,
    instruction: str,
    output: RunOutput,
    *,
    thread: str | None = None,
    last: bool = False,
    approve: Approve | None = None,
    close_session: bool = False,
    plan: Any = None,
    images: Sequence[Any] = (),
) -> tuple[Any, list[int]]:
    """Run ``instruction`` in ``session`` under the signal watch (Ctrl-C and SIGTERM abort the run,
    which ends with its ``finish``; the signals received are returned beside the result), its
    events drawn by ``output``. An error found before the run starts (an MCP server that cannot
    start, an unknown thread, the thread store) is returned, not raised, so it reaches the caller
    as itself and not wrapped in the signal watch's task group. ``close_session``: close the
    session after the run, still under the watch (``cog edit``; ``cog chat`` keeps it open);
    ``plan``: a :class:`~cogcli.gate.plan_mode.PlanMode` (only read-only tools run); ``images``:
    :class:`~cogcli.contract.output.ImagePart` s the model sees with the instruction."""
    abort = AbortSignal()
    output.abort = abort
    async with abort_on_signals(abort) as received:
        result: Any = None
        try:
            async with session if close_session else contextlib.nullcontext(session):
                result = await session.run(instruction, thread=thread, last=last, approve=approve, on_event=output.handle, signal=abort, plan=plan, images=images)
        except CogError as exc:
            result = exc if result is None else result
        except Exception as exc:  # closing what the run started failed: the run's own end stands
            log.debug("closing the session failed", exc_info=True)
            result = RunNotStarted(f"the run failed: {type(exc).__name__}: {exc}") if result is None else result
    return result, received


def _commit(settings: Any, opts: EditOptions, result: Any, code: int, hooks: Any = None) -> int:
    from cogcli.commands.gitcommit import commit_changes

    if code != EXIT_OK:
        sys.stderr.write("cog: not committing: the run did not finish with passing tests\n")
        return code
    paths = [f.path for f in result.files_changed]
    if not paths:
        sys.stderr.write("cog: nothing to commit: the run changed no files\n")
        return code
    try:
        sha, subject = commit_changes(
            settings.root, paths, opts.instruction, model=settings.model, thread_id=result.thread_id, hooks=hooks
        )
    except CogError as exc:
        say(f"commit failed: {exc.message}")
        return EXIT_TASK_FAILED
    say(f"committed {sha[:10]} {subject}")
    return code
