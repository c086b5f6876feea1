"""MCP protocol versions: ``cog mcp`` (a real subprocess, stdio and Streamable HTTP) checked with
the SDK's own client pinned to 2026-07-28 (stateless: ``server/discover``, no handshake) and to the
handshake era (2025-11-25, the SDK's ``mode="legacy"``); and cog as a client negotiating with a
server that knows only 2025-06-18 (``tests/mcp_legacy_server.py``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters

from cogcli.mcp.client import connect_http, mcp_tools
from test_mcp_stdio import ROOT, cog_mcp, free_port

pytestmark = pytest.mark.anyio
MODES = [("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25"), ("auto", "2026-07-28")]


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    return make_repo("calc")


async def check(client: Client, negotiated: str) -> None:
    assert client.protocol_version == negotiated
    listed = (await client.list_tools()).tools
    assert {"read_file", "edit_file", "run_tests"} <= {t.name for t in listed}
    for tool in listed:  # 2026-07-28 tool schemas are JSON Schema 2020-12
        Draft202012Validator.check_schema(tool.input_schema)
        if tool.output_schema is not None:
            Draft202012Validator.check_schema(tool.output_schema)
    read = await client.call_tool("read_file", {"path": "calc/ops.py"})
    assert read.is_error is False and "return a - b" in read.content[0].text


@pytest.mark.parametrize(("mode", "negotiated"), MODES)
async def test_cog_mcp_over_stdio_speaks_each_version(calc: Path, mode: str, negotiated: str) -> None:
    argv = cog_mcp(calc)
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], cwd=ROOT), mode=mode) as client:  # type: ignore[arg-type]
        await check(client, negotiated)


async def test_cog_mcp_over_http_speaks_each_version_and_cog_negotiates_the_newest(calc: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(cog_mcp(calc, "--http", str(port)), cwd=ROOT, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with anyio.fail_after(60):
            while True:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.05)
        for mode, negotiated in MODES:
            async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
                await check(client, negotiated)
        async with connect_http(url) as server:  # cog as the client
            assert server.client.protocol_version == "2026-07-28"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_cog_as_a_client_falls_back_to_the_handshake_of_an_older_server() -> None:
    command = f"{sys.executable} {Path(__file__).with_name('mcp_legacy_server.py')}"
    async with mcp_tools([command]) as tools:
        (echo,) = tools
        assert echo.name == "echo" and echo.annotations["mcpServer"] == "legacy"
        from cogcli import invoke_tool

        result = await invoke_tool(echo, {"text": "hello"})
    assert result.error is None and result.result == "echo: hello"
