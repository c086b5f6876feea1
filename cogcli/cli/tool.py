"""``cog tool`` and ``cog tools``: one workspace tool called directly, the tools listed."""

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cogcli.cli.typer_app import (
    EXIT_CODES,
    DirectoryOption,
    Format,
    FormatOption,
    JsonOption,
    app,
    fail,
    renderer,
    resume_gc,
    workspace,
)
from cogcli.cli.setting_flags import with_settings
from cogcli.settings.options import TOOL, SettingFlags


@app.command("tool", epilog=EXIT_CODES)
@with_settings(TOOL)
def tool_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The tool's name (see cog tools).", show_default=False)],
    assignments: Annotated[Optional[list[str]], typer.Argument(metavar="KEY=VALUE", help="key=value arguments; values are JSON when they parse as JSON.", show_default=False)] = None,
    args: Annotated[Optional[str], typer.Option("--args", metavar="JSON", help="The arguments as one JSON object.", show_default=False)] = None,
    json_flag: JsonOption = False,
    fmt: FormatOption = Format.text,
    directory: DirectoryOption = None,
    *,
    flags: SettingFlags,
) -> None:
    """Call one workspace tool directly (no model), drawn like a call in a run.

    \b
      cog tool read_file path=calc/ops.py
      cog tool run_tests
      cog tool run_tests paths=tests/test_a.py -- -x --lf     (after --: the test runner's own options)
      cog tool run_command command="ruff check ."
      cog tool edit_file --args '{"path": "a.py", "old_text": "x", "new_text": "y"}'
    """
    from cogcli.commands.tool import call_tool

    root = workspace(directory)
    # only the tool called is made (and its module imported); all of them when there is no such
    # tool, so that the error lists them
    session = _session(root, flags, only=[name])
    if not session.tools:
        session = _session(root, flags)
    assignments, passed_through = _split_pass_through(assignments or [])
    arguments = _tool_arguments(name, assignments, args, session.tools)
    if passed_through:
        if name != "run_tests":
            fail(f"only run_tests takes arguments after -- (the test runner's own options); {name} does not")
        arguments["args"] = [*arguments.get("args", []), *passed_through]
    out = renderer(fmt, json_flag, show_content=True)
    resume_gc()
    raise typer.Exit(call_tool(session, name, arguments, out, timeout=session.settings.timeout))


def _split_pass_through(assignments: list[str]) -> tuple[list[str], list[str]]:
    """``cog tool run_tests a=b -- -x --lf``: click drops the ``--`` and puts what follows it at the
    end of the positional arguments; the command line says how many there were."""
    argv = sys.argv[1:]
    if "--" not in argv:
        return assignments, []
    after = len(argv) - argv.index("--") - 1
    if after <= 0:
        return assignments, []
    return assignments[:-after], assignments[-after:]


def _session(root: Path, flags: Any = None, only: list[str] | None = None) -> Any:
    """A session of the workspace for direct calls, its tools made (``only``: just those)."""
    from cogcli.settings.load import load_settings
    from cogcli.contract.errors import ConfigError
    from cogcli.session import Session

    try:
        session = Session(load_settings(root, flags), only=only)
        session.tools  # noqa: B018 (made now: a sandbox that cannot be had is a usage error here)
        return session
    except ConfigError as exc:
        fail(exc.message)


def _tool_arguments(name: str, assignments: list[str], args: str | None, tools: list[Any]) -> dict[str, Any]:
    """``--args`` JSON, then ``key=value`` pairs on top. A value is JSON when it parses as JSON,
    except for parameters the tool declares as strings, which take the text as it is."""
    arguments: dict[str, Any] = {}
    if args:
        from cogcli.contract.prepare import parse_arguments  # the one parse of a call's arguments, a model's and a person's

        parsed, problem = parse_arguments(args, option="--args")
        if problem is not None:
            fail(problem)
        arguments.update(parsed)
    schema = next((t.input_schema() for t in tools if t.name == name), {})
    properties = schema.get("properties", {})
    for item in assignments:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            fail(f"expected key=value, got {item!r} (e.g. cog tool read_file path=src/a.py)")
        if properties.get(key, {}).get("type") == "string":
            arguments[key] = raw
            continue
        try:
            arguments[key] = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            arguments[key] = raw
    return arguments


@app.command("tools")
def tools_command(
    json_flag: Annotated[bool, typer.Option("--json", help="Names, descriptions and parameter JSON Schemas as JSON.")] = False,
    directory: DirectoryOption = None,
) -> None:
    """List the workspace tools a run can use (in a git repository or not: listing needs none)."""
    root = workspace(directory or Path.cwd())  # a folder outside a repository is listed as it is
    tools = _session(root, SettingFlags(sandbox="off")).tools  # listed, not run: no sandbox check
    if json_flag:
        specs = [{"name": t.name, "description": t.description, "parameters": t.input_schema()} for t in tools]
        sys.stdout.write(json.dumps(specs, indent=2, ensure_ascii=False) + "\n")
        return
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


