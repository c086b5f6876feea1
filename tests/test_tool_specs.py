"""The workspace tools' specs kept between processes, and the tools made on first use (issue 53)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from cogcli.contract.invoke import invoke_tool
from cogcli.contract.tool import Tool
from cogcli.session import make_tools
from cogcli.session.tool_specs import CACHE_FILE, DeferredTool, spec_key
from cogcli.settings.load import load_settings

OPS = Path("calc") / "ops.py"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    return folder / "cog" / CACHE_FILE


def _specs(tools: list[Tool]) -> list[dict]:  # type: ignore[type-arg]
    return [t.spec() for t in tools]


@pytest.mark.anyio
async def test_a_kept_spec_stands_for_its_tool_until_the_tool_is_used(make_repo: Callable[..., Path], state: Path) -> None:
    repo = make_repo("calc")
    settings = load_settings(repo, sandbox="off")
    first = make_tools(settings)
    assert not any(isinstance(t, DeferredTool) for t in first)  # nothing kept yet: made, and their specs kept
    assert state.stat().st_mode & 0o077 == 0

    again = make_tools(settings)
    assert all(isinstance(t, DeferredTool) and not t.is_made for t in again)
    assert _specs(again) == _specs(first)  # what the model is told is the same
    assert not any(t.is_made for t in again)  # ... and telling it made no tool

    read = next(t for t in again if t.name == "read_file")
    result = await invoke_tool("read_file", {"path": OPS.as_posix()}, tools=again)
    assert result.error is None and "return a - b" in str(result.result)
    assert read.is_made and read.read_only and read.kind == "read"  # made by its first call
    assert [t.name for t in again if t.is_made] == ["read_file"]
    assert all(t.close is None for t in again if not t.is_made)  # a tool never made holds nothing to release


@pytest.mark.anyio
async def test_a_kept_spec_never_loosens_what_a_call_is_checked_against(make_repo: Callable[..., Path], state: Path) -> None:
    """The file only says what the model is told: a planted spec that takes anything still has
    every call validated by the tool's own parameters."""
    repo = make_repo("calc")
    settings = load_settings(repo, sandbox="off")
    make_tools(settings)
    kept = json.loads(state.read_text())
    (key,) = kept["keys"]
    kept["keys"][key]["read_file"]["parameters"] = {"type": "object", "properties": {}, "additionalProperties": True}
    state.write_text(json.dumps(kept))
    tools = make_tools(settings)
    assert next(t for t in tools if t.name == "read_file").input_schema()["properties"] == {}  # the planted spec is what it says
    result = await invoke_tool("read_file", {"no_such_argument": 1}, tools=tools)
    assert result.error_code == "INVALID_ARGUMENTS"  # ... the real model refused the call


def test_specs_are_kept_per_options_version_and_sources(make_repo: Callable[..., Path], state: Path) -> None:
    repo = make_repo("calc")
    make_tools(load_settings(repo, sandbox="off"))
    # another test command changes run_tests' description: its tools are made, not taken from the file
    other = make_tools(load_settings(repo, sandbox="off", test_command="make check"))
    assert not any(isinstance(t, DeferredTool) for t in other)
    assert "make check" in next(t for t in other if t.name == "run_tests").description
    assert all(isinstance(t, DeferredTool) for t in make_tools(load_settings(repo, sandbox="off", test_command="make check")))

    options = {"root": repo, "sandbox": "off", "only": {"read_file", "list_files"}}
    assert spec_key(options, "0.1.0") == spec_key({**options, "only": {"list_files", "read_file"}}, "0.1.0")
    assert spec_key(options, "0.1.0") != spec_key(options, "0.2.0")
    assert spec_key({**options, "thing": object()}, "0.1.0") is None  # an option told apart only by its address: nothing kept

    import workspace_tools.files.read as read_module

    source = Path(read_module.__file__)
    before = spec_key(options, "0.1.0")
    stat = source.stat()
    try:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a changed tool source: its specs made again
        assert spec_key(options, "0.1.0") != before
    finally:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.parametrize("planted", ["not json", json.dumps({"format": 1, "keys": "x"}), json.dumps([1, 2])])
def test_a_file_cog_did_not_write_is_ignored(make_repo: Callable[..., Path], state: Path, planted: str) -> None:
    repo = make_repo("calc")
    settings = load_settings(repo, sandbox="off")
    state.parent.mkdir(parents=True)
    state.write_text(planted)
    assert not any(isinstance(t, DeferredTool) for t in make_tools(settings))
    assert all(isinstance(t, DeferredTool) for t in make_tools(settings))  # and replaced by what cog keeps


def test_a_changed_copy_of_a_deferred_tool_is_the_real_tool(make_repo: Callable[..., Path], state: Path) -> None:
    """dataclasses.replace (cog's ACP read_file, a timeout) gets the tool itself, changed."""
    repo = make_repo("calc")
    settings = load_settings(repo, sandbox="off")
    make_tools(settings)
    deferred = next(t for t in make_tools(settings) if t.name == "run_tests")
    assert isinstance(deferred, DeferredTool)
    changed = dataclasses.replace(deferred, timeout=7.0)
    assert type(changed) is Tool and changed.timeout == 7.0 and changed.reports_tests
    # the settings' timeout is applied as each tool is made
    timed = load_settings(repo, sandbox="off", timeout=9.0)
    make_tools(timed)
    assert [t.timeout for t in make_tools(timed)] == [9.0] * len(make_tools(timed))
