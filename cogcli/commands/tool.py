"""``cog tool NAME key=value …``: one workspace tool called through the session
(:meth:`cogcli.session.Session.invoke_tool`), drawn with the same events (and so the same rows)
as a call in a run."""

from __future__ import annotations

import functools
import gc
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from cogcli.settings.options import SettingFlags
from cogcli.contract.errors import ConfigError
from cogcli.shown.visible import say

if TYPE_CHECKING:
    from cogcli.render import Renderer
    from cogcli.session import Session

#: the tools a run journals for ``cog undo`` (their descriptions say so); a direct call records no run
JOURNALED_IN_RUNS = frozenset({"edit_file", "apply_patch", "write_file", "move_file", "delete_file"})


def call_tool(session: Session, name: str, arguments: dict[str, Any], renderer: Renderer, *, timeout: float | None = None) -> int:
    """Run the call, draw it, return the exit code: 0 ok (and its tests, if any, passed), 1 the
    call failed or tests failed, 2 unknown tool or bad arguments, 130/143 interrupted."""
    # What start-up made (modules, models, settings, the tool) outlives the call: frozen once the event
    # loop is up (its modules loaded with the collector off, as start-up's were), the collector walks
    # only what the call makes, not those objects again (passes over them were ~15-20 ms of a one-off
    # call). It is on for the call's own objects; the freeze ends with the call (unless the caller had
    # frozen objects of its own: those stay as the caller left them).
    collecting = gc.isenabled()
    gc.disable()  # first (no closure here either): an object made while it is on starts a pass over all of start-up's
    ours = gc.get_freeze_count() == 0
    try:
        return _call_tool(session, name, arguments, renderer, timeout=timeout, started=functools.partial(_collect_from_here, collecting))
    finally:
        if collecting:
            gc.enable()
        if ours:
            gc.unfreeze()


def _collect_from_here(collecting: bool) -> None:
    """The event loop is up and the call about to run: what exists now is frozen, the collector back on."""
    gc.freeze()
    if collecting:
        gc.enable()


def _call_tool(session: Session, name: str, arguments: dict[str, Any], renderer: Renderer, *, timeout: float | None, started: Callable[[], None]) -> int:
    import anyio  # (here: `cog tools`, in this module too, lists without an event loop or the call's events)

    from cogcli.commands.common import abort_on_signals
    from cogcli.contract.context import AbortSignal, ToolUpdate
    from cogcli.contract.invoke import new_call_id
    from cogcli.session import call_exit_status
    from cogcli.wire.emitter import EventEmitter
    from cogcli.wire.events import ToolCallEndEvent, ToolCallStartEvent, ToolResultEvent, ToolUpdateEvent

    emit = EventEmitter(renderer.handle).emit
    call_id = new_call_id()
    tool = next((t for t in session.tools if t.name == name), None)
    static = None if tool is None else tool.static_presentation()

    def on_update(update: ToolUpdate) -> None:
        emit(ToolUpdateEvent.of(update))

    async def run() -> tuple[Any, list[int]]:
        started()
        abort = AbortSignal()
        async with abort_on_signals(abort) as received:
            emit(ToolCallStartEvent(id=call_id, tool_name=name, presentation=static))
            emit(ToolCallEndEvent(id=call_id, tool_name=name, arguments=arguments))
            result = await session.invoke_tool(name, arguments, call_id=call_id, on_update=on_update, timeout=timeout, signal=abort)
        return result, received

    result, received = anyio.run(run)
    emit(ToolResultEvent.of(result))
    renderer.close()
    details = result.details if isinstance(result.details, dict) else {}
    if result.error is None and (name in JOURNALED_IN_RUNS or details.get("changed_files")):
        from cogcli.shown.visible import say

        say("cog undo does not put back what cog tool changes (only a run's changes are recorded); "
            "git restore/git checkout does for files git tracks")
    if result.error is None and details.get("job") and details.get("running"):
        from cogcli.shown.visible import say

        say(f"{details['job']} ended with this cog tool call: a background command lives as long as its session "
            "(a run of cog edit or cog chat), so a later cog tool command_output or kill_command does not find it")
    if received:
        return 128 + received[0]  # 130 for SIGINT, 143 for SIGTERM
    return call_exit_status(result)  # what the call's end means is the session's to say


def tool_command(*, name: str, assignments: list[str] | None, args: str | None, json_flag: bool, fmt: str,
                 directory: Path | None, flags: SettingFlags, on_started: Callable[[], None] | None = None) -> int:
    """``cog tool``'s parameters as its command line gives them (typer's, :mod:`cogcli.cli.tool`, or
    the quick path's, :mod:`cogcli.cli.lean_start`) → the call's exit code (2: a usage error, said)."""
    from cogcli.render import make_renderer
    from cogcli.settings.load import find_workspace

    try:
        root = find_workspace(directory)
        # only the tool called is made (and its module imported); all of them when there is no such
        # tool, so that the error lists them
        session = _session(root, flags, only=[name])
        if not session.tools:
            session = _session(root, flags)
        assignments, passed_through = _split_pass_through(assignments or [])
        arguments = _tool_arguments(name, assignments, args, session.tools)
        if passed_through:
            if name != "run_tests":
                raise ConfigError(f"only run_tests takes arguments after -- (the test runner's own options); {name} does not")
            arguments["args"] = [*arguments.get("args", []), *passed_through]
    except ConfigError as exc:
        say(exc.message)
        return 2
    out = make_renderer("jsonl" if json_flag else fmt, show_content=True)
    if on_started is not None:
        on_started()
    return call_tool(session, name, arguments, out, timeout=session.settings.timeout)


def tools_command(*, json_flag: bool, directory: Path | None) -> int:
    """``cog tools``: the workspace tools a run can use, listed (or as JSON)."""
    from cogcli.settings.load import find_workspace

    try:
        root = find_workspace(directory or Path.cwd())  # a folder outside a repository is listed as it is
        tools = _session(root, SettingFlags(sandbox="off")).tools  # listed, not run: no sandbox check
    except ConfigError as exc:
        say(exc.message)
        return 2
    if json_flag:
        specs = [{"name": t.name, "description": t.description, "parameters": t.input_schema()} for t in tools]
        sys.stdout.write(json.dumps(specs, indent=2, ensure_ascii=False) + "\n")
        return 0
    for t in tools:
        schema = t.input_schema()
        required = set(schema.get("required", []))
        params = ", ".join(p if p in required else p + "?" for p in schema.get("properties", {}))
        sys.stdout.write(f"{t.name}({params})\n")
        for line in t.description.strip().splitlines()[:1]:
            sys.stdout.write(f"    {line}\n")
    if any(t.name == "run_tests" for t in tools):
        from cogcli.shown.visible import visible
        from workspace_tools.workspace.paths import Workspace
        from workspace_tools.runners import overview

        sys.stdout.write("\n" + visible("\n".join(overview(Workspace(root)))) + "\n")  # names folders of the workspace
    return 0


def _split_pass_through(assignments: list[str]) -> tuple[list[str], list[str]]:
    """``cog tool run_tests a=b -- -x --lf``: the command line puts what follows ``--`` at the end
    of the positional arguments; the command line (``sys.argv``) says how many there were."""
    argv = sys.argv[1:]
    if "--" not in argv:
        return assignments, []
    after = len(argv) - argv.index("--") - 1
    if after <= 0:
        return assignments, []
    return assignments[:-after], assignments[-after:]


def _session(root: Path, flags: Any = None, only: list[str] | None = None) -> Session:
    """A session of the workspace for direct calls, its tools made (``only``: just those; a sandbox
    that cannot be had is a :class:`ConfigError` here)."""
    from cogcli.session import Session
    from cogcli.settings.load import load_settings

    session = Session(load_settings(root, flags), only=only)
    session.tools  # noqa: B018 (made now)
    return session


def _tool_arguments(name: str, assignments: list[str], args: str | None, tools: list[Any]) -> dict[str, Any]:
    """``--args`` JSON, then ``key=value`` pairs on top. A value is JSON when it parses as JSON,
    except for parameters the tool declares as strings, which take the text as it is."""
    arguments: dict[str, Any] = {}
    if args:
        from cogcli.contract.prepare import parse_arguments  # the one parse of a call's arguments, a model's and a person's

        parsed, problem = parse_arguments(args, option="--args")
        if problem is not None:
            raise ConfigError(problem)
        arguments.update(parsed)
    schema = next((t.input_schema() for t in tools if t.name == name), {})
    properties = schema.get("properties", {})
    for item in assignments:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"expected key=value, got {item!r} (e.g. cog tool read_file path=src/a.py)")
        if properties.get(key, {}).get("type") == "string":
            arguments[key] = raw
            continue
        try:
            arguments[key] = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            arguments[key] = raw
    return arguments
