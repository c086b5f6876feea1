"""``cog config``: the settings a command would run with here, and where each came from; the
body is :func:`cogcli.commands.settings.show_settings`."""

from typing import Annotated

import typer

from cogcli.cli.typer_app import DirectoryOption, app, workspace
from cogcli.cli.setting_flags import with_settings
from cogcli.settings.options import CONFIG, SettingFlags


@app.command("config")
@with_settings(CONFIG)
def config_command(
    directory: DirectoryOption = None,
    json_flag: Annotated[bool, typer.Option("--json", help="The settings as one JSON object: name → {value, from}.")] = False,
    *,
    flags: SettingFlags,
) -> None:
    """Show the effective settings in this workspace and where each came from: a flag, a COG_*
    variable, your ~/.config/cog/config.toml, the workspace's cog.toml or [tool.cog], or the default.

    \b
    Layers, highest first: flags > environment > your config file > the workspace's settings.
    Give any of the flags below to see what they change. Exit 2 when a setting is bad."""
    from cogcli.commands.settings import show_settings

    raise typer.Exit(show_settings(workspace(directory), flags, as_json=json_flag))
