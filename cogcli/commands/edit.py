"""``cog edit "INSTRUCTION"``: settings → model → tools → agent → run, drawn live; exit code from
how the run ended; optionally commit what it changed."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from cogcli.approvals import Approve
from cogcli.commands.approve import make_approver
from cogcli.commands.common import abort_on_signals, leave_lingering_tools, make_tools
from cogcli.config import NO_MODEL_MESSAGE, Settings, load_settings
from cogcli.context import AbortSignal
from cogcli.errors import CogError, ConfigError, ErrorCode
from cogcli.events import ErrorEvent, EventEmitter, FinishEvent
from cogcli.render import Renderer, make_renderer
from cogcli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE
from cogcli.shown import say

log = logging.getLogger("cogcli")


@dataclass
class EditOptions:
    instruction: str
    root: Path
    model: str | None = None
    format: str = "text"
    max_steps: int | None = None
    test_command: str | None = None
    thread: str | None = None
    record: Path | None = None
    timeout: float | None = None
    commit: bool = False
    allow_dirty: bool = False
    #: --commit-hooks: let the commit run the repository's hooks (unchanged ones only)
    commit_hooks: bool = False
    mcp: list[str] = field(default_factory=list)
    #: run_tests sandbox: auto | on | off (None: COG_SANDBOX, [tool.cog] sandbox, auto)
    sandbox: str | None = None
    #: ask | auto | stdin (None: ask on a terminal, else auto when CI is set, else refuse)
    approval: str | None = None
    #: secret-looking files the tools may read all the same (--allow-secret)
    allow_secrets: list[str] = field(default_factory=list)
    #: variables the tests get on top of the allow-list (--pass-env)
    pass_env: list[str] = field(default_factory=list)
    #: more paths tests may write in the sandbox (--sandbox-writable)
    sandbox_writable: list[str] = field(default_factory=list)
    #: read the instruction from this file (--file); ``instruction == "-"`` reads stdin
    instruction_file: Path | None = None
    #: continue the most recent thread (--last)
    last: bool = False
    #: the directory cog runs in (instruction files are read from the root down to it)
    cwd: Path | None = None
    #: --context-window N (tokens)
    context_window: int | None = None
    #: --no-instructions: read no AGENTS.md (nor the personal file)
    no_instructions: bool = False


#: the run stopped because its output's reader went away (``cog edit --json | head -1``): 128 + SIGPIPE
EXIT_OUTPUT_CLOSED = 141


class RunNotStarted(CogError):
    """The run could not start (its thread store cannot be opened or written): nothing ran."""

    code = "RUN_NOT_STARTED"


def _usage_error(message: str) -> int:
    say(message)
    return EXIT_USAGE


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


def run_edit(opts: EditOptions) -> int:
    """Run the agent once; return the exit code (0 done and tests pass, 1 task failed, 2 usage or
    configuration, 130/143 interrupted, 141 the output's reader went away)."""
    from cogcli.commands.edit_input import read_instruction

    try:  # the instruction may come from stdin (-) or --file
        opts.instruction = read_instruction(opts.instruction, opts.instruction_file, approval=opts.approval)
    except ConfigError as exc:
        return _failed_before_run(opts.format, exc.message, "USAGE")
    if not opts.instruction.strip():
        return _failed_before_run(opts.format, 'the instruction is empty; say what to do, e.g. cog edit "Fix the failing test"', "USAGE")
    hooks = None
    try:
        settings = load_settings(
            opts.root,
            model=opts.model,
            test_command=opts.test_command,
            max_steps=opts.max_steps,
            timeout=opts.timeout,
            mcp_servers=opts.mcp,
            sandbox=opts.sandbox,
            allow_secrets=opts.allow_secrets,
            pass_env=opts.pass_env,
            sandbox_writable=opts.sandbox_writable,
            context_window=opts.context_window,
            instructions=not opts.no_instructions,
        )
        if settings.model is None:
            return _failed_before_run(opts.format, NO_MODEL_MESSAGE, ErrorCode.MODEL_CONFIG_ERROR)
        if opts.commit:
            from cogcli.commands.gitcommit import ensure_committable

            hooks = ensure_committable(settings.root, allow_dirty=opts.allow_dirty, hooks=opts.commit_hooks)  # as before the run
        if settings.mcp_needs_approval:  # the workspace's commands (cog.toml, pyproject.toml): only once the person approved them
            from cogcli.trust import require_trusted

            require_trusted(settings.root, "mcp_servers", settings.mcp_servers, source=settings.sources.get("mcp_servers", "pyproject.toml"))
        model = _make_model(settings, opts.record)
        from workspace_tools.journal import Journal

        journal = Journal(settings.root)  # bound to the run by its start event (see _RunOutput)
        tools = make_tools(settings, journal=journal)
        approve = make_approver(opts.approval)
    except ConfigError as exc:
        return _failed_before_run(opts.format, exc.message, exc.code)

    renderer = make_renderer(opts.format)
    output = _RunOutput(renderer, journal)
    try:
        result, received = anyio.run(_run, opts, settings, model, tools, output, approve)
    finally:
        getattr(approve, "close", lambda: None)()
        journal.close()
    if isinstance(result, CogError) and output.start is None:  # found before the run started: nothing ran
        exit_code = EXIT_USAGE if isinstance(result, ConfigError) else EXIT_TASK_FAILED
        say(result.message)
        if opts.format == "jsonl":
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

    summary = renderer.summary
    code = summary.exit_code()  # from the stream alone: the run always ends it with one finish
    if output.finish is None:
        code = EXIT_TASK_FAILED
    if received and code == EXIT_INTERRUPTED:
        code = 128 + received[0]
    if output.closed and not received:
        code = EXIT_OUTPUT_CLOSED
    thread_id = getattr(result, "thread_id", None) or summary.thread_id
    if thread_id and opts.format != "jsonl":
        say(f'thread {thread_id} (continue it: cog edit --thread {thread_id} "…")')
    if opts.commit:
        code = _commit(settings, opts, summary, code, hooks)
    return leave_lingering_tools(code)


class _RunOutput:
    """Where the run's events go: the renderer, plus what the command needs to know of them —
    the ``start`` event opens the run's undo journal before any tool runs; a renderer whose
    output's reader went away (``| head -1``) aborts the run rather than letting it go on
    changing files nobody sees; the start and finish seen."""

    def __init__(self, renderer: Renderer, journal: Any) -> None:
        self.renderer = renderer
        self.journal = journal
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
        kind = getattr(event, "type", None)
        if kind == "start":
            self.start = event
            self.journal.begin(event.thread_id, event.message_id)
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


def _make_model(settings: Settings, record: Path | None) -> Any:
    from cogcli.models import get_model

    assert settings.model is not None
    model = get_model(settings.model)
    if record is not None:
        from cogcli.models.record import RecordingModel

        model = RecordingModel(model, record)
    return model


async def _run(
    opts: EditOptions, settings: Settings, model: Any, tools: list[Any], renderer: _RunOutput, approve: Approve | None
) -> tuple[Any, list[int]]:
    """Run under the signal watch. A ConfigError found before the run starts (an MCP server that
    cannot start, an unknown thread) is returned, not raised, so it reaches the caller as itself
    and not wrapped in the signal watch's task group."""
    abort = AbortSignal()
    renderer.abort = abort
    async with abort_on_signals(abort) as received:
        try:
            result: Any = await _run_agent(opts, settings, model, tools, renderer, abort, approve)
        except CogError as exc:
            result = exc
        except (OSError, sqlite3.Error) as exc:  # the thread store: .cog a file, a full disk
            result = RunNotStarted(_store_problem(settings.root, exc))
        except Exception as exc:  # never a traceback: say what broke, end the stream
            log.debug("the run failed", exc_info=True)
            result = RunNotStarted(f"the run failed: {type(exc).__name__}: {exc}")
    return result, received


def _store_problem(root: Path, exc: BaseException) -> str:
    from cogcli.memory import COG_DIR, default_store_path, link_in_cog_dir
    from workspace_tools.hostfiles import LinkRefused

    if isinstance(exc, LinkRefused):  # a link in .cog/ met after the start's check
        return link_in_cog_dir(root, exc)
    cog_dir = root / COG_DIR
    if cog_dir.exists() and not cog_dir.is_dir():
        return f"{cog_dir} is a file; cog keeps its threads in a folder of that name: move the file away and run again"
    why = getattr(exc, "strerror", None) or str(exc)
    fix = "free some disk space and run again" if "full" in why.lower() or getattr(exc, "errno", None) == 28 else "check that it is a writable folder"
    return f"cannot write the thread store {default_store_path(root)} ({why}); nothing was run: {fix}"


async def _run_agent(
    opts: EditOptions,
    settings: Settings,
    model: Any,
    tools: list[Any],
    renderer: _RunOutput,
    abort: AbortSignal,
    approve: Approve | None,
) -> Any:
    from cogcli.commands.edit_input import project_context, thread_to_continue
    from cogcli.memory import default_store
    from cogcli.prompts import coding_agent_prompt
    from cogcli.runtime import Agent, Cogitator

    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(model.aclose)
        if settings.mcp_servers:
            from cogcli.mcp.client import mcp_tools

            # the workspace's servers start in its root: the files their approval covers are the ones that run
            cwd = (opts.cwd or settings.root) if settings.mcp_source == "--mcp" else settings.root
            tools = [*tools, *await stack.enter_async_context(mcp_tools(settings.mcp_servers, {t.name for t in tools}, cwd=cwd))]
        store = stack.enter_context(default_store(settings.root))
        thread_id = thread_to_continue(store, opts.thread, opts.last)
        project = await project_context(settings, opts.cwd, model)  # AGENTS.md files, the context window
        for note in project.notes:
            say(note)
        prompt = coding_agent_prompt(settings.root.name, [t.name for t in tools], settings.test_command)
        agent = Agent(
            name="cog",
            instructions=f"{prompt}\n\n{project.section}" if project.section else prompt,
            model=model,
            tools=tools,
            max_steps=settings.max_steps,
            instruction_files=project.files,
            nearby_instructions=project.nearby,
            context_window=project.window,
        )
        return await Cogitator(store).run(
            agent, input=opts.instruction, thread_id=thread_id, on_event=renderer.handle, signal=abort, approve=approve
        )


def _commit(settings: Settings, opts: EditOptions, summary: Any, code: int, hooks: Any = None) -> int:
    from cogcli.commands.gitcommit import commit_changes

    if code != EXIT_OK:
        sys.stderr.write("cog: not committing: the run did not finish with passing tests\n")
        return code
    paths = list(summary.file_stats())
    if not paths:
        sys.stderr.write("cog: nothing to commit: the run changed no files\n")
        return code
    try:
        sha, subject = commit_changes(
            settings.root, paths, opts.instruction, model=settings.model, thread_id=summary.thread_id, hooks=hooks
        )
    except CogError as exc:
        say(f"commit failed: {exc.message}")
        return EXIT_TASK_FAILED
    say(f"committed {sha[:10]} {subject}")
    return code
