"""``cog edit "INSTRUCTION"``: settings → model → tools → agent → run, drawn live; exit code from
how the run ended; optionally commit what it changed."""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from cogcli.approvals import Approve
from cogcli.commands.approve import make_approver
from cogcli.commands.common import abort_on_signals, make_tools
from cogcli.config import NO_MODEL_MESSAGE, Settings, load_settings
from cogcli.context import AbortSignal
from cogcli.errors import CogError, ConfigError
from cogcli.render import Renderer, make_renderer
from cogcli.render.summary import EXIT_INTERRUPTED, EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE

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
    mcp: list[str] = field(default_factory=list)
    #: run_tests sandbox: auto | on | off (None: COG_SANDBOX, [tool.cog] sandbox, auto)
    sandbox: str | None = None
    #: ask | auto | stdin (None: ask on a terminal, else auto when CI is set, else refuse)
    approval: str | None = None
    #: secret-looking files the tools may read all the same (--allow-secret)
    allow_secrets: list[str] = field(default_factory=list)
    #: i17: read the instruction from this file (--file); ``instruction == "-"`` reads stdin
    instruction_file: Path | None = None
    #: i17: continue the most recent thread (--last)
    last: bool = False
    #: i17: the directory cog runs in (instruction files are read from the root down to it)
    cwd: Path | None = None
    #: i17: --context-window N (tokens)
    context_window: int | None = None
    #: i17: --no-instructions: read no AGENTS.md (nor the personal file)
    no_instructions: bool = False


def _usage_error(message: str) -> int:
    sys.stderr.write(f"cog: {message}\n")
    return EXIT_USAGE


def run_edit(opts: EditOptions) -> int:
    """Run the agent once; return the exit code (0 done and tests pass, 1 task failed, 2 usage or
    configuration, 130/143 interrupted)."""
    from cogcli.commands.edit_input import read_instruction

    try:  # i17: the instruction may come from stdin (-) or --file
        opts.instruction = read_instruction(opts.instruction, opts.instruction_file, approval=opts.approval)
    except ConfigError as exc:
        return _usage_error(exc.message)
    if not opts.instruction.strip():
        return _usage_error('the instruction is empty; say what to do, e.g. cog edit "Fix the failing test"')
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
            context_window=opts.context_window,  # i17
            instructions=not opts.no_instructions,  # i17
        )
        if settings.model is None:
            return _usage_error(NO_MODEL_MESSAGE)
        if opts.commit:
            from cogcli.commands.gitcommit import ensure_committable

            ensure_committable(settings.root, allow_dirty=opts.allow_dirty)
        model = _make_model(settings, opts.record)
        tools = make_tools(settings)
        approve = make_approver(opts.approval)
    except ConfigError as exc:
        return _usage_error(exc.message)

    renderer = make_renderer(opts.format)
    try:
        result, received = anyio.run(_run, opts, settings, model, tools, renderer, approve)
    finally:
        getattr(approve, "close", lambda: None)()
    renderer.close()
    if isinstance(result, ConfigError):  # found before the run started: nothing ran
        return _usage_error(result.message)

    summary = renderer.summary
    code = summary.exit_code()  # from the stream alone: the run always ends it with one finish
    if received and code == EXIT_INTERRUPTED:
        code = 128 + received[0]
    thread_id = getattr(result, "thread_id", None) or summary.thread_id
    if thread_id and opts.format != "jsonl":
        sys.stderr.write(f'cog: thread {thread_id} (continue it: cog edit --thread {thread_id} "…")\n')
    if opts.commit:
        code = _commit(settings, opts, summary, code)
    return code


def _make_model(settings: Settings, record: Path | None) -> Any:
    from cogcli.models import get_model

    assert settings.model is not None
    model = get_model(settings.model)
    if record is not None:
        from cogcli.models.record import RecordingModel

        model = RecordingModel(model, record)
    return model


async def _run(
    opts: EditOptions, settings: Settings, model: Any, tools: list[Any], renderer: Renderer, approve: Approve | None
) -> tuple[Any, list[int]]:
    """Run under the signal watch. A ConfigError found before the run starts (an MCP server that
    cannot start, an unknown thread) is returned, not raised, so it reaches the caller as itself
    and not wrapped in the signal watch's task group."""
    abort = AbortSignal()
    async with abort_on_signals(abort) as received:
        try:
            result: Any = await _run_agent(opts, settings, model, tools, renderer, abort, approve)
        except ConfigError as exc:
            result = exc
    return result, received


async def _run_agent(
    opts: EditOptions,
    settings: Settings,
    model: Any,
    tools: list[Any],
    renderer: Renderer,
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

            tools = [*tools, *await stack.enter_async_context(mcp_tools(settings.mcp_servers, {t.name for t in tools}))]
        store = stack.enter_context(default_store(settings.root))
        thread_id = thread_to_continue(store, opts.thread, opts.last)  # i17: --last
        project = await project_context(settings, opts.cwd, model)  # i17: AGENTS.md files, the context window
        for note in project.notes:
            sys.stderr.write(f"cog: {note}\n")
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


def _commit(settings: Settings, opts: EditOptions, summary: Any, code: int) -> int:
    from cogcli.commands.gitcommit import commit_changes

    if code != EXIT_OK:
        sys.stderr.write("cog: not committing: the run did not finish with passing tests\n")
        return code
    paths = list(summary.file_stats())
    if not paths:
        sys.stderr.write("cog: nothing to commit: the run changed no files\n")
        return code
    try:
        sha, subject = commit_changes(settings.root, paths, opts.instruction, model=settings.model, thread_id=summary.thread_id)
    except CogError as exc:
        sys.stderr.write(f"cog: commit failed: {exc.message}\n")
        return EXIT_TASK_FAILED
    sys.stderr.write(f"cog: committed {sha[:10]} {subject}\n")
    return code
