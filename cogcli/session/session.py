"""The one way a run starts: :class:`Session`, a workspace and its settings made ready to run
instructions, below every front end (``cog edit``, ``cog serve``, ``cog mcp``, ``cog tool``).

    session = Session.open(load_settings(root))       # the model, the tools, trust: checked here
    async with session:
        result = await session.run("Fix the failing test", on_event=renderer.handle)
    exit_status(result)                                # 0 done and tests pass, 1 failed, …

A session owns what starting a run decides: the model (from the settings, recorded to a cassette
on request), the tools (journal for ``cog undo``, test sandbox, secret-file rules, test command,
runner, timeouts), the approval of the workspace's own commands (MCP servers from cog.toml or
pyproject.toml, started in the workspace root), the instructions (the system prompt, AGENTS.md
files under the same secret rules, notes about them), the model's context window, the thread
store, and what a run's end means as an exit status. Front ends parse, call it, and draw events.

Nothing here imports a model client, MCP, the run loop or git until used (``cog tools`` lists with one).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from cogcli.settings.load import NO_MODEL_MESSAGE, Settings, load_settings
from cogcli.contract.errors import CogError, ConfigError, ErrorCode, where_it_broke
from cogcli.session.factory import SessionOptions, make_model, make_tools, run_limits, start_telemetry

if TYPE_CHECKING:
    from cogcli.gate.approval import Approve
    from cogcli.contract.context import AbortSignal, UpdateCallback
    from cogcli.wire.events import CompactionEvent
    from cogcli.models.base import UsageReport
    from cogcli.gate.plan_mode import PlanMode
    from cogcli.threads.store import ThreadInfo, ThreadStore
    from cogcli.contract.output import ImagePart
    from cogcli.contract.result import ToolResult
    from cogcli.loop.runtime import EventCallback, RunResult
    from cogcli.contract.tool import Tool
    from cogcli.threads.undo import RunRef, UndoPlan

log = logging.getLogger("cogcli")

ToolMaker = Callable[..., "list[Tool[Any]]"]  # what makes the workspace tools: make_tools(settings, journal=…, only=…)


class RunNotStarted(CogError):
    """The run could not start (its thread store cannot be opened or written): nothing ran."""

    code = "RUN_NOT_STARTED"


def _say(note: str) -> None:
    from cogcli.shown.visible import say

    say(note)


class Session:
    """A workspace and its settings, ready to run instructions and call tools.

    Made with :meth:`open` to run (checks and builds everything a run needs, raising
    :class:`ConfigError` for what is wrong, before anything runs), or directly
    (``Session(settings)``) for the tools alone. Close it with ``async with`` / :meth:`aclose`
    (or :meth:`close` when it never ran): the model, the MCP servers it started, the thread
    store and the undo journal are closed there.
    """

    def __init__(
        self,
        settings: Settings | Path,
        *,
        cwd: Path | None = None,
        record: Path | None = None,
        interactive: bool | None = None,
        only: Collection[str] | None = None,
        make_tools: ToolMaker = make_tools,
        on_note: Callable[[str], None] = _say,
        telemetry: Any = None,
    ) -> None:
        """``settings``: the workspace's, or its root (then read when a run or a tool first
        needs them: its threads need none); ``cwd``: where the person is (instruction files are
        read from the root down to it; ``--mcp`` servers start there); ``record``: record the model's turns to this cassette;
        ``interactive``: ask on the terminal to approve the workspace's commands (None: when
        there is one; False: never, refuse unapproved ones); ``only``: the direct-call tools are
        just these; ``make_tools``: what makes the workspace tools (a front end adding its own
        wraps :func:`make_tools`); ``on_note``: where notes about instruction files go (stderr);
        ``telemetry``: a :class:`cogcli.wire.telemetry.Telemetry` for the runs' spans (None: one from the
        environment when it asks for spans, ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``COG_OTEL=1``)."""
        self._settings = settings if isinstance(settings, Settings) else None
        self.root = settings.root if isinstance(settings, Settings) else Path(settings)
        self.cwd = cwd
        self.record = record
        self.interactive = interactive
        self.only = only
        self.make_tools = make_tools
        self.on_note = on_note
        self.model: Any = None
        self.journal: Any = None
        self.budget: Any = None
        self.output_schema: Any = None
        self.telemetry = telemetry
        #: the hook commands its runs run (:mod:`cogcli.hooks`), made by :meth:`prepare`
        self.command_hooks: Any = None
        self._run_tools: list[Tool[Any]] | None = None
        self._direct_tools: list[Tool[Any]] | None = None
        self._mcp_tools: list[Tool[Any]] | None = None
        self._server_checked = False
        self.skills: Any = None
        self._store: ThreadStore | None = None
        self._stack = contextlib.AsyncExitStack()

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.root)
        return self._settings

    # --- making one -----------------------------------------------------------------------

    @classmethod
    def open(cls, settings: Settings | Path, **options: Unpack[SessionOptions]) -> Session:
        """A session ready to run (``settings``: a workspace root loads its settings). Checks, in
        order: a model is configured, the workspace's own commands are approved, the model can
        be made, the tools can (``sandbox = "on"`` needs bubblewrap). Raises :class:`ConfigError`
        naming the first problem; nothing has run then."""
        session = cls(settings, **options)
        session.prepare()
        return session

    def prepare(self) -> None:
        """:meth:`check`, then :meth:`build` (see :meth:`open`)."""
        self.check()
        self.build()

    def check(self) -> None:
        """What may ask the person or refuse, cheaply, in :meth:`open`'s order; builds nothing."""
        settings = self.settings
        if settings.model is None:
            raise ConfigError(NO_MODEL_MESSAGE, code=ErrorCode.MODEL_CONFIG_ERROR)
        if settings.mcp_needs_approval:  # the workspace's commands (cog.toml, pyproject.toml): only once the person approved them
            from cogcli.settings.trust import require_trusted

            source = settings.sources.get("mcp_servers", "pyproject.toml")
            require_trusted(settings.root, "mcp_servers", settings.mcp_servers, interactive=self.interactive, source=source)
        for name, server in settings.workspace_remote_servers.items():  # a workspace's remote server: its URL approved
            from cogcli.settings.trust import require_trusted

            source = settings.sources.get("remote_servers", "pyproject.toml")
            require_trusted(settings.root, f"mcp_servers.{name}", [server.url], interactive=self.interactive, source=source)
        self.budget, self.output_schema = run_limits(settings)  # the person's flags, checked before anything runs
        from cogcli.hooks.trust import session_hooks

        self.command_hooks = session_hooks(settings, interactive=self.interactive)  # the workspace's: only once approved

    def build(self) -> None:
        """Make the model, the undo journal and the run's tools, once :meth:`check` passed (cog chat: while its prompt is up)."""
        settings = self.settings
        self.model = make_model(settings, self.record)
        self.telemetry = self.telemetry or start_telemetry()
        if self.telemetry is not None:  # each model request a `chat {model}` span
            self.model = self.telemetry.traced(self.model)
        from workspace_tools.files.journal import Journal

        self.journal = Journal(settings.root)  # bound to each run by its start event
        if self.command_hooks:  # what a hook changes in the workspace is recorded for cog undo, as a command's
            from workspace_tools.shell.command_undo import CommandUndo

            self.command_hooks.undo = CommandUndo(settings.root, self.journal, ignored=settings.undo_ignored)
        try:
            from cogcli.session.extras import agent_tools

            workspace = self.make_tools(settings, journal=self.journal)
            own, self.skills = agent_tools(settings, self.on_note, [t.name for t in workspace])  # update_plan, load_skill, task
            self._run_tools = [*workspace, *own]
        except BaseException:
            self.journal.close()
            raise

    # --- direct calls (cog tool, cog mcp) ---------------------------------------------------

    @property
    def tools(self) -> list[Tool[Any]]:
        """The workspace tools for direct calls: as a run's, but journaled by no run."""
        if self._direct_tools is None:
            self._direct_tools = self.make_tools(self.settings, only=self.only)
        return self._direct_tools

    async def invoke_tool(
        self,
        name: str,
        args: Mapping[str, Any] | str | None = None,
        *,
        on_update: UpdateCallback | None = None,
        call_id: str | None = None,
        timeout: float | None = None,
        signal: AbortSignal | None = None,
    ) -> ToolResult:
        """Call the tool ``name`` outside a run, exactly as a run calls it
        (:func:`cogcli.contract.invoke.invoke_tool`): validated, run under its timeout, split, redacted."""
        from cogcli.contract.invoke import invoke_tool

        return await invoke_tool(name, args, tools=self.tools, call_id=call_id, on_update=on_update, timeout=timeout, signal=signal)

    # --- runs -----------------------------------------------------------------------------

    async def run(
        self,
        instruction: str,
        *,
        thread: str | None = None,
        last: bool = False,
        approve: Approve | None = None,
        on_event: EventCallback | None = None,
        signal: AbortSignal | None = None,
        plan: PlanMode | None = None,
        images: Sequence[ImagePart] = (),
    ) -> RunResult:
        """Run ``instruction`` (with the ``images`` the person attached, :func:`workspace_tools.files.image.attached_image`), in a new thread or continuing ``thread`` (an id or a unique prefix)
        or, with ``last``, the most recent thread here. Events go to ``on_event`` (the ``start``
        event first opens the run's undo journal); ``approve`` answers calls with side effects
        (None: every call runs); ``signal`` aborts the run, which still ends with its one ``finish``;
        ``plan`` runs it in plan mode (:mod:`cogcli.gate.plan_mode`: only read-only tools run).

        Raises before the start event, with nothing run: :class:`ConfigError` (an unknown thread,
        an MCP server that does not start), :class:`RunNotStarted` (the thread store cannot be
        written, or anything unforeseen)."""
        import sqlite3  # here, not at the top: listing the tools (cog tools) opens no store

        try:
            return await self._run(instruction, thread, last, approve, on_event, signal, plan, images)
        except CogError:
            raise
        except (OSError, sqlite3.Error) as exc:  # the thread store: .cog a file, a full disk
            raise RunNotStarted(store_problem(self.root, exc)) from exc
        except Exception as exc:  # never a traceback, but what broke and where, said to the person (not only with -v)
            log.debug("the run failed", exc_info=True)
            raise RunNotStarted(f"the run failed: {type(exc).__name__}: {exc}{where_it_broke(exc)}") from exc

    async def _run(
        self, instruction: str, thread: str | None, last: bool, approve: Approve | None,
        on_event: EventCallback | None, signal: AbortSignal | None, plan: PlanMode | None = None,
        images: Sequence[ImagePart] = (),
    ) -> RunResult:
        from cogcli.project.system_prompt import coding_agent_prompt
        from cogcli.loop.runtime import Agent, Cogitator
        from cogcli.session.extras import run_instructions
        from cogcli.session.project import project_context, thread_to_continue

        if self.model is None:
            self.prepare()
        if not self._server_checked:  # a model server on this machine that is not running: said before anything is stored
            from cogcli.models.local_server import check_local_server

            await check_local_server(self.model)
            self._server_checked = True
        from cogcli.models.http_client import while_connecting

        # the MCP servers first, outside the connecting task group: their clients' cancel scopes
        # live as long as the session, so they must not be entered inside a scope that ends sooner
        tools = [*(self._run_tools or []), *await self._started_mcp_tools()]

        async def set_up() -> tuple[Any, Any, Agent]:  # while the first request's connection opens
            if self._store is None:  # its checks run git: in a worker thread, while this one connects
                from cogcli.threads.store import default_store_aside

                self._store = await default_store_aside(self.root)
            store = self.store()
            thread_id = thread_to_continue(store, thread, last)
            project = await project_context(self.settings, self.cwd, self.model)  # AGENTS.md files, the context window
            for note in [*project.notes, *(self.skills.notes if self.skills is not None else [])]:  # instruction files, skills left out
                self.on_note(note)
            settings = self.settings
            prompt = coding_agent_prompt(settings.root.name, [t.name for t in tools], settings.test_command)
            agent = Agent(
                name="cog",
                instructions=run_instructions(prompt, project.section, self.skills, plan, tools),
                model=self.model,
                tools=tools,
                max_steps=settings.max_steps,
                instruction_files=project.files,
                nearby_instructions=project.nearby,
                context_window=project.window,
                budget=self.budget,
                output_schema=self.output_schema,
            )
            return store, thread_id, agent

        store, thread_id, agent = await while_connecting(self.model, set_up)
        settings = self.settings
        journal = self.journal
        spans = self.telemetry.run_spans(settings.model) if self.telemetry is not None else None

        def handle(event: Any) -> None:
            if getattr(event, "type", None) == "start":  # before any tool of the run writes
                journal.begin(event.thread_id, event.message_id)
            if spans is not None:
                spans.handle(event)
            if on_event is not None:
                on_event(event)

        return await Cogitator(store).run(
            agent, input=instruction, thread_id=thread_id, on_event=handle, signal=signal, approve=approve, hooks=self.command_hooks, plan=plan,
            images=images,
        )

    def run_tools(self) -> list[Tool[Any]]:
        """The tools a run of this session is given: the workspace's, then the MCP servers' once
        a run started them. For a front end that draws calls by what their tools declare (``kind``,
        ``presentation``); empty before :meth:`prepare`."""
        return [*(self._run_tools or []), *(self._mcp_tools or [])]

    async def _started_mcp_tools(self) -> list[Tool[Any]]:
        """The tools of the settings' MCP servers, started once for the session's life."""
        if self._mcp_tools is None:
            self._mcp_tools = []
            if self.settings.mcp_servers or self.settings.remote_servers or self.settings.workspace_remote_servers:
                from cogcli.mcp.client import RemoteSpec, mcp_tools
                from cogcli.settings.remote_servers import header_values

                # the workspace's servers start in its root: the files their approval covers are the ones that run
                settings = self.settings
                cwd = settings.root if settings.mcp_needs_approval else (self.cwd or settings.root)
                names = {t.name for t in self._run_tools or []}
                remotes = [RemoteSpec(name, s.url, header_values(name, s)) for name, s in settings.remote_servers.items()]
                remotes += [RemoteSpec(name, s.url, {}) for name, s in settings.workspace_remote_servers.items()]
                self._mcp_tools = await self._stack.enter_async_context(
                    mcp_tools(settings.mcp_servers, names, cwd=cwd, env=settings.mcp_env, remotes=remotes)
                )
        return self._mcp_tools

    async def compact(
        self, thread: str, *, signal: AbortSignal | None = None, on_usage: Callable[[UsageReport], Any] | None = None
    ) -> CompactionEvent | None:
        """Compact the conversation of ``thread`` now, on request (``cog chat``'s ``/compact``):
        :func:`cogcli.session.compact.compact_thread`."""
        from cogcli.session.compact import compact_thread

        if self.model is None:
            self.prepare()
        return await compact_thread(self.store(), self.model, self.settings, thread, hooks=self.command_hooks, signal=signal, on_usage=on_usage)

    # --- threads ----------------------------------------------------------------------------

    def store(self) -> ThreadStore:
        """The workspace's thread store (``.cog/threads.db``), opened on first use."""
        if self._store is None:
            from cogcli.threads.store import default_store

            self._store = default_store(self.root)
        return self._store

    def has_threads(self) -> bool:
        """Whether any run kept a thread here yet (asking creates nothing)."""
        from cogcli.threads.store import default_store_path

        return self._store is not None or default_store_path(self.root).exists()

    def threads(self, limit: int | None = None) -> list[ThreadInfo]:
        """The stored threads of this workspace, newest first (none before the first run)."""
        return self.store().list_threads(limit) if self.has_threads() else []

    def undo(
        self, thread_id: str | None = None, *, to: str | None = None, dry_run: bool = False, code: bool = True, conversation: bool = False
    ) -> UndoPlan:
        """Walk ``thread_id`` back — without it, the workspace's runs across its threads, newest
        first: the newest run that changed files and is not undone yet, or with ``to`` (a run's
        number or message id) every run back to that one. ``code``: put their files back from their
        signed journals; ``conversation``: the model no longer reads their turns (without it, the
        next run is told what was undone). Notes it in each thread; with ``dry_run`` only plans it.
        Returns the plan. Raises :class:`~cogcli.threads.undo.NothingToUndo` (no run yet, no such
        thread or run, nothing changed, undone already), :class:`~cogcli.threads.undo.UndoRefused` (a
        file changed since: nothing written), :class:`ConfigError` (the store cannot be used)."""
        from cogcli.threads.undo import apply_undo, plan_runs

        runs, thread = self.runs(thread_id)
        plan = plan_runs(self.root, runs, thread, to=to, code=code, conversation=conversation)
        if not dry_run:
            apply_undo(plan)
            for each, entries in plan.entries().items():
                self.store().append(each, entries)
        return plan

    def runs(self, thread_id: str | None = None) -> tuple[list[RunRef], str]:
        """The runs :meth:`undo` walks (``thread_id``'s, or the workspace's), oldest first, and their thread."""
        from cogcli.threads.undo import NothingToUndo
        from cogcli.threads.workspace_runs import runs_of

        if not self.has_threads():
            raise NothingToUndo(f"nothing to undo: no run in {self.root} yet")
        return runs_of(self.store(), thread_id)

    # --- closing ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Kill the background commands, stop the MCP servers, close the model, the thread store and the journal."""
        try:
            self.close_tools()
            await self._stack.aclose()
            if self.model is not None:
                await self.model.aclose()
        finally:
            if self.telemetry is not None:
                self.telemetry.shutdown()
            self.close()

    def close_tools(self) -> None:
        """Release what the session's tools hold (``Tool.close``: background commands killed), once."""
        made, self._run_tools, self._direct_tools = [*(self._run_tools or ()), *(self._direct_tools or ())], None, None
        for close in {id(t.close): t.close for t in made if t.close is not None}.values():
            close()

    def close(self) -> None:
        """Close the tools, the thread store and the journal (a session that ran: :meth:`aclose`)."""
        self.close_tools()
        if self._store is not None:
            self._store.close()
            self._store = None
        if self.journal is not None:
            self.journal.close()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def store_problem(root: Path, exc: BaseException) -> str:
    """What is wrong with the thread store when writing it failed with ``exc``, and the fix."""
    from cogcli.threads.store import COG_DIR, default_store_path, link_in_cog_dir
    from workspace_tools.host.files import LinkRefused

    if isinstance(exc, LinkRefused):  # a link in .cog/ met after the start's check
        return link_in_cog_dir(root, exc)
    cog_dir = root / COG_DIR
    if cog_dir.exists() and not cog_dir.is_dir():
        return f"{cog_dir} is a file; cog keeps its threads in a folder of that name: move the file away and run again"
    why = getattr(exc, "strerror", None) or str(exc)
    fix = "free some disk space and run again" if "full" in why.lower() or getattr(exc, "errno", None) == 28 else "check that it is a writable folder"
    return f"cannot write the thread store {default_store_path(root)} ({why}); nothing was run: {fix}"

