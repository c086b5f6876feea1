"""``cog mcp``: the workspace tools served over MCP (the group's own command), and the person's
remote MCP servers — ``cog mcp add``, ``list``, ``remove``, ``login``, ``logout``."""

from typing import Annotated, Optional

import typer

from cogcli.cli.setting_flags import with_settings
from cogcli.cli.typer_app import DirectoryOption, app, fail, workspace
from cogcli.settings.options import MCP, SettingFlags

mcp_app = typer.Typer(
    invoke_without_command=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(mcp_app, name="mcp")

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The server's name in your config.toml ([mcp_servers.NAME]).", show_default=False)]


@mcp_app.callback()
@with_settings(MCP)
def mcp_command(
    ctx: typer.Context,
    directory: DirectoryOption = None,
    http: Annotated[Optional[int], typer.Option("--http", metavar="PORT", help="Serve over streamable HTTP on PORT instead of stdio.", show_default=False)] = None,
    *,
    flags: SettingFlags,
) -> None:
    """Serve the workspace tools over MCP (stdio by default; protocol 2026-07-28 and the earlier
    versions' handshake), or manage your remote MCP servers:

    \b
      cog mcp add NAME URL [--header H=VAR]   a server over Streamable HTTP, in your config.toml
      cog mcp login NAME [--no-browser]       sign in with OAuth (tokens kept in your state folder)
      cog mcp list                            each server, its transport, sign-in and tools
      cog mcp logout NAME                     revoke and forget the tokens
      cog mcp remove NAME                     take it out of your config.toml
    """
    if ctx.invoked_subcommand is not None:
        return
    from cogcli.settings.load import load_settings
    from cogcli.contract.errors import ConfigError
    from cogcli.adapters.mcp_server import serve

    try:
        root = workspace(directory)
        serve(root, http, load_settings(root, flags))
    except ConfigError as exc:  # a busy port, a bad workspace
        fail(exc.message)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


@mcp_app.command("add")
def add_command(
    name: NameArgument,
    url: Annotated[str, typer.Argument(metavar="URL", help="Its Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp.", show_default=False)],
    header: Annotated[Optional[list[str]], typer.Option("--header", metavar="NAME=VARIABLE", help="Send the header NAME with the value of the environment variable VARIABLE (repeatable); the value is never written.")] = None,
) -> None:
    """Add a remote MCP server to your config.toml ([mcp_servers.NAME]): every run's agent gets its tools."""
    from cogcli.commands.remote_mcp import add

    raise typer.Exit(add(name, url, header or []))


@mcp_app.command("list")
def list_command(
    offline: Annotated[bool, typer.Option("--offline", help="Do not connect to list the servers' tools.")] = False,
) -> None:
    """Your remote MCP servers: transport, URL, whether you are signed in, and their tools."""
    from cogcli.commands.remote_mcp import list_servers

    raise typer.Exit(list_servers(connect=not offline))


@mcp_app.command("remove")
def remove_command(name: NameArgument) -> None:
    """Take a server out of your config.toml, and forget its sign-in."""
    from cogcli.commands.remote_mcp import remove

    raise typer.Exit(remove(name))


@mcp_app.command("login")
def login_command(
    name: NameArgument,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the sign-in URL instead of opening a browser (a remote shell).")] = False,
) -> None:
    """Sign in to a remote MCP server with OAuth 2.1: the browser comes back to 127.0.0.1 on a fresh port."""
    from cogcli.commands.remote_mcp import login

    raise typer.Exit(login(name, open_browser=not no_browser))


@mcp_app.command("logout")
def logout_command(name: NameArgument) -> None:
    """Revoke your tokens for a remote MCP server (where it supports revocation) and forget them."""
    from cogcli.commands.remote_mcp import logout

    raise typer.Exit(logout(name))
