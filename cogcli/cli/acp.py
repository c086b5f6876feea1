"""``cog acp``: cog as an Agent Client Protocol agent for editors; the body is :mod:`cogcli.acp`."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from cogcli.cli.typer_app import app, fail
from cogcli.cli.setting_flags import with_settings
from cogcli.settings.options import ACP, SettingFlags


@app.command("acp")
@with_settings(ACP)
def acp_command(
    directory: Annotated[
        Optional[Path],
        typer.Option("-C", "--directory", metavar="DIR", help="Start in DIR (a session's workspace is the git repository of the cwd the editor gives).", show_default=False),
    ] = None,
    *,
    flags: SettingFlags,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim).

    \b
    The editor starts `cog acp` and talks JSON-RPC to it; stdout carries nothing else, and
    logs go to stderr. Each session runs in the git repository of the folder the editor opens,
    with the same settings, tools, sandbox and instructions as cog edit; its id is the id of the
    thread it continues (cog thread list). Calls that write files or run code are asked about in
    the editor unless --yes is given."""
    import os

    if directory is not None:
        try:
            os.chdir(directory.expanduser())
        except OSError as exc:
            fail(f"cannot start in {str(directory)!r}: {exc.strerror or exc}")

    import sys

    import anyio

    from cogcli.acp.agent import AcpOptions, serve_stdio

    if sys.stdin.isatty():
        from cogcli.shown.visible import say

        say("cog acp speaks JSON-RPC on stdin and stdout: an editor starts it (Ctrl-D ends it)")

    from cogcli.worktrees import best_of
    from cogcli.worktrees.enter import enter_session

    # session/new may ask for a worktree (_meta.cog.worktree), session/prompt for attempts (_meta.cog.attempts)
    options = AcpOptions(flags=flags, worktree=enter_session, attempts=best_of)
    received = anyio.run(serve_stdio, options)
    raise typer.Exit(128 + received if received else 0)
