"""``cog mcp add | list | remove | login | logout``: the person's remote MCP servers, kept as
``[mcp_servers.NAME]`` tables in their config.toml (:mod:`cogcli.settings.remote_servers`), and
their OAuth sign-ins (:mod:`cogcli.mcp.login`). Each returns the exit code: 0 done, 1 a server
could not be reached or signed in to, 2 bad input or configuration."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cogcli.contract.errors import ConfigError
from cogcli.settings.person_file import config_path, parse_person_config, read_person_config, shown_path
from cogcli.settings.remote_servers import (
    RemoteServer,
    added_text,
    check_name,
    header_values,
    removed_text,
    write_config,
)
from cogcli.shown.visible import say, visible

#: how long ``cog mcp list`` waits for one server
LIST_TIMEOUT = 20.0


def _servers() -> dict[str, RemoteServer]:
    return dict(read_person_config().sections.mcp_servers)


def _server(name: str) -> RemoteServer:
    servers = _servers()
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none yet"
        raise ConfigError(f"no MCP server named {name!r} in {shown_path(config_path())} (yours: {known}); add it with cog mcp add {name} URL")
    return servers[name]


def _config_text() -> str:
    path = config_path()
    if path.is_symlink():
        raise ConfigError(f"{path} is a link; edit the file it leads to yourself, or make it a plain file")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path} ({exc}); fix it, then run this again") from None


def add(name: str, url: str, headers: Sequence[str]) -> int:
    try:
        check_name(name)
        pairs = {}
        for given in headers:
            header, eq, variable = given.partition("=")
            if not eq:
                raise ValueError(f"--header {given!r} is not NAME=VARIABLE (e.g. --header X-Api-Key=MY_KEY: the variable's value is sent)")
            pairs[header.strip()] = variable.strip()
        server = RemoteServer(url=url, headers=pairs)
    except ValueError as exc:  # pydantic's ValidationError is one
        message = exc.errors(include_url=False)[0]["msg"] if hasattr(exc, "errors") else str(exc)
        say(str(message).removeprefix("Value error, "))
        return 2
    path = config_path()
    try:
        current = _config_text()
        existing = parse_person_config(current.encode("utf-8"), path) if current else None
        if existing is not None and _has_command_list(current):
            raise ConfigError(
                f"{path} has mcp_servers = [...] (commands): a file holds that list or [mcp_servers.NAME] tables, "
                "not both. Move those commands to --mcp, or remove the list, then run cog mcp add again"
            )
        if existing is not None and name in existing.sections.mcp_servers:
            raise ConfigError(f"{path} already has [mcp_servers.{name}]; cog mcp remove {name} first, or pick another name")
        text = added_text(current, name, server)
        parse_person_config(text.encode("utf-8"), path)  # never write a file cog could not read back
        write_config(path, text)
    except ConfigError as exc:
        say(exc.message)
        return 2
    sys.stdout.write(f"added {name} ({visible(url, one_line=True)}) to {shown_path(path)}\n")
    sys.stdout.write(f"if it asks for a sign-in: cog mcp login {name}\n")
    return 0


def _has_command_list(text: str) -> bool:
    import tomllib

    return isinstance(tomllib.loads(text).get("mcp_servers"), list)


def remove(name: str) -> int:
    try:
        server = _server(name)
        text = removed_text(_config_text(), name)
        if text is None:
            raise ConfigError(f"[mcp_servers.{name}] is not a table of its own in {config_path()}; remove it by hand")
        parse_person_config(text.encode("utf-8"), config_path())
        write_config(config_path(), text)
    except ConfigError as exc:
        say(exc.message)
        return 2
    sys.stdout.write(f"removed {name} from {shown_path(config_path())}\n")
    return _forget(name, server.url)


def _forget(name: str, url: str) -> int:
    import anyio

    from cogcli.mcp.login import logout as forget

    try:
        had, revoked = anyio.run(forget, url)
    except ConfigError as exc:
        say(exc.message)
        return 1
    if had:
        sys.stdout.write(f"signed out of {name}" + (" (tokens revoked)\n" if revoked else " (tokens forgotten; the server offers no revocation)\n"))
    return 0


def logout(name: str) -> int:
    try:
        server = _server(name)
    except ConfigError as exc:
        say(exc.message)
        return 2
    from cogcli.mcp.token_store import TokenFile

    if not TokenFile(server.url).signed_in():
        sys.stdout.write(f"not signed in to {name}\n")
        return 0
    return _forget(name, server.url)


def login(name: str, *, open_browser: bool = True) -> int:
    import anyio

    from cogcli.mcp.login import login as sign_in

    try:
        server = _server(name)
        headers = header_values(name, server)
    except ConfigError as exc:
        say(exc.message)
        return 2

    def show(url: str) -> None:
        sys.stderr.write(f"cog: open this URL in a browser to sign in to {name}:\n  {visible(url, one_line=True)}\n")
        sys.stderr.flush()

    try:
        done = anyio.run(lambda: sign_in(name, server.url, headers, show_url=show, open_browser=open_browser))
    except ConfigError as exc:
        say(exc.message)
        return 1
    except KeyboardInterrupt:
        say("sign-in interrupted")
        return 130
    issuer = f" at {visible(done.issuer, one_line=True)}" if done.issuer else ""
    sys.stdout.write(f"signed in to {name}{issuer}: {done.tools} tool(s)\n")
    return 0


def list_servers(*, connect: bool = True) -> int:
    from cogcli.mcp.token_store import TokenFile, describe

    try:
        person = read_person_config()
    except ConfigError as exc:
        say(exc.message)
        return 2
    named = dict(person.sections.mcp_servers)
    commands = person.flags.get("mcp_servers")
    listed = [str(c) for c in commands] if isinstance(commands, (list, tuple)) else []
    if not named and not listed:
        sys.stdout.write(f"no MCP servers in {shown_path(config_path())}; add one with cog mcp add NAME URL\n")
        return 0
    failed = 0
    for name, server in named.items():
        state = describe(TokenFile(server.url).read())
        sys.stdout.write(f"{name}  http  {visible(server.url, one_line=True)}  {state}\n")
        if connect:
            failed += _show_tools(_remote_tools(name, server))
    for command in listed:
        transport = "http" if command.startswith(("http://", "https://")) else "stdio"
        sys.stdout.write(f"-  {transport}  {visible(command, one_line=True)}\n")
        if connect:
            failed += _show_tools(_command_tools(command))
    return 1 if failed else 0


def _show_tools(found: list[str] | str) -> int:
    if isinstance(found, str):
        sys.stdout.write(f"    {visible(found, one_line=True)}\n")
        return 1
    sys.stdout.write(f"    tools: {visible(', '.join(found), one_line=True) or '(none)'}\n")
    return 0


def _remote_tools(name: str, server: RemoteServer) -> list[str] | str:
    import anyio

    from cogcli.mcp.client import connect_http, describe_failure
    from cogcli.mcp.oauth_provider import CogOAuth, SignInNeeded
    from cogcli.mcp.token_store import TokenFile

    async def probe() -> list[str] | str:
        auth = CogOAuth(name, server.url, TokenFile(server.url))
        try:
            with anyio.fail_after(LIST_TIMEOUT):
                async with connect_http(server.url, header_values(name, server), auth=auth) as connected:
                    return [t.name for t in connected.tools]
        except ConfigError as exc:
            return exc.message
        except TimeoutError:
            return f"did not answer within {LIST_TIMEOUT:g} s"
        except Exception as exc:
            if auth.sign_in_needed or isinstance(exc, SignInNeeded):
                return f"needs a sign-in: cog mcp login {name}"
            return f"could not be reached: {describe_failure(exc)}"

    return anyio.run(probe)


def _command_tools(command: str) -> list[str] | str:
    import anyio

    from cogcli.mcp.client import mcp_tools

    async def probe() -> list[str] | str:
        try:
            async with mcp_tools([command], startup_timeout=LIST_TIMEOUT) as tools:
                return [t.name for t in tools]
        except ConfigError as exc:
            return exc.message

    return anyio.run(probe)

