"""``cog mcp`` as a real subprocess, driven by the SDK's real clients (stdio and streamable HTTP),
on a copy of fixtures/calc; and ``cog mcp`` as the server behind ``mcp_tools()``."""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from jsonschema import validate
from mcp import Client, StdioServerParameters

from cogcli import ToolUpdate, invoke_tool
from cogcli.mcp import META_DETAILS, META_ERROR_CODE, META_PRESENTATION
from cogcli.mcp.client import mcp_tools

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE_TOOLS = {
    "read_file", "list_files", "search_text", "edit_file", "apply_patch", "write_file", "move_file", "delete_file", "git_status", "git_diff",
    "run_tests", "run_command", "command_output", "kill_command", "diagnostics",
}  # fmt: skip
FIX_OLD = '    """Return the sum of a and b."""\n    return a - b'
FIX_NEW = '    """Return the sum of a and b."""\n    return a + b'


def cog_mcp(repo: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "cogcli", "mcp", "-C", str(repo), *extra]


def stdio(repo: Path) -> StdioServerParameters:
    argv = cog_mcp(repo)
    return StdioServerParameters(command=argv[0], args=argv[1:], cwd=ROOT)


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    return make_repo("calc")


@pytest.mark.anyio
async def test_tools_are_listed_with_schemas_and_annotations(calc: Path) -> None:
    async with Client(stdio(calc)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == WORKSPACE_TOOLS
    for t in listed.values():
        assert t.input_schema["type"] == "object" and "properties" in t.input_schema
        assert t.title and t.description
        assert t.annotations is not None and t.annotations.open_world_hint is False  # the workspace only
    assert set(listed["edit_file"].input_schema["required"]) == {"path"}  # old_text and new_text, or edits
    for name in ("read_file", "list_files", "search_text", "git_status", "git_diff"):
        assert listed[name].annotations.read_only_hint is True, name
    for name in ("edit_file", "write_file"):
        hints = listed[name].annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (False, False, False), name
    assert listed["run_tests"].annotations.read_only_hint is False
    assert (listed["edit_file"].title, listed["run_tests"].title) == ("Edit file", "Run tests")


@pytest.mark.anyio
async def test_edit_file_returns_structured_content_and_keeps_the_diff_in_meta(calc: Path) -> None:
    async with Client(stdio(calc)) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["edit_file"].output_schema
        result = await client.call_tool("edit_file", {"path": "calc/ops.py", "old_text": FIX_OLD, "new_text": FIX_NEW})
    assert result.is_error is False, result.content
    assert result.structured_content == {"path": "calc/ops.py", "replacements": 1}
    assert [b.type for b in result.content] == ["text"]
    text = result.content[0].text
    assert text == '{"path": "calc/ops.py", "replacements": 1}'
    assert result.meta is not None
    diff = result.meta[META_DETAILS]["diff"]
    assert "-    return a - b" in diff and "+    return a + b" in diff
    assert "return a" not in text and "@@" not in text  # the diff is never in content
    assert result.meta[META_PRESENTATION] == {"label": "Edit file", "icon": "file-pen", "detail": "calc/ops.py"}
    assert "return a + b" in (calc / "calc/ops.py").read_text()
    assert schema is not None  # edit_file declares its output (EditFileResult): cog mcp lists it
    validate(result.structured_content, schema)


@pytest.mark.anyio
async def test_run_tests_streams_progress_notifications_before_the_result(calc: Path) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(stdio(calc)) as client:
        result = await client.call_tool("run_tests", {}, progress_callback=on_progress)
        seen_at_result = list(progress)
    assert result.is_error is False, result.content
    # one notification per test, all of them in before the result came back
    assert [value for value, _ in seen_at_result] == [1, 2, 3]
    assert sorted(message for _, message in seen_at_result) == [
        "tests/test_ops.py::test_add failed",
        "tests/test_ops.py::test_mul passed",
        "tests/test_ops.py::test_sub passed",
    ]
    assert "1 failed, 2 passed" in result.content[0].text
    assert result.meta is not None and len(result.meta[META_DETAILS]["tests"]) == 3


@pytest.mark.anyio
async def test_tool_errors_are_is_error_with_the_code_in_meta_and_nothing_touched(calc: Path) -> None:
    before = (calc / "calc/ops.py").read_text()
    async with Client(stdio(calc)) as client:
        missing = await client.call_tool("edit_file", {"path": "calc/ops.py", "old_text": "return a * a", "new_text": "x"})
        outside = await client.call_tool("write_file", {"path": "../escaped.txt", "content": "x"})
    assert missing.is_error is True and missing.meta[META_ERROR_CODE] == "EDIT_NO_MATCH"
    assert "not found" in missing.content[0].text
    assert outside.is_error is True and outside.meta[META_ERROR_CODE] == "PATH_OUTSIDE_WORKSPACE"
    assert (calc / "calc/ops.py").read_text() == before
    assert not (calc.parent / "escaped.txt").exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.anyio
async def test_streamable_http_serves_the_same_tools_with_progress(calc: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(cog_mcp(calc, "--http", str(port)), cwd=ROOT, stderr=subprocess.PIPE)
    try:
        with anyio.fail_after(60):  # wait for the port to accept, not a fixed sleep
            while True:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.05)
        messages: list[str | None] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            messages.append(message)

        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            assert {t.name for t in (await client.list_tools()).tools} == WORKSPACE_TOOLS
            read = await client.call_tool("read_file", {"path": "calc/ops.py"})
            tests = await client.call_tool("run_tests", {"paths": ["tests/test_ops.py"]}, progress_callback=on_progress)
        assert read.is_error is False and "return a - b" in read.content[0].text
        assert read.meta is not None and read.meta[META_PRESENTATION]["label"] == "Read file"
        assert tests.is_error is False and len(messages) == 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_busy_port_is_a_configuration_error(calc: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = subprocess.run(cog_mcp(calc, "--http", str(port)), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, f"cog mcp must exit 2 on serve()'s ConfigError (cli.mcp_command):\n{done.stderr}"
    assert f"127.0.0.1:{port}" in done.stderr and "--http PORT" in done.stderr


@pytest.mark.anyio
async def test_cog_mcp_behind_mcp_tools_keeps_details_presentation_and_progress(calc: Path) -> None:
    # cog talking to cog: every name collides with a built-in tool, so all carry the server's name
    async with mcp_tools([shlex.join(cog_mcp(calc))], WORKSPACE_TOOLS) as tools:
        by_name = {t.name: t for t in tools}
        assert set(by_name) == {f"cog_{name}" for name in WORKSPACE_TOOLS}
        edit = await invoke_tool(by_name["cog_edit_file"], {"path": "calc/ops.py", "old_text": FIX_OLD, "new_text": FIX_NEW})
        updates: list[ToolUpdate] = []
        run = await invoke_tool(by_name["cog_run_tests"], {}, on_update=updates.append)
    assert edit.result == {"path": "calc/ops.py", "replacements": 1}
    assert "+    return a + b" in edit.details["diff"]  # from _meta, back into details
    assert edit.presentation is not None and (edit.presentation.label, edit.presentation.detail) == ("Edit file", "calc/ops.py")
    assert run.ok and "3 passed" in run.result
    assert sorted(u.content for u in updates) == [
        "tests/test_ops.py::test_add passed",
        "tests/test_ops.py::test_mul passed",
        "tests/test_ops.py::test_sub passed",
    ]
    assert [u.details["progress"] for u in updates] == [1.0, 2.0, 3.0]


def test_a_missing_workspace_exits_2_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    done = subprocess.run(cog_mcp(missing), cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "nope" in done.stderr
    assert done.stdout == ""  # stdout is the protocol channel: nothing else ever goes there

