"""cog as an ACP agent (:class:`CogAgent`), and :func:`serve_stdio`, which runs it on stdin/stdout.

Each ACP session is a cog :class:`~cogcli.session.Session` on the workspace its ``cwd`` is in,
opened exactly as ``cog edit`` opens one (settings, model, tools, sandbox, secret rules, trust of
the workspace's commands, journal, instructions, context window). A session's id is the id of the
thread its turns continue, so ``session/load`` of an id redraws that stored thread and a later
prompt goes on in it.

stdout carries JSON-RPC and nothing else: :func:`serve_stdio` keeps the real stdout for the
connection and points file descriptor 1 at stderr, so a stray ``print``, a warning or a child
process writing to its stdout cannot break the stream.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import acp
from acp import schema as acp_schema
from acp.helpers import update_agent_message_text, update_tool_call

from cogcli.acp.attempts import attempts_turn, requested_attempts, undo_target
from cogcli.acp.commands import announce, command_instruction
from cogcli.acp.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, NOT_FOUND, _error  # noqa: F401 (re-exported)
from cogcli.acp.listing import ListingMixin
from cogcli.acp.editor_mcp import mcp_commands  # noqa: F401 (re-exported)
from cogcli.acp.mapping import EventMapper
from cogcli.acp.modes import ASK, PLAN, ModesMixin, mode_state, plan_from_text, plan_of, plan_update
from cogcli.acp.permissions import EditorApprover
from cogcli.acp.worktree import InWorktree, commit_turn, enter_worktree, response_meta
from cogcli.acp.prompt import instruction_of, prompt_images
from cogcli.wire.coalesce import Coalescer
from cogcli.contract.context import AbortSignal
from cogcli.contract.errors import CogError
from cogcli.wire.events import RunStatus
from cogcli.settings.options import SettingFlags

log = logging.getLogger("cogcli")

#: how a run's end is an ACP stop reason (an error is said in the agent's message; the turn ended)
STOP_REASONS: dict[str, str] = {
    RunStatus.COMPLETED: "end_turn",
    RunStatus.MAX_STEPS: "max_turn_requests",
    RunStatus.ABORTED: "cancelled",
    RunStatus.DENIED: "refusal",
    RunStatus.ERROR: "end_turn",
    RunStatus.BUDGET_EXCEEDED: "max_tokens",
}


@dataclass
class AcpOptions:
    """What ``cog acp``'s flags say, for every session it opens (as ``cog edit``'s do for its run)."""

    #: the settings given as flags (:mod:`cogcli.settings.options`); ``--yes``: every call runs, nobody is asked
    flags: SettingFlags = field(default_factory=SettingFlags)
    #: makes a session's worktree when ``session/new`` asks for one (:mod:`cogcli.acp.worktree`); None: refused
    worktree: Any = None
    #: runs a prompt's attempts (:mod:`cogcli.worktrees.best_of`, :mod:`cogcli.acp.attempts`); None: refused
    attempts: Any = None


class _Outbox:
    """A turn's session updates, sent in order by one task; the run hands them over without
    waiting (its ``on_event`` is a plain function). A call's progress is coalesced
    (:mod:`cogcli.wire.coalesce`: at most 10 a second, the latest delivered before its result)."""

    def __init__(self, conn: Any, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.coalescer = Coalescer(self.queue.put_nowait)
        self.task = asyncio.ensure_future(self._pump())

    def put(self, update: Any) -> None:
        call_id = getattr(update, "tool_call_id", None)
        if call_id is not None:  # the call's held progress goes first
            self.coalescer.before(call_id)
        self.queue.put_nowait(update)

    def progress(self, update: Any) -> None:
        self.coalescer.progress(update.tool_call_id, update)

    async def _pump(self) -> None:
        while True:
            update = await self.queue.get()
            try:
                await self.conn.session_update(self.session_id, update)
            except Exception as exc:  # the editor went away: the run goes on, its thread is kept
                log.debug("a session update could not be sent: %s", exc)
            finally:
                self.queue.task_done()

    async def flush(self) -> None:
        self.coalescer.flush()
        await self.queue.join()

    async def close(self) -> None:
        await self.flush()
        self.task.cancel()


@dataclass
class _Session:
    """One ACP session: its workspace and the library session that runs its prompts."""
    id: str
    root: Path
    session: Any
    approver: EditorApprover | None
    #: the running turn's abort signal (None between turns)
    abort: AbortSignal | None = None
    #: the session mode (:mod:`cogcli.acp.modes`): ask, accept-edits or plan
    mode: str = ASK
    #: the git worktree it runs in (``_meta.cog.worktree`` of session/new), its turns committed there
    worktree: InWorktree | None = None
    #: the thread of the winner the last turn applied (best-of-N): the next /undo takes it back
    applied_thread: str | None = None


async def _slash_command(opened: _Session, text: str) -> str | None:
    """The reply to a prompt that is ``/jobs [kill ID | keep ID]``, ``/undo [RUN]`` or ``/rewind [N [both|code|conversation]]``
    (:mod:`cogcli.threads.rewind`), walking the session's thread back; None for an instruction."""
    word, _, rest = text.strip().partition(" ")
    if word == "/jobs":  # the session's background commands (cogcli.session.background): listed, or one killed
        from cogcli.session.background import jobs_reply

        return jobs_reply(opened.session, rest)
    if not text.lstrip().startswith(("/undo", "/rewind")):
        return None
    import anyio

    from cogcli.threads.rewind import slash_reply

    store_has = opened.session.has_threads() and opened.session.store().resolve_id(opened.id) == opened.id
    return await anyio.to_thread.run_sync(slash_reply, opened.session, undo_target(opened, text) or (opened.id if store_has else None), text)


class CogAgent(ModesMixin, ListingMixin):
    """The ACP agent: ``initialize``, ``session/new``, ``session/load``, ``session/list``,
    ``session/prompt``, ``session/set_mode``, ``session/cancel`` (see :mod:`cogcli.acp`)."""

    def __init__(self, options: AcpOptions | None = None) -> None:
        self.options = options or AcpOptions()
        self.conn: Any = None
        self.sessions: dict[str, _Session] = {}
        #: the editor reads files for read_file (``fs/read_text_file``: unsaved buffers)
        self.editor_reads = False

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # --- initialize -------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any) -> acp.InitializeResponse:
        from cogcli import __version__ as ours

        fs = getattr(client_capabilities, "fs", None)
        self.editor_reads = bool(getattr(fs, "read_text_file", False))
        return acp.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=acp_schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=acp_schema.PromptCapabilities(embedded_context=True, image=True, audio=False),
                mcp_capabilities=acp_schema.McpCapabilities(http=True, sse=False),
                session_capabilities=acp_schema.SessionCapabilities(list=acp_schema.SessionListCapabilities()),
            ),
            agent_info=acp_schema.Implementation(name="cog", title="cog", version=ours),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> acp.AuthenticateResponse:
        return acp.AuthenticateResponse()

    # --- sessions ---------------------------------------------------------------------------

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None, mcp_servers: list[Any] | None = None, **kwargs: Any) -> acp.NewSessionResponse:
        from cogcli.threads.store import new_thread_id

        cwd, worktree = enter_worktree(self.options.worktree, cwd, kwargs)  # _meta.cog.worktree: a new git worktree
        opened = self._open(cwd, mcp_servers, new_thread_id())
        opened.worktree = worktree
        announce(self.conn, opened.id, opened.root)  # the commands, once the editor knows the session
        return acp.NewSessionResponse(session_id=opened.id, modes=mode_state(opened.mode), field_meta=response_meta(worktree))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, additional_directories: list[str] | None = None, **kwargs: Any) -> acp.LoadSessionResponse:
        from cogcli.threads.store import UserEntry, events_from_entries

        existing = self.sessions.get(session_id)
        if existing is not None and existing.abort is not None:
            raise _error(INVALID_REQUEST, f"session {session_id} has a prompt running; cancel it first")
        opened = existing or self._open(cwd, mcp_servers, session_id, must_exist=True)
        try:
            entries = opened.session.store().entries(session_id)
        except Exception as exc:
            raise _error(INTERNAL_ERROR, f"cannot read session {session_id} from the thread store of {opened.root}: {exc}") from None
        texts = {(s.entry.message_id or f"msg_{s.seq}"): s.entry.content for s in entries if isinstance(s.entry, UserEntry)}
        mapper = EventMapper(opened.root, opened.session.run_tools, user_texts=texts)
        for event in events_from_entries(session_id, entries):
            for update in [*mapper.updates(event), *filter(None, [plan_update(event)])]:  # the plans it made, too
                await self.conn.session_update(session_id, update)
        announce(self.conn, session_id, opened.root)
        return acp.LoadSessionResponse(modes=mode_state(opened.mode))

    def _open(self, cwd: str, mcp_servers: list[Any] | None, session_id: str, *, must_exist: bool = False) -> _Session:
        from cogcli.settings.load import check_workspace, load_settings
        from cogcli.session import Session
        from workspace_tools.host.files import repository

        where = Path(cwd).expanduser()
        where = (where if where.is_absolute() else Path.cwd() / where).resolve()
        if not where.is_dir():
            raise _error(INVALID_PARAMS, f"the session's cwd {str(where)!r} is not a directory", cwd=cwd)
        found = repository(where)
        if found is None:
            raise _error(
                INVALID_PARAMS,
                f"{str(where)!r} is not in a git repository, and cog works on one (git_diff, undo and the change "
                "summary need it): open a folder inside a repository, or make this one a repository with `git init`",
                cwd=cwd,
            )
        editor_commands, editor_env = mcp_commands(mcp_servers)
        try:
            root = check_workspace(Path(found.work_tree))
            settings = load_settings(root, self.options.flags)
            if editor_commands:  # the editor's servers are the person's, as --mcp: added to theirs, over the workspace's
                own = list(settings.mcp_servers) if not settings.mcp_needs_approval else []
                settings = replace(settings, mcp_servers=[*own, *editor_commands], mcp_source="--mcp", mcp_personal=True, mcp_env=editor_env)
            # never a prompt on a terminal: the workspace's own commands run only once approved (cog trust)
            session = Session.open(settings, cwd=where, interactive=False, make_tools=self._tools_for(session_id))
        except CogError as exc:
            raise _error(INVALID_PARAMS, exc.message, errorCode=exc.code) from None
        if must_exist:
            try:
                known = session.has_threads() and session.store().resolve_id(session_id) == session_id
            except Exception as exc:
                session.close()
                raise _error(INTERNAL_ERROR, f"cannot read the thread store of {root}: {exc}") from None
            if not known:
                session.close()
                raise _error(NOT_FOUND, f"no session {session_id!r} in {root} (the session ids are cog's thread ids: cog thread list)", sessionId=session_id)
        approver = None if settings.approval == "auto" else EditorApprover(self._requester(session_id), root)
        opened = _Session(session_id, root, session, approver)
        self.sessions[session_id] = opened
        return opened

    def _tools_for(self, session_id: str) -> Any:
        """The workspace tools; read_file through the editor when it offers ``fs/read_text_file``."""
        from cogcli.session import make_tools

        if not self.editor_reads:
            return make_tools
        from cogcli.acp.files import with_editor_reads

        async def read(path: str) -> str:
            return (await self.conn.read_text_file(session_id=session_id, path=path)).content

        return with_editor_reads(make_tools, read)

    def _requester(self, session_id: str) -> Any:
        async def request(tool_call: Any, options: list[Any]) -> Any:
            return await self.conn.request_permission(session_id=session_id, tool_call=tool_call, options=options)

        return request

    # --- prompts ----------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> acp.PromptResponse:
        opened = self.sessions.get(session_id)
        if opened is None:
            raise _error(NOT_FOUND, f"no session {session_id!r}: start one with session/new or load it with session/load", sessionId=session_id)
        if opened.abort is not None:
            raise _error(INVALID_REQUEST, f"session {session_id} is already running a prompt; wait for it or cancel it")
        try:
            images = prompt_images(prompt)  # an image alone is a prompt too: the model is told it has one
        except ValueError as exc:
            raise _error(INVALID_PARAMS, str(exc)) from None
        instruction = instruction_of(prompt, opened.root) or ("(the person attached an image)" if images else "")
        if not instruction.strip():
            raise _error(INVALID_PARAMS, "the prompt is empty; say what to do")
        reply = await _slash_command(opened, instruction)  # /undo, /rewind: no model turn
        if reply is not None:
            await self.conn.session_update(opened.id, update_agent_message_text(reply))
            return acp.PromptResponse(stop_reason="end_turn")
        count, instruction = requested_attempts(self.options.attempts, kwargs, instruction)  # best-of-N: _meta.cog.attempts, /attempts N …
        if count is None:
            instruction = await command_instruction(self, opened, instruction)  # /plan, /go, custom commands
        if instruction is None:  # a mode switch alone
            return acp.PromptResponse(stop_reason="end_turn")
        abort = AbortSignal()
        opened.abort = abort
        opened.applied_thread = None  # /undo walks the session's own turns again (cogcli.acp.attempts)
        try:
            if count is not None:
                return await attempts_turn(self, opened, instruction, count, abort, images, _Outbox(self.conn, opened.id))
            return await self._turn(opened, instruction, abort, images)
        finally:
            opened.abort = None
            await commit_turn(opened.worktree, instruction)

    async def _turn(self, opened: _Session, instruction: str, abort: AbortSignal, images: list[Any] | None = None) -> acp.PromptResponse:
        session = opened.session
        outbox = _Outbox(self.conn, opened.id)
        mapper = EventMapper(opened.root, session.run_tools)
        approver = opened.approver
        if approver is not None:
            approver.mapper, approver.signal, approver.before_asking = mapper, abort, outbox.flush

        def needs_approval(name: str) -> bool:
            tool = mapper.tool(name)
            return approver is not None and bool(getattr(tool, "side_effects", None))  # the approver says when it runs

        planned: list[Any] = []

        def handle(event: Any) -> None:
            progress = getattr(event, "type", None) == "tool-update" and event.arguments is None
            for update in [*mapper.updates(event), *filter(None, [plan_update(event)])]:
                (outbox.progress if progress and update.session_update == "tool_call_update" else outbox.put)(update)
                if update.session_update == "plan":
                    planned.append(update)
            if getattr(event, "type", None) == "tool-call-end" and not needs_approval(event.tool_name):
                outbox.put(update_tool_call(event.id, status="in_progress"))

        def running(call_id: str) -> None:  # an approved call runs now
            outbox.put(update_tool_call(call_id, status="in_progress"))

        if approver is not None:
            approver.on_allowed = running
        try:
            try:
                self._make_thread(opened, instruction)
                result = await session.run(instruction, thread=opened.id, approve=approver, on_event=handle, signal=abort, plan=plan_of(opened.mode, session.settings), images=images or ())
                if opened.mode == PLAN and not planned and (steps := plan_from_text(result.output)) is not None:
                    outbox.put(steps)  # the plan the turn ended with, for the editor's plan view
            except CogError as exc:
                await outbox.flush()
                raise _error(INTERNAL_ERROR, exc.message, errorCode=exc.code) from None
            await outbox.flush()
        finally:
            await outbox.close()
            if approver is not None:
                approver.mapper = approver.signal = approver.before_asking = approver.on_allowed = None
        status = str(result.status)
        return acp.PromptResponse(
            stop_reason=STOP_REASONS.get(status, "end_turn"),  # type: ignore[arg-type]
            usage=_usage(result.usage),
            field_meta={"cog": {"status": status, "threadId": result.thread_id, **({"errorCode": result.error_code} if result.error_code else {})}},
        )

    @staticmethod
    def _make_thread(opened: _Session, instruction: str) -> None:
        """The session's thread, under the session's id, made on its first turn (a session never
        prompted leaves no thread behind)."""
        import sqlite3

        from cogcli.session import RunNotStarted, store_problem

        session = opened.session
        try:
            store = session.store()
            if store.resolve_id(opened.id) != opened.id:
                store.create_thread(opened.id, title=instruction, model=getattr(session.model, "name", None))
        except (OSError, sqlite3.Error) as exc:  # .cog a file, a full disk
            raise RunNotStarted(store_problem(opened.root, exc)) from exc

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        opened = self.sessions.get(session_id)
        if opened is not None and opened.abort is not None:
            opened.abort.abort("cancelled in the editor")

    # --- the end ----------------------------------------------------------------------------

    def abort_all(self, reason: str) -> None:
        """Abort every running turn (each ends ``cancelled``, its thread kept)."""
        for opened in self.sessions.values():
            if opened.abort is not None:
                opened.abort.abort(reason)

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` seconds) until no turn is running."""
        import anyio

        with anyio.move_on_after(timeout):
            while any(opened.abort is not None for opened in self.sessions.values()):
                await anyio.sleep(0.02)

    async def aclose(self) -> None:
        """Abort what still runs, let it end, and close every session (the model, MCP servers, the store)."""
        self.abort_all("the editor closed the connection")
        await self.wait_idle()
        for opened in list(self.sessions.values()):
            try:
                await opened.session.aclose()
            except Exception:
                log.debug("closing session %s failed", opened.id, exc_info=True)
        self.sessions.clear()


def _usage(usage: Any) -> acp_schema.Usage | None:
    if usage is None or not (usage.input_tokens or usage.output_tokens):
        return None
    return acp_schema.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens or usage.input_tokens + usage.output_tokens,
        cached_read_tokens=usage.cached_input_tokens,
        cached_write_tokens=usage.cache_write_tokens,
        thought_tokens=usage.reasoning_tokens,
    )


# --- stdin/stdout ----------------------------------------------------------------------------


async def serve_stdio(options: AcpOptions) -> int | None:
    """Serve ACP on stdin/stdout until the editor closes stdin, or a SIGINT/SIGTERM: then the
    running turns are aborted (their threads kept, as Ctrl-C keeps cog edit's) and serving ends.
    Returns the signal received, if one was."""
    import signal

    import anyio

    from cogcli.acp.stdio import stdio_streams

    reader, writer = await stdio_streams()
    agent = CogAgent(options)
    received: list[int] = []
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for signum in signals:
                        received.append(signum)
                        log.warning("%s: stopping", signal.Signals(signum).name)
                        agent.abort_all(f"interrupted by {signal.Signals(signum).name}")
                        await agent.wait_idle()  # the turns end (cancelled) and say so before the connection closes
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            await acp.run_agent(agent, writer, reader)
            tg.cancel_scope.cancel()
    finally:
        await agent.aclose()
    return received[0] if received else None
