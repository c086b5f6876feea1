"""``cog edit --mcp "CMD ARGS"``: the tools of other MCP servers, offered to the agent as cog tools.

Each server command is started over stdio, initialized and asked for its tools; each tool becomes
a :class:`cogcli.Tool` whose calls go to that server. A call asks for progress, and each
``notifications/progress`` becomes a ``context.update()`` (``content`` = the message, ``details``
= ``{"progress", "total"}``), so an MCP tool's progress shows like a built-in tool's. The result's
``structuredContent`` is the call's content (else its text blocks, joined); a cog server's
``_meta`` details and presentation are kept. ``isError``, a dead server or a broken connection
fail the call with ``MCP_ERROR`` and the run goes on.

A server that cannot be started fails the whole run up front with a :class:`ConfigError`
naming the command (exit 2): its tools were never listed, so the agent could not call them.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import shlex
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError

from cogcli.contract.context import ToolContext
from cogcli.contract.errors import ConfigError, ErrorCode, ToolCallError
from cogcli.mcp import META_DETAILS, META_PRESENTATION
from cogcli.contract.output import tool_output
from cogcli.contract.presentation import ToolPresentation, as_presentation
from cogcli.contract.tool import Tool

if TYPE_CHECKING:
    import mcp_types as types
    from anyio.abc import TaskGroup, TaskStatus
    from mcp import Client

log = logging.getLogger("cogcli")

#: how long a server may take to start and list its tools (``npx``/``uvx`` may download first)
DEFAULT_STARTUP_TIMEOUT = 60.0

_MAX_TOOL_PAGES = 100


class McpArguments(BaseModel):
    """Arguments of a tool that lives on an MCP server.

    Validation is left to the server (it owns the schema): any object is accepted here, and
    :meth:`model_json_schema` returns the server's own ``inputSchema`` so the model sees it whole.
    """

    model_config = ConfigDict(extra="allow")

    mcp_input_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.mcp_input_schema)


def arguments_model(tool_name: str, input_schema: Mapping[str, Any]) -> type[McpArguments]:
    """An :class:`McpArguments` subclass that shows ``input_schema`` as its JSON Schema."""
    class_name = "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", tool_name) if part) + "Arguments"
    return type(class_name, (McpArguments,), {"mcp_input_schema": dict(input_schema), "__module__": __name__})


@dataclass(frozen=True, slots=True)
class McpServer:
    """One running server: its command, its name (from ``serverInfo``), the client and its tools."""

    command: str
    name: str
    client: Client
    tools: tuple[types.Tool, ...]

    async def call(self, tool_name: str, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Call ``tool_name`` on this server; progress goes to ``context.update()``."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            context.update(content=message, details={"progress": progress, "total": total})

        try:
            result = await self.client.call_tool(tool_name, arguments, progress_callback=on_progress)
        except Exception as exc:
            raise ToolCallError(
                f"MCP server {self.name!r} (`{self.command}`) failed during {tool_name}: {describe_failure(exc)}",
                code=ErrorCode.MCP_ERROR,
            ) from None
        return result_output(tool_name, result)


def result_output(tool_name: str, result: types.CallToolResult) -> Any:
    """What a call returns to the run: ``structuredContent`` (else the text), plus the details and
    presentation a cog server puts in ``_meta``. ``isError`` raises ``MCP_ERROR``."""
    if result.is_error:
        message = blocks_text(result.content) or f"MCP tool {tool_name} reported an error without a message"
        raise ToolCallError(message, code=ErrorCode.MCP_ERROR)
    content = result.structured_content if result.structured_content is not None else blocks_text(result.content)
    meta = result.meta or {}
    details = meta.get(META_DETAILS)
    presentation = _presentation(meta.get(META_PRESENTATION))
    if details is None and presentation is None:
        return content
    return tool_output(content, details=details, presentation=presentation)


def blocks_text(blocks: Sequence[types.ContentBlock]) -> str:
    """Text blocks joined by newlines; other blocks named by their kind (a model reads text)."""
    parts = []
    for block in blocks:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            kind = getattr(block, "mime_type", None) or getattr(block, "uri", None) or ""
            parts.append(f"[{block.type} content{': ' + str(kind) if kind else ''}]")
    return "\n".join(parts)


def _presentation(value: Any) -> ToolPresentation | None:
    if value is None:
        return None
    try:
        return as_presentation(value)
    except (ValidationError, TypeError):
        log.debug("ignoring an invalid %s in an MCP result", META_PRESENTATION)
        return None


def describe_failure(exc: BaseException) -> str:
    """A failure of the MCP connection, in words a user (and a model) can act on."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        if exc.message == "Connection closed":
            return "the server closed the connection (it exited or crashed; its stderr may say why)"
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _safe_name(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_-]", "_", name) or "mcp"


def remote_tool(server: McpServer, remote: types.Tool, name: str) -> Tool[Any]:
    """One tool of ``server`` as a cog :class:`Tool` named ``name``."""
    hints = remote.annotations
    label = remote.title or (hints.title if hints else None) or remote.name
    read_only = bool(hints and hints.read_only_hint)
    remote_name = remote.name

    async def execute(params: McpArguments, context: ToolContext) -> Any:
        return await server.call(remote_name, params.model_dump(), context)

    return Tool(
        name=name,
        description=remote.description or label,
        parameters=arguments_model(name, remote.input_schema),
        execute=execute,
        presentation=ToolPresentation(label=label, icon="plug", detail=server.name),
        side_effects=() if read_only else (f"runs {remote_name} on MCP server {server.name}",),
        read_only=read_only,  # the server says its calls change nothing: plan mode runs them (docs/plan-mode.md)
        annotations={
            **(hints.model_dump(by_alias=True, exclude_none=True) if hints else {}),
            "mcpServer": server.name,
            "mcpTool": remote_name,
        },
    )


def wrap_tools(servers: Sequence[McpServer], existing_names: Iterable[str] = ()) -> list[Tool[Any]]:
    """Every server's tools as cog tools. A name is prefixed ``<server>_`` only when it collides
    with an existing tool or with a tool of another server."""
    taken = set(existing_names)
    counts = Counter(_safe_name(t.name) for s in servers for t in s.tools)
    tools: list[Tool[Any]] = []
    for server in servers:
        for remote in server.tools:
            name = _safe_name(remote.name)
            if counts[name] > 1 or name in taken:
                name = f"{_safe_name(server.name)}_{name}"
            unique, n = name, 2
            while unique in taken:
                unique, n = f"{name}_{n}", n + 1
            taken.add(unique)
            tools.append(remote_tool(server, remote, unique))
    return tools


async def _list_tools(client: Client) -> tuple[types.Tool, ...]:
    listed: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        listed.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(listed)


async def _run_server(
    command: str, argv: list[str], stop: anyio.Event, cwd: Path | None = None, env: Mapping[str, str] | None = None,
    *, task_status: TaskStatus[McpServer],
) -> None:
    """Start one server, hand its :class:`McpServer` to the starter, keep it up until ``stop``."""
    import mcp_types as types
    from mcp import Client, StdioServerParameters

    from cogcli.version import __version__

    variables = {**(env or {}), "PYTHONPYCACHEPREFIX": str(pycache_prefix())}
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=cwd, env=variables)
    async with Client(params, client_info=types.Implementation(name="cog", version=__version__)) as client:
        tools = await _list_tools(client)
        info = client.server_info
        name = (info.name if info is not None else "") or Path(argv[0]).name
        task_status.started(McpServer(command=command, name=name, client=client, tools=tools))
        await stop.wait()
    # leaving the Client closes the server's stdin, then terminates its process tree if it lingers


def is_url(command: str) -> bool:
    """An MCP server given by its Streamable HTTP endpoint (``http://host:port/mcp``), not a command."""
    return command.startswith(("http://", "https://"))


@dataclass(frozen=True, slots=True)
class RemoteSpec:
    """A named remote server of the person's (``[mcp_servers.NAME]``): its URL and the headers to
    send (their values, read from the environment). It may ask for OAuth (``cog mcp login NAME``)."""

    name: str
    url: str
    headers: Mapping[str, str]
    #: False: a bare URL (``--mcp URL``, an editor's server): shown by its URL and ``serverInfo`` name
    named: bool = True


@asynccontextmanager
async def connect_http(
    url: str, headers: Mapping[str, str] | None = None, *, auth: Any = None, name: str | None = None
) -> AsyncIterator[McpServer]:
    """Connect to the server at ``url`` (Streamable HTTP; the protocol version negotiated: 2026-07-28
    when the server speaks it, else the handshake of earlier versions) with ``headers`` (a token: in
    no message) and ``auth`` (an ``httpx2.Auth``: :class:`cogcli.mcp.oauth_provider.CogOAuth`), and list its tools."""
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from cogcli.version import __version__

    async with create_mcp_http_client(headers=dict(headers or {}), auth=auth) as http:
        async with Client(streamable_http_client(url, http_client=http), client_info=types.Implementation(name="cog", version=__version__)) as client:
            tools = await _list_tools(client)
            info = client.server_info
            shown = name or (info.name if info is not None else "") or url.split("//", 1)[-1].split("/", 1)[0]
            yield McpServer(command=url, name=shown, client=client, tools=tools)


async def _run_remote(spec: RemoteSpec, stop: anyio.Event, auth: Any, *, task_status: TaskStatus[McpServer]) -> None:
    """A named remote server, signed in to with the tokens ``cog mcp login`` kept (``auth``)."""
    async with connect_http(spec.url, spec.headers, auth=auth, name=spec.name if spec.named else None) as server:
        task_status.started(server)
        await stop.wait()


async def _start_remote(tg: TaskGroup, spec: RemoteSpec, stop: anyio.Event, timeout: float) -> McpServer | None:
    """Connect to ``spec``; None (said once) when it needs a sign-in, so the run goes on without it."""
    from cogcli.mcp.oauth_provider import CogOAuth, SignInNeeded
    from cogcli.mcp.token_store import TokenFile

    auth = CogOAuth(spec.name, spec.url, TokenFile(spec.url))
    bare = spec.url.split("?", 1)[0]  # a query may carry a token
    shown = f"{spec.name} ({bare})" if spec.named else bare
    try:
        with anyio.fail_after(timeout):
            server: McpServer = await tg.start(_run_remote, spec, stop, auth)
    except TimeoutError:
        raise ConfigError(f"MCP server {shown} did not answer within {timeout:g} s") from None
    except Exception as exc:
        if auth.sign_in_needed or _caused_by(exc, SignInNeeded):
            if spec.named:
                log.warning("the MCP server %s needs you to sign in: run `cog mcp login %s`; this run goes on without its tools", spec.name, spec.name)
            else:
                log.warning("the MCP server %s needs you to sign in: name it with `cog mcp add NAME %s`, then run `cog mcp login NAME`; "
                            "this run goes on without its tools", bare, bare)
            return None
        raise ConfigError(f"MCP server {shown} could not be reached: {describe_failure(exc)}") from None
    log.info("MCP server %s offers %d tool(s)", shown, len(server.tools))
    return server


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(20):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        if isinstance(seen, BaseExceptionGroup):
            return any(_caused_by(inner, kind) for inner in seen.exceptions)
        seen = seen.__cause__ or seen.__context__
    return False


def pycache_prefix() -> Path:
    """Where a Python server keeps its compiled modules: a folder of the person's
    (``$XDG_CACHE_HOME/cogcli/mcp-pycache``), never the workspace's ``__pycache__``. A test may write
    the workspace, and a ``.pyc`` it plants there with the approved source's size and time stamp
    would be imported instead of the approved source; with this prefix Python reads none of them."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cogcli" / "mcp-pycache"


async def _start(
    tg: TaskGroup, command: str, stop: anyio.Event, timeout: float, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> McpServer | None:
    if is_url(command):  # Streamable HTTP: connected to, not started (signed in to with the URL's kept tokens)
        return await _start_remote(tg, RemoteSpec(command, command, env or {}, named=False), stop, timeout)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"cannot parse MCP server command `{command}`: {exc}") from None
    if not argv:
        raise ConfigError('an MCP server command is empty; pass one like --mcp "npx -y some-mcp-server"')
    shown = f"`{command}`"
    try:
        with anyio.fail_after(timeout):
            server: McpServer = await tg.start(_run_server, command, argv, stop, cwd, env)
    except TimeoutError:
        raise ConfigError(f"MCP server {shown} did not start within {timeout:g} s") from None
    except Exception as exc:
        raise ConfigError(f"MCP server {shown} failed to start: {describe_failure(exc)}") from None
    log.info("MCP server %r (%s) offers %d tool(s)", server.name, shown, len(server.tools))
    return server


@asynccontextmanager
async def mcp_tools(
    commands: Sequence[str],
    existing_names: Iterable[str] = (),
    *,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    cwd: Path | None = None,
    env: Mapping[str, Mapping[str, str]] | None = None,
    remotes: Sequence[RemoteSpec] = (),
) -> AsyncIterator[list[Tool[Any]]]:
    """Start each server command (shell-like, e.g. ``"npx -y @scope/server /tmp"``) and yield their
    tools as cog tools, named to avoid ``existing_names``. Every server is stopped on exit.

    ``cwd`` is each server's working directory (None: cog's own), so a relative path in a command
    (``python srv.py``, ``./bin/server``) names a file there: ``cog edit`` passes the workspace
    root for the workspace's ``[tool.cog] mcp_servers`` — the files their approval fingerprints
    (:mod:`cogcli.settings.trust`) — and the directory it runs in (``-C DIR``) for ``--mcp``.

    ``env`` maps a command to variables its server gets on top of the MCP SDK's default
    environment, given apart from the command line (their values are in no argv and no message).

    ``remotes``: the person's named remote servers; one that needs a sign-in is left out, said
    once (``cog mcp login NAME``), and the run goes on without its tools.

    Raises :class:`ConfigError` naming the command when a server cannot be started or listed.
    """
    if not commands and not remotes:
        yield []
        return
    stop = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            try:
                started = [await _start(tg, command, stop, startup_timeout, cwd, (env or {}).get(command)) for command in commands]
                started += [await _start_remote(tg, spec, stop, startup_timeout) for spec in remotes]
                servers = [server for server in started if server is not None]  # None: one that wants a sign-in
                yield wrap_tools(servers, existing_names)
            finally:
                stop.set()
    except BaseExceptionGroup as group:
        # the task group wraps whatever ended it (a ConfigError, the caller's own exception):
        # hand the caller the exception itself, not a group of one
        if len(group.exceptions) != 1:
            raise
        inner = group.exceptions[0]
        raise inner from inner.__cause__
