"""Other MCP servers' tools as cog tools: mcp_tools() against a real server subprocess
(tests/mcp_progress_server.py, written with the SDK's MCPServer as a third party would)."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from cogcli import AbortSignal, ConfigError, Tool, ToolUpdate, invoke_tool
from cogcli.mcp.client import McpArguments, mcp_tools

PROGRESS_SERVER = shlex.join([sys.executable, str(Path(__file__).with_name("mcp_progress_server.py"))])


@pytest.fixture(scope="module")
async def tools() -> AsyncIterator[dict[str, Tool[Any]]]:
    async with mcp_tools([PROGRESS_SERVER], {"fail"}) as listed:
        yield {t.name: t for t in listed}


def process_gone(pid: int) -> bool:
    """True once ``pid`` is neither running nor a zombie (its /proc entry is gone)."""
    return not Path(f"/proc/{pid}").exists()


async def wait_until(condition: Any, timeout: float = 30.0) -> bool:
    with anyio.move_on_after(timeout):
        while not condition():
            await anyio.sleep(0.02)
        return True
    return False


@pytest.mark.anyio
async def test_server_tools_become_cog_tools_with_the_server_schema(tools: dict[str, Tool[Any]]) -> None:
    # "fail" collides with an existing name, so it alone carries the server's name
    assert set(tools) == {"count", "pid", "hang", "progress-demo_fail"}
    count = tools["count"]
    assert issubclass(count.parameters, McpArguments)
    schema = count.input_schema()
    assert schema["properties"]["n"]["type"] == "integer" and schema["required"] == ["n"]
    assert count.spec()["parameters"] == schema  # what a model client sends is the server's schema
    assert count.description == "Count from 1 to n, reporting progress for each item."
    assert count.presentation is not None
    assert (count.presentation.label, count.presentation.detail) == ("Count items", "progress-demo")  # the title
    assert tools["pid"].presentation.label == "pid"  # no title: the name
    assert count.side_effects  # the server does not say it is read-only


@pytest.mark.anyio
async def test_a_call_gets_structured_content_and_progress_as_updates(tools: dict[str, Tool[Any]]) -> None:
    updates: list[ToolUpdate] = []
    result = await invoke_tool(tools["count"], {"n": 3}, on_update=updates.append)
    assert result.ok, result.error
    assert result.result == {"counted": 3}  # structuredContent, not the text block
    assert result.presentation is not None and result.presentation.detail == "progress-demo"
    # updates after the call returned would be dropped: all three arrived while it ran
    assert [(u.content, u.details) for u in updates] == [
        (f"item {i} of 3", {"progress": float(i), "total": 3.0}) for i in (1, 2, 3)
    ]


@pytest.mark.anyio
async def test_text_content_and_server_errors(tools: dict[str, Tool[Any]]) -> None:
    pid = await invoke_tool(tools["pid"], {})
    assert pid.ok and isinstance(pid.result, str) and pid.result.isdigit()

    failed = await invoke_tool(tools["progress-demo_fail"], {"message": "disk on fire"})
    assert failed.error_code == "MCP_ERROR"
    assert failed.error is not None and "disk on fire" in failed.error

    # validation is the server's: the permissive model lets the call through and the server refuses it
    bad = await invoke_tool(tools["count"], {"n": "many"})
    assert bad.error_code == "MCP_ERROR"
    assert bad.error is not None and "n" in bad.error


@pytest.mark.anyio
async def test_an_aborted_call_leaves_the_server_usable(tools: dict[str, Tool[Any]]) -> None:
    signal_ = AbortSignal()
    result = await invoke_tool(tools["hang"], {}, signal=signal_, on_update=lambda u: signal_.abort("user"))
    assert result.error_code == "ABORTED"
    again = await invoke_tool(tools["count"], {"n": 1})
    assert again.result == {"counted": 1}


@pytest.mark.anyio
async def test_names_are_prefixed_only_on_collision_between_servers() -> None:
    async with mcp_tools([PROGRESS_SERVER, PROGRESS_SERVER], {"pid"}) as listed:
        names = [t.name for t in listed]
        assert len(set(names)) == len(names) == 8
        assert all(n.startswith("progress-demo_") for n in names)
        assert "progress-demo_count" in names and "progress-demo_count_2" in names
        # both really work, each on its own server
        pids = {(await invoke_tool(name, {}, tools=listed)).result for name in names if name.startswith("progress-demo_pid")}
        assert len(pids) == 2


@pytest.mark.anyio
async def test_a_server_killed_mid_call_fails_that_call_and_the_run_goes_on() -> None:
    async with mcp_tools([PROGRESS_SERVER, PROGRESS_SERVER]) as listed:
        by_name = {t.name: t for t in listed}
        pid = int((await invoke_tool(by_name["progress-demo_pid"], {})).result)

        def kill_on_first_update(update: ToolUpdate) -> None:
            os.kill(pid, signal.SIGKILL)

        result = await invoke_tool(by_name["progress-demo_hang"], {}, on_update=kill_on_first_update)
        assert result.error_code == "MCP_ERROR"
        assert result.error is not None
        assert "progress-demo" in result.error and "closed the connection" in result.error

        later = await invoke_tool(by_name["progress-demo_count"], {"n": 1})  # the dead server: fails fast
        assert later.error_code == "MCP_ERROR"
        other = await invoke_tool(by_name["progress-demo_count_2"], {"n": 2})  # the other one still serves
        assert other.result == {"counted": 2}


@pytest.mark.anyio
async def test_servers_are_stopped_and_reaped_on_exit_even_when_the_body_raises() -> None:
    with pytest.raises(KeyError, match="body"):  # the caller's own exception, not a group
        async with mcp_tools([PROGRESS_SERVER]) as listed:
            pid = int((await invoke_tool("pid", {}, tools=listed)).result)
            assert not process_gone(pid)
            raise KeyError("body")
    assert await wait_until(lambda: process_gone(pid)), f"MCP server {pid} still exists (running or zombie)"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("no-such-mcp-server-xyz --stdio", "command not found: no-such-mcp-server-xyz"),
        (shlex.join([sys.executable, "-c", "import sys; sys.exit(3)"]), "closed the connection"),
        ("'unbalanced", "cannot parse"),
    ],
)
async def test_a_server_that_cannot_start_is_a_config_error_naming_it(command: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        async with mcp_tools([PROGRESS_SERVER, command]):
            pytest.fail("the tools must not be yielded")
    assert command in str(caught.value)
    assert says in str(caught.value)


@pytest.mark.anyio
async def test_a_server_that_never_answers_times_out_at_start() -> None:
    silent = shlex.join([sys.executable, "-c", "import time; time.sleep(120)"])
    with pytest.raises(ConfigError, match="did not start within 1 s"):
        async with mcp_tools([silent], startup_timeout=1):
            pytest.fail("the tools must not be yielded")


@pytest.mark.anyio
async def test_no_commands_no_tools() -> None:
    async with mcp_tools([]) as listed:
        assert listed == []
