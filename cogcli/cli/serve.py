"""``cog trust`` and ``cog serve``: the workspace's commands approved, its runs served to other
programs (``cog mcp``: :mod:`cogcli.cli.mcp_app`)."""

from typing import Annotated, Optional

import typer

from cogcli.cli.typer_app import (
    DirectoryOption,
    app,
    fail,
    workspace,
)
from cogcli.cli.setting_flags import with_settings
from cogcli.settings.options import SERVE, SettingFlags


@app.command("trust")
def trust_command(
    directory: DirectoryOption = None,
    approve_all: Annotated[bool, typer.Option("--approve", help="Approve every listed command without asking.")] = False,
    list_only: Annotated[bool, typer.Option("--list", help="Only list the commands, the files they run and whether they are approved; ask nothing.")] = False,
) -> None:
    """List the commands this workspace's settings (cog.toml or [tool.cog]) would run on this machine (mcp_servers, hooks) and
    approve them: asked one by one on a terminal, or all with --approve.

    \b
    A workspace's commands start only once approved, by their exact command line and the sha256
    of each workspace file they run (script, package, program); approvals are kept in
    ~/.config/cog/trusted-commands.json and asked again when a command or one of its files changes.
    Exit codes: 0 all approved, 1 some left unapproved, 2 bad configuration.
    """
    from cogcli.commands.trust import trust

    if approve_all and list_only:
        fail("--list only lists; it cannot go with --approve")
    raise typer.Exit(trust(workspace(directory), approve_all=approve_all, list_only=list_only))



@app.command("serve")
@with_settings(SERVE)
def serve_command(
    directory: DirectoryOption = None,
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="Address to listen on; anything but loopback is reachable from other machines (a warning says so).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port to listen on (0: one the system picks).")] = 0,
    *,
    flags: SettingFlags,
) -> None:
    """Serve runs over HTTP with server-sent events, and the Studio page that draws them.

    \b
    The first line on stdout is the URL to open, with a fresh token:
      http://127.0.0.1:PORT/?token=TOKEN
    Every /api/ request needs "Authorization: Bearer TOKEN". Ctrl-C aborts
    the runs in flight (each still ends with its finish) and stops. The
    settings below hold for every run (--model: for runs that name none).
    """
    from cogcli.commands.serve import run_serve

    raise typer.Exit(run_serve(workspace(directory), host=host, port=port, flags=flags))


