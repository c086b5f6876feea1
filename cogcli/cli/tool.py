"""``cog tool`` and ``cog tools``: one workspace tool called directly, the tools listed."""

from typing import Annotated, Optional

import typer

from cogcli.cli.typer_app import EXIT_CODES, DirectoryOption, Format, FormatOption, JsonOption, app, resume_gc
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
    from cogcli.commands.tool import tool_command as body

    raise typer.Exit(body(name=name, assignments=assignments, args=args, json_flag=json_flag, fmt=fmt.value, directory=directory,
                          flags=flags, on_started=resume_gc))


@app.command("tools")
def tools_command(
    json_flag: Annotated[bool, typer.Option("--json", help="Names, descriptions and parameter JSON Schemas as JSON.")] = False,
    directory: DirectoryOption = None,
) -> None:
    """List the workspace tools a run can use (in a git repository or not: listing needs none)."""
    from cogcli.commands.tool import tools_command as body

    raise typer.Exit(body(json_flag=json_flag, directory=directory))
