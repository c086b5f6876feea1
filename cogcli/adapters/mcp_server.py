"""``cog mcp``: cog's tools served to any MCP client, with the result split kept intact.

A call runs through :func:`cogcli.contract.invoke.invoke_tool` (the one place calls are validated, run
and split) and comes back as:

- ``structuredContent`` — the content, when it is a JSON object; checked against the tool's
  ``outputSchema`` first, so a mismatch is a tool error rather than a response clients reject;
- one text block — the same content as JSON (or the plain text of string content);
- ``_meta["cogcli/details"]`` and ``_meta["cogcli/presentation"]`` — never in content;
- on failure ``isError: true``, the message as text and ``_meta["cogcli/errorCode"]``.

While a tool runs, each ``context.update()`` becomes a ``notifications/progress`` (progress =
updates so far, message = the update's content as text) if the client sent a progress token.
"""

from __future__ import annotations

import logging
import math
import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic.alias_generators import to_camel

from cogcli.contract.context import ToolUpdate
from cogcli.contract.errors import ConfigError, ErrorCode
from cogcli.contract.invoke import ToolResult, invoke_tool
from cogcli.mcp import META_DETAILS, META_ERROR_CODE, META_PRESENTATION
from cogcli.contract.output import content_text
from cogcli.contract.tool import Tool, tool_index

if TYPE_CHECKING:
    import mcp_types as types

    from cogcli.settings.load import Settings
    from jsonschema.protocols import Validator
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

log = logging.getLogger("cogcli")

HTTP_HOST = "127.0.0.1"
HTTP_PATH = "/mcp"

_HINTS = frozenset({"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})


def tool_title(tool: Tool[Any]) -> str:
    """A title for people: an explicit ``title`` annotation, else the static presentation's label,
    else one made from the name (``edit_file`` → ``Edit file``)."""
    title = tool.annotations.get("title")
    if isinstance(title, str) and title:
        return title
    presentation = tool.static_presentation()
    if presentation is not None:
        return presentation.label
    return tool.name.replace("_", " ").replace("-", " ").strip().capitalize()


HintDefaults = Callable[[Tool[Any]], Mapping[str, bool]]


def workspace_hints(tool: Tool[Any]) -> dict[str, bool]:
    """Default hints for workspace tools: every one acts inside the workspace only (a closed world),
    and one whose only side effect is writing files there changes them in place, reviewably
    (``git_diff``), so it is not destructive, nor idempotent."""
    hints = {"openWorldHint": False}
    if tool.side_effects and all("write" in effect for effect in tool.side_effects):
        hints.update(destructiveHint=False, idempotentHint=False)
    return hints


def tool_hints(tool: Tool[Any], defaults: HintDefaults | None = None) -> dict[str, bool]:
    """MCP behaviour hints: a tool without side effects is read-only, then ``defaults(tool)``;
    explicit hints in ``tool.annotations`` (``readOnlyHint`` or ``read_only_hint``) win."""
    hints = {"readOnlyHint": not tool.side_effects}
    if defaults is not None:
        hints.update(defaults(tool))
    for key, value in tool.annotations.items():
        name = to_camel(key) if "_" in key else key
        if name in _HINTS and isinstance(value, bool):
            hints[name] = value
    return hints


def listed_tool(tool: Tool[Any], hint_defaults: HintDefaults | None = None) -> types.Tool:
    """How ``tools/list`` shows one tool: input schema, output schema (describing content), title, hints."""
    import mcp_types as types

    title = tool_title(tool)
    return types.Tool(
        name=tool.name,
        title=title,
        description=tool.description,
        input_schema=tool.input_schema(),
        output_schema=tool.output_json_schema(),
        annotations=types.ToolAnnotations.model_validate({"title": title, **tool_hints(tool, hint_defaults)}),
    )


def _output_validator(tool: Tool[Any]) -> Validator | None:
    schema = tool.output_json_schema()
    if schema is None:
        return None
    from jsonschema.validators import validator_for

    return validator_for(schema)(schema)


def _schema_mismatch(validator: Validator | None, content: Any) -> str | None:
    """Why ``content`` breaks the output schema (what MCP clients check), or None when it fits."""
    if validator is None:
        return None
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(content))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "content"
    return f"{where}: {error.message}"


def call_result(result: ToolResult, output_validator: Validator | None = None) -> types.CallToolResult:
    """A finished call as MCP sends it: content for the model, details and presentation in ``_meta``."""
    import mcp_types as types

    meta: dict[str, Any] = {}
    if result.presentation is not None:
        meta[META_PRESENTATION] = result.presentation.model_dump(mode="json", exclude_none=True)

    def failed(code: str, message: str) -> types.CallToolResult:
        meta[META_ERROR_CODE] = code
        return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True, meta=meta)

    if result.error is not None:
        return failed(result.error_code or ErrorCode.TOOL_ERROR, result.error)
    content = result.result
    mismatch = _schema_mismatch(output_validator, content)
    if mismatch is not None:
        return failed(
            ErrorCode.INVALID_OUTPUT,
            f"tool {result.name} returned content that does not match its output schema: {mismatch}",
        )
    if result.details is not None:
        meta[META_DETAILS] = result.details
    return types.CallToolResult(
        # an image read_file returned goes as MCP's own image content, after its text
        content=[types.TextContent(text=content_text(content)), *(types.ImageContent(type="image", data=i.data, mime_type=i.media_type) for i in result.model_images())],
        structured_content=content if isinstance(content, dict) else None,
        meta=meta or None,
    )


def progress_message(update: ToolUpdate) -> str | None:
    """The ``message`` of the progress notification for one update: its content as text."""
    return None if update.content is None else content_text(update.content)


def build_server(
    tools: Sequence[Tool[Any]],
    *,
    name: str = "cog",
    instructions: str | None = None,
    hint_defaults: HintDefaults | None = None,
) -> Server[Any]:
    """A low-level MCP server offering ``tools``; run it on any transport. ``hint_defaults(tool)``
    gives behaviour hints the tools do not state themselves (see :func:`workspace_hints`)."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from cogcli import __version__

    index = tool_index(tools)
    listing = types.ListToolsResult(tools=[listed_tool(t, hint_defaults) for t in tools])
    validators = {t.name: _output_validator(t) for t in tools}

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        updates_in, updates_out = anyio.create_memory_object_stream[ToolUpdate](math.inf)

        def on_update(update: ToolUpdate) -> None:
            try:
                updates_in.send_nowait(update)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the call already ended

        async def forward_progress() -> None:
            # report_progress sends nothing when the client sent no progress token
            count = 0
            async with updates_out:
                async for update in updates_out:
                    count += 1
                    try:
                        await ctx.session.report_progress(count, None, progress_message(update))
                    except Exception:
                        log.debug("progress for %s could not be sent", params.name, exc_info=True)

        async with anyio.create_task_group() as tg:
            tg.start_soon(forward_progress)
            with updates_in:  # closing it lets the forwarder drain, so progress precedes the result
                result = await invoke_tool(params.name, params.arguments or {}, tools=index, on_update=on_update)
        # invoke_tool redacted it (and each update): the client hands the content to its model
        return call_result(result, validators.get(params.name))

    return Server(
        name,
        version=__version__,
        title="cog",
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes the connection."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def bind_http(port: int) -> socket.socket:
    """The listening socket on 127.0.0.1, or a :class:`ConfigError` naming the port (0 = any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HTTP_HOST, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {HTTP_HOST}:{port} ({exc.strerror}); pick another port with --http PORT") from None
    sock.listen(64)
    return sock


async def serve_http(server: Server[Any], sock: socket.socket) -> None:
    """Serve the streamable-HTTP transport at ``http://127.0.0.1:PORT/mcp`` on an already bound socket."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=HTTP_HOST)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    log.info("serving MCP at http://%s:%d%s", HTTP_HOST, sock.getsockname()[1], HTTP_PATH)
    await uvicorn.Server(config).serve(sockets=[sock])


def serve(root: Path, http_port: int | None = None, settings: Settings | None = None) -> None:
    """``cog mcp``: serve the workspace tools of ``root`` over stdio, or streamable HTTP on
    127.0.0.1:``http_port``. Returns when the client disconnects (stdio) or on Ctrl-C (HTTP).
    The tools are a :class:`cogcli.session.Session`'s, with the same settings as in ``cog edit``
    (:func:`cogcli.settings.load.load_settings`: ``[tool.cog]`` secret_globs, sandbox and test_command,
    ``COG_SANDBOX``, ``COG_TIMEOUT``, …)."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"workspace {root} is not a directory; pass an existing directory with -C DIR")
    from cogcli.settings.load import load_settings
    from cogcli.session import Session

    tools = Session(settings or load_settings(root)).tools
    server = build_server(
        tools,
        hint_defaults=workspace_hints,
        instructions=f"Tools that read, edit and test the workspace at {root.resolve()}. "
        "Call results carry the content as structuredContent; diffs and test reports are in _meta.",
    )
    if http_port is None:
        anyio.run(serve_stdio, server)
        return
    sock = bind_http(http_port)
    try:
        anyio.run(serve_http, server, sock)
    finally:
        sock.close()

