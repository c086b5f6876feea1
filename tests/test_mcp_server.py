"""The MCP server's rules, in process, through the SDK's own client.

``mode="legacy"`` runs the handshake-era protocol as JSON-RPC over memory streams; ``"auto"``
the modern per-request protocol. Every rule holds in both. (``cog mcp`` as a real subprocess
over stdio and HTTP: tests/test_mcp_stdio.py.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from jsonschema import validate
from mcp import Client
from pydantic import BaseModel

from cogcli import ErrorCode, ToolCallError, tool, tool_output
from cogcli.mcp import META_DETAILS, META_ERROR_CODE, META_PRESENTATION
from cogcli.adapters.mcp_server import build_server, tool_hints, workspace_hints
from cogcli.contract.tool import NoParameters


class Steps(BaseModel):
    n: int = 3


class Counted(BaseModel):
    counted: int
    path: str


@tool(
    output_schema=Counted,
    presentation={"label": "Count steps", "icon": "hash"},
    side_effects=("writes files",),
)
async def count(params: Steps, context: Any) -> Any:
    """Count to n, one update per step."""
    for i in range(params.n):
        context.update(content=f"step {i + 1}", details={"i": i})
        await anyio.sleep(0)
    return tool_output(
        {"counted": params.n, "path": "a.py"},
        details={"diff": "--- a/a.py\n+++ b/a.py\n"},
        presentation={"label": "Count steps", "icon": "hash", "detail": "a.py"},
    )


class Lax(BaseModel):
    total: int


@tool(output_schema=Lax, side_effects=("runs code",))
async def lax_total(params: NoParameters) -> Any:
    """Returns a string where the schema says integer: pydantic's lax mode accepts it, JSON Schema does not."""
    return {"total": "3"}


@tool(annotations={"title": "Say hello", "openWorldHint": True})
async def hello(params: NoParameters) -> str:
    """Plain text content."""
    return "hello there"


@tool()
async def refuse(params: NoParameters) -> str:
    """Always fails with a code."""
    raise ToolCallError("old_text was not found in a.py", code=ErrorCode.EDIT_NO_MATCH)


TOOLS = [count, lax_total, hello, refuse]


@pytest.fixture(params=["legacy", "auto"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(message)

    async with Client(build_server(TOOLS), mode=request.param, message_handler=on_message) as c:
        c.seen = seen  # type: ignore[attr-defined]
        yield c


@pytest.mark.anyio
async def test_tools_are_listed_with_schemas_titles_and_hints(client: Client) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == {"count", "lax_total", "hello", "refuse"}

    c = listed["count"]
    assert c.input_schema == Steps.model_json_schema()
    assert c.output_schema == Counted.model_json_schema()  # describes content, not the tool_output container
    assert c.title == "Count steps"  # the static presentation's label
    assert c.annotations is not None and c.annotations.read_only_hint is False

    h = listed["hello"]
    assert h.output_schema is None
    assert h.title == "Say hello"
    assert h.annotations is not None
    assert h.annotations.read_only_hint is True  # no side effects
    assert h.annotations.open_world_hint is True  # the tool's own hint
    assert listed["refuse"].title == "Refuse"  # derived from the name


@pytest.mark.anyio
async def test_content_is_structured_and_details_live_only_in_meta(client: Client) -> None:
    result = await client.call_tool("count", {"n": 2})
    assert result.is_error is False
    assert result.structured_content == {"counted": 2, "path": "a.py"}
    validate(result.structured_content, Counted.model_json_schema())
    assert [b.type for b in result.content] == ["text"]
    assert result.content[0].text == '{"counted": 2, "path": "a.py"}'
    assert result.meta is not None
    assert result.meta[META_DETAILS] == {"diff": "--- a/a.py\n+++ b/a.py\n"}
    assert result.meta[META_PRESENTATION] == {"label": "Count steps", "icon": "hash", "detail": "a.py"}
    assert "diff" not in result.content[0].text and "diff" not in result.structured_content


@pytest.mark.anyio
async def test_string_content_is_plain_text_without_structured_content(client: Client) -> None:
    result = await client.call_tool("hello", {})
    assert result.is_error is False
    assert result.structured_content is None
    assert [b.text for b in result.content] == ["hello there"]


@pytest.mark.anyio
async def test_updates_become_progress_notifications_before_the_result(client: Client) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    result = await client.call_tool("count", {"n": 3}, progress_callback=on_progress)
    # all of them are in when call_tool returns: the server sent them before the result
    assert progress == [(1, None, "step 1"), (2, None, "step 2"), (3, None, "step 3")]
    assert result.structured_content == {"counted": 3, "path": "a.py"}


@pytest.mark.anyio
async def test_no_progress_token_no_progress_notifications() -> None:
    # JSON-RPC framing, so every notification the server sends reaches the message handler
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(type(message).__name__)

    async with Client(build_server(TOOLS), mode="legacy", message_handler=on_message) as c:
        result = await c.call_tool("count", {"n": 3})
        assert result.structured_content == {"counted": 3, "path": "a.py"}
        assert "ProgressNotification" not in seen

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            pass

        await c.call_tool("count", {"n": 3}, progress_callback=on_progress)
        assert seen.count("ProgressNotification") == 3  # the handler does see them when asked for


@pytest.mark.anyio
async def test_a_tool_error_is_is_error_with_its_code_in_meta(client: Client) -> None:
    result = await client.call_tool("refuse", {})
    assert result.is_error is True
    assert result.content[0].text == "old_text was not found in a.py"
    assert result.meta is not None and result.meta[META_ERROR_CODE] == "EDIT_NO_MATCH"
    assert result.structured_content is None


@pytest.mark.anyio
async def test_bad_arguments_and_unknown_tools_are_tool_errors(client: Client) -> None:
    bad = await client.call_tool("count", {"n": "many"})
    assert bad.is_error is True
    assert bad.meta is not None and bad.meta[META_ERROR_CODE] == "INVALID_ARGUMENTS"
    assert "n:" in bad.content[0].text
    assert bad.meta[META_PRESENTATION]["label"] == "Count steps"  # a failed call keeps its presentation

    unknown = await client.call_tool("nope", {})
    assert unknown.is_error is True
    assert unknown.meta is not None and unknown.meta[META_ERROR_CODE] == "TOOL_NOT_FOUND"


@pytest.mark.anyio
async def test_content_that_breaks_the_output_schema_is_a_tool_error_not_a_bad_response(client: Client) -> None:
    result = await client.call_tool("lax_total", {})  # the client would reject structuredContent {"total": "3"}
    assert result.is_error is True
    assert result.meta is not None and result.meta[META_ERROR_CODE] == "INVALID_OUTPUT"
    assert "total" in result.content[0].text and "output schema" in result.content[0].text
    assert result.structured_content is None


def test_hints_read_only_without_side_effects_workspace_defaults_and_tool_overrides() -> None:
    assert tool_hints(hello) == {"readOnlyHint": True, "openWorldHint": True}
    assert tool_hints(count, workspace_hints) == {
        "readOnlyHint": False,
        "openWorldHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
    }
    assert tool_hints(lax_total, workspace_hints) == {"readOnlyHint": False, "openWorldHint": False}

    @tool(side_effects=("writes files",), annotations={"destructive_hint": True})
    async def wipe(params: NoParameters) -> str:
        """Snake-case hints count too."""
        return ""

    assert tool_hints(wipe, workspace_hints)["destructiveHint"] is True


@pytest.mark.anyio
async def test_an_image_read_file_returns_is_mcp_image_content_after_its_text(tmp_path: Any) -> None:
    """``cog mcp`` serving read_file: an image goes as MCP's own image block, its bytes as read."""
    import base64
    import io

    from PIL import Image

    from conftest import init_git_repo
    from workspace_tools import workspace_tools

    buffer = io.BytesIO()
    Image.new("RGB", (12, 8), (255, 0, 0)).save(buffer, format="PNG")
    (tmp_path / "dot.png").write_bytes(buffer.getvalue())
    init_git_repo(tmp_path)
    async with Client(build_server(workspace_tools(tmp_path)), mode="auto") as c:
        result = await c.call_tool("read_file", {"path": "dot.png"})
    text, image = result.content
    assert result.is_error is False and text.text.startswith("dot.png: PNG image, 12×8 pixels")
    assert image.type == "image" and image.mime_type == "image/png" and base64.b64decode(image.data) == buffer.getvalue()
