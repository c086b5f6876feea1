"""``cog chat``: an interactive session in the terminal. Each line typed is an instruction run in
one thread through the library :class:`~cogcli.session.Session` — the model reads the conversation
so far — drawn with the same rows and asked the same approvals as ``cog edit`` on a terminal
(:func:`cogcli.commands.edit.run_watched`, :func:`cogcli.commands.approve.make_approver`).

The line editor is prompt_toolkit's: a history per workspace in the person's state folder
(:mod:`cogcli.chat.line_history`), Alt-Enter or a trailing ``\\`` for a new line, a paste kept as one
message, slash commands completed, a status line below the prompt (:mod:`cogcli.chat.status`).
Between prompts the terminal is the run's, as with ``cog edit``. The prompt comes once what may ask
or refuse is checked; the session is built behind it (:mod:`cogcli.chat.set_up`).

Ctrl-C during a run aborts that run (its calls end, its thread is kept, the prompt comes back); at
the prompt it clears the line, and on an empty line, twice, leaves; Ctrl-D leaves (exit 0).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.project.slash_commands import COMMANDS, help_text, parse, unknown_text
from cogcli.chat.set_up import BackgroundSetUp, SetUpFailed
from cogcli.chat.status import ChatState
from cogcli.settings.load import load_settings, no_model_message
from cogcli.contract.errors import CogError, ConfigError
from cogcli.wire.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from cogcli.settings.options import SettingFlags
from cogcli.session import Session, make_tools, store_problem
from cogcli.shown.visible import say, visible

log = logging.getLogger("cogcli")

PROMPT = "cog> "
NO_SESSION = frozenset({"/help", "/exit", "/new", "/thread", "/allowed", "/image"})  # done at once, even during set-up
LEAVE_HINT = "(Ctrl-C again on an empty line, or Ctrl-D, to leave)"


@dataclass
class ChatOptions:
    """``cog chat``'s command line, parsed."""
    root: Path
    cwd: Path | None = None  # where cog runs (instruction files are read from the root down to it)
    #: the settings given as flags (:mod:`cogcli.settings.options`); ``/model`` replaces the model
    flags: SettingFlags = field(default_factory=SettingFlags)
    thread: str | None = None  # continue this thread (an id or a unique prefix) …
    last: bool = False  # … or the most recent one here
    #: --worktree [NAME]: the chat runs in a new git worktree ("": cog names it)
    worktree: str | None = None


def chat_command(*, directory: Path | None, thread: str | None, last: bool, worktree: bool, worktree_name: str | None,
                 flags: SettingFlags) -> int:
    """``cog chat``'s parameters as its command line gives them (typer's, :mod:`cogcli.cli.chat`, or
    the quick path's, :mod:`cogcli.cli.lean_start`: both call this) → :func:`run_chat`'s code."""
    from cogcli.settings.load import find_workspace

    try:
        if thread and last:
            raise ConfigError("--thread and --last both name a thread to continue; give one")
        root = find_workspace(directory)
    except ConfigError as exc:
        say(exc.message)
        return EXIT_USAGE
    return run_chat(ChatOptions(root=root, cwd=(directory or Path.cwd()).expanduser().resolve(), flags=flags, thread=thread,
                                last=last, worktree=(worktree_name or "") if worktree or worktree_name else None))


def run_chat(opts: ChatOptions) -> int:
    """The chat until the person leaves: 0 (Ctrl-D, /exit, Ctrl-C twice); 2 when it cannot start (no terminal,
    model, thread or approval: said before the prompt; the model, tools, approver: as it ends, :mod:`cogcli.chat.set_up`)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        say('cog chat needs a terminal (stdin and stdout); to run one instruction from a script: cog edit "…"')
        return EXIT_USAGE
    entered = None
    try:
        settings = load_settings(opts.root, opts.flags)
        if settings.model is None:  # said in chat's words, not cog edit's
            raise ConfigError(no_model_message("cog chat", ""))
        if opts.worktree is not None:  # the chat moves into a new worktree; its changes are committed there when it ends
            from cogcli.worktrees.enter import enter

            entered = enter(opts.root, opts.cwd, opts.worktree)
            opts.root, opts.cwd = entered.root, entered.cwd
            settings = load_settings(opts.root, opts.flags)
        session = Session(settings, cwd=opts.cwd, make_tools=make_tools, on_note=_note_once)
        session.check()  # what may ask on the terminal comes before the prompt; the rest is built behind it
    except ConfigError as exc:
        say(exc.message)
        return EXIT_USAGE
    try:  # the thread --thread or --last names, checked before the first prompt (its module imported only then)
        thread_id = None
        if opts.thread or opts.last:
            from cogcli.session.project import continued_thread

            thread_id = continued_thread(session, opts.thread, opts.last)
    except (ConfigError, OSError) as exc:  # OSError: the thread store (.cog a file, a full disk)
        session.close()
        say(exc.message if isinstance(exc, ConfigError) else store_problem(session.root, exc))
        return EXIT_USAGE
    import anyio

    chat = Chat(session, opts, ChatState(model=str(settings.model), thread_id=thread_id))
    try:
        code = anyio.run(chat.loop)
    except KeyboardInterrupt:  # Ctrl-C in the moment between a run and the prompt: leave quietly
        code = EXIT_INTERRUPTED
    finally:
        if chat.setup.started:  # a set-up still running (Ctrl-C while a line waited for it) ends first
            chat.setup.finished.wait(timeout=30)
        chat.session.close()
        if entered is not None:
            from cogcli.worktrees.enter import finish

            finish(entered, f"cog chat in worktree {entered.place.name}", None)
    from cogcli.commands.common import leave_lingering_tools

    return leave_lingering_tools(code)


_noted: set[str] = set()


def _note_once(note: str) -> None:
    """A note about the instruction files (one left out, one cut), said once a chat, not every run."""
    if note not in _noted:
        _noted.add(note)
        say(note)


def _ready_to_run(settings: Any) -> None:
    """What the chat's runs need beyond the session, done behind the prompt: the run stack
    imported, and a terminal to ask approvals on (checked before the first run)."""
    import cogcli.commands.edit  # with the renderer, the events, the run loop
    import cogcli.gate.plan_mode  # noqa: F401
    from cogcli.commands.approve import make_approver

    getattr(make_approver(_approval(settings)), "close", lambda: None)()


def _approval(settings: Any) -> str:
    """The chat asks on its terminal unless the person said to approve every call (``--yes``,
    ``approval = "auto"``); stdin is the chat's own, so it carries no approvals."""
    return "auto" if settings.approval == "auto" else "ask"


def _chat_output(renderer: Any, state: ChatState) -> Any:
    """A run's output (:class:`~cogcli.commands.edit.RunOutput`) that also folds its events into
    the chat's state (the status line)."""
    from cogcli.commands.edit import RunOutput

    class ChatOutput(RunOutput):
        def handle(self, event: Any) -> None:
            state.handle(event)
            super().handle(event)

    return ChatOutput(renderer)


class Chat:
    """One ``cog chat``: the prompt, the runs, the slash commands."""

    def __init__(self, session: Session, opts: ChatOptions, state: ChatState) -> None:
        self.session = session
        self.opts = opts
        self.state = state
        #: the session built behind the prompt (:mod:`cogcli.chat.set_up`)
        self.setup = BackgroundSetUp(session, lambda: _ready_to_run(session.settings))
        #: Ctrl-C was pressed on an empty line (once more leaves)
        self.interrupted = False
        #: tools answered [a]lways: asked no more for the rest of the chat session (/allowed lists them)
        self.always: set[str] = set()
        #: images attached with /image, seen by the model with the next instruction
        self.images: list[Any] = []
        from cogcli.project.custom_commands import builtin_names, load_commands

        #: ``/NAME`` commands of .agents/commands and ~/.config/cog/commands (never a built-in's name)
        self.commands = load_commands(session.root, builtin_names())
        for note in self.commands.notes:
            _note_once(note)

    # --- the loop -------------------------------------------------------------------------

    async def loop(self) -> int:
        import anyio

        prompt = self._prompt_session()
        going_on = f" · continuing thread {self.state.thread_id}" if self.state.thread_id else ""
        _print(f"cog chat · {visible(self.state.model, one_line=True)}{going_on} · /help for commands, Ctrl-D to leave")
        try:
            async with anyio.create_task_group() as tasks:  # left once the set-up ended: a session half built is never closed
                tasks.start_soon(self.setup.run_once_drawn, prompt.app)
                try:
                    code = await self.lines(prompt)
                except SetUpFailed as exc:  # said as it was before the prompt came first
                    say(exc.message)
                    code = EXIT_USAGE
            return code
        finally:
            try:
                await self.session.aclose()
            except Exception:
                log.debug("closing the session failed", exc_info=True)

    async def lines(self, prompt: Any) -> int:
        """Each line typed, run or done, until the person leaves; a line that needs the session
        waits for its set-up."""
        while True:
            try:
                line = await prompt.prompt_async(pre_run=lambda: self.setup.end_prompt(prompt.app))
            except EOFError:
                return EXIT_OK
            self.interrupted = False
            if not line.strip():
                continue
            command = parse(line)
            if command is None or command[0] not in NO_SESSION:
                await self.setup.wait()
            if command is None:
                await self.run(line)
            elif await self.slash(*command):
                return EXIT_OK

    def _prompt_session(self) -> Any:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.application import run_in_terminal
        from prompt_toolkit.key_binding import KeyBindings

        from cogcli.chat.completion import slash_completer
        from cogcli.chat.line_history import WorkspaceHistory

        keys = KeyBindings()

        @keys.add("c-c")
        def _interrupt(event: Any) -> None:  # clear the line; on an empty one, leave (twice)
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
                self.interrupted = False
            elif self.interrupted:
                event.app.exit(exception=EOFError())
            else:  # said above the prompt, which stays: no moment without it to catch the second
                self.interrupted = True
                run_in_terminal(lambda: _print(LEAVE_HINT))

        @keys.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("enter")
        def _send(event: Any) -> None:  # a trailing \ goes on on the next line
            buffer = event.current_buffer
            if buffer.document.is_cursor_at_the_end and buffer.text.endswith("\\"):
                buffer.delete_before_cursor(1)
                buffer.insert_text("\n")
            else:
                buffer.validate_and_handle()

        return PromptSession(
            PROMPT,
            history=WorkspaceHistory(self.session.root),
            completer=slash_completer(self._custom()),
            complete_while_typing=True,
            key_bindings=keys,
            bottom_toolbar=lambda: visible(self.state.status_line(self._running_jobs()), one_line=True),
            prompt_continuation=lambda width, line_number, wrap_count: "." * (width - 1) + " ",
            reserve_space_for_menu=min(len(COMMANDS) + len(self.commands), 16),
            enable_suspend=True,
        )

    def _running_jobs(self) -> int:
        """The session's background commands running now (none before it is built)."""
        if not self.setup.ready:
            return 0
        from cogcli.session.background import running_jobs

        return running_jobs(self.session)

    # --- a run ----------------------------------------------------------------------------

    async def run(self, instruction: str) -> None:
        """Run ``instruction`` in the chat's thread (the first run starts it), drawn as cog edit draws;
        in plan mode (``/plan``) only tools that change nothing run."""
        from cogcli.commands.approve import make_approver, quiet_approvals
        from cogcli.commands.edit import close_output, run_watched
        from cogcli.gate.plan_mode import PlanMode
        from cogcli.render import make_renderer
        from cogcli.wire.events import RunStatus

        renderer = make_renderer("text")
        try:  # each run its own approver; an "always" answer holds for the chat session (/allowed)
            approve = make_approver(_approval(self.session.settings))
        except ConfigError as exc:
            say(exc.message)
            return
        if hasattr(approve, "always"):
            approve.always, approve.scope = self.always, "for this chat session"  # type: ignore[union-attr]
        quiet_approvals(renderer, approve)
        output = _chat_output(renderer, self.state)
        try:
            plan = PlanMode.of(self.session.settings.plan_allow) if self.state.plan else None
            images, self.images = self.images, []
            result, received = await run_watched(self.session, instruction, output, thread=self.state.thread_id, approve=approve, plan=plan, images=images)
        finally:
            getattr(approve, "close", lambda: None)()
        close_output(result, output, "text")
        thread_id = getattr(result, "thread_id", None)
        if thread_id:
            self.state.thread_id = thread_id
        if received or getattr(result, "status", None) == RunStatus.ABORTED:
            _print("Stopped. The thread is kept: type on to go on, /undo puts back what the run changed.")

    # --- slash commands ------------------------------------------------------------------

    async def slash(self, name: str, argument: str) -> bool:
        """Do the command ``name``; True when the chat should end."""
        from cogcli.threads.rewind import allowed_text, rewind_text, undo_text

        if name == "/exit":
            return True
        if name == "/help":
            _print(help_text(self._custom()))
        elif name == "/new":
            self.state.new_thread()
            _print("The next instruction starts a new thread.")
        elif name == "/thread":
            _print(self.state.thread_text())
        elif name == "/model":
            await self.switch_model(argument)
        elif name == "/undo":
            _print(undo_text(self.session, self.state.thread_id))
        elif name == "/rewind":
            _print(rewind_text(self.session, self.state.thread_id, argument))
        elif name == "/allowed":
            _print(allowed_text(self.always, argument))
        elif name == "/diff":
            self.diff()
        elif name == "/jobs":
            from cogcli.session.background import jobs_reply

            _print(jobs_reply(self.session, argument))
        elif name == "/image":
            self.attach(argument)
        elif name == "/compact":
            await self.compact()
        elif name in ("/plan", "/go"):
            await self.plan_mode(name == "/plan", argument)
        elif (command := self.commands.get(name)) is not None:
            _print(visible(f"/{command.name} · {command.shown}", one_line=True))
            await self.run(command.expand(argument))
        else:
            _print(unknown_text(name, [f"/{c.name}" for c in self.commands]))
        return False

    def attach(self, argument: str) -> None:
        """``/image PATH``: an image the model sees with the next instruction; ``/image``: those
        attached; ``/image clear``: none."""
        from workspace_tools.files.image import attached_images, human_bytes

        if argument in ("", "clear"):
            if argument:
                self.images.clear()
            names = ", ".join(f"{i.name} ({i.width}×{i.height}, {human_bytes(i.size)})" for i in self.images)
            _print(visible(f"attached for the next instruction: {names}" if names else "no image attached (attach one: /image PATH)", one_line=True))
            return
        try:
            [image] = attached_images([Path(argument)], self.opts.cwd or self.session.root)
        except ValueError as exc:
            say(visible(str(exc), one_line=True))
            return
        self.images.append(image)
        _print(visible(f"attached {argument} · {image.width}×{image.height} · {human_bytes(image.size)}: the model sees it with your next instruction", one_line=True))

    def _custom(self) -> dict[str, tuple[str, str]]:
        """The custom commands for /help and the completion menu, their workspace text escaped."""
        return {f"/{c.name}": (visible(c.hint, one_line=True), visible(c.description, one_line=True)) for c in self.commands}

    async def plan_mode(self, on: bool, argument: str) -> None:
        """``/plan [INSTRUCTION]``: plan mode from now on (running the instruction if given);
        ``/go [NOTE]``: leave it and carry out the plan (the note added)."""
        from cogcli.gate.plan_mode import GO

        self.state.plan = on
        if on:
            _print("Plan mode: only tools that change nothing run, and the model ends with a plan. /go carries it out.")
            if argument:
                await self.run(argument)
        elif not self.state.thread_id:
            _print("Nothing to carry out yet: no plan in this conversation. Plan mode is off.")
        else:
            await self.run(f"{GO}\n\n{argument}" if argument else GO)

    async def switch_model(self, model: str) -> None:
        """``/model PROVIDER:MODEL``: checked as ``--model`` is (known provider, its key set, the
        model made) before it replaces the current one; the thread goes on with it."""
        if not model:
            _print(f"model: {visible(self.state.model, one_line=True)} (change it: /model PROVIDER:MODEL)")
            return
        try:
            settings = load_settings(self.opts.root, self.opts.flags.replace(model=model))
            session = Session.open(settings, cwd=self.opts.cwd, make_tools=make_tools, on_note=_note_once)
        except ConfigError as exc:
            say(exc.message)
            return
        old, self.session = self.session, session
        try:
            await old.aclose()
        except Exception:
            log.debug("closing the previous session failed", exc_info=True)
        self.state.model = str(settings.model)
        self.state.window = None
        _print(f"model: {visible(self.state.model, one_line=True)} from the next instruction on")

    def diff(self) -> None:
        from cogcli.chat.diff_command import coloured_diff, session_diff

        text = session_diff(self.session.root, self.state.runs)
        if not text:
            _print("This session changed no files (or they are back as they were).")
            return
        _print(coloured_diff(visible(text)).rstrip("\n"))

    async def compact(self) -> None:
        from cogcli.commands.common import abort_on_signals
        from cogcli.contract.context import AbortSignal
        from cogcli.render.words import compaction_text
        from cogcli.loop.turn import usage_of

        if not self.state.thread_id:
            _print("nothing to compact: no run in this conversation yet")
            return
        abort = AbortSignal()
        try:
            async with abort_on_signals(abort):
                event = await self.session.compact(self.state.thread_id, signal=abort, on_usage=lambda r: self.state.add_usage(usage_of(r)))
        except CogError as exc:
            say(exc.message)
            return
        if event is None:
            _print("Stopped; nothing was compacted." if abort.aborted else "Nothing to compact yet.")
            return
        self.state.compacted = True  # the next run's first request says how much is left
        _print(compaction_text(event.model_copy(update={"context_window": self.state.window})) + " (estimated)")


def _print(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
