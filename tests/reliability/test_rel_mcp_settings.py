"""Issue 13 §1: ``cog mcp`` reads the same settings as ``cog edit`` (``[tool.cog]`` secret_globs,
sandbox, test_command, ``COG_SANDBOX``) and its ``_meta`` carries no secret its content hides.
Reproduced first: before the fix ``cog mcp`` built its tools with ``workspace_tools(root)`` alone, so
``config/credentials.json`` was read and searched, run_tests ran pytest unsandboxed whatever the
settings said, and ``_meta["cogcli/details"]`` held the raw matches."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from cogcli.mcp import META_DETAILS
from workspace_tools.sandbox.bwrap import bwrap_executable

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _params(repo: Path, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "cogcli", "mcp", "-C", str(repo)], cwd=ROOT, env={**os.environ, **(env or {})}
    )


def _repo(make_repo: Callable[..., Path], config: str) -> Path:
    repo = make_repo("calc")
    (repo / "config").mkdir()
    (repo / "config" / "credentials.json").write_text(json.dumps({"token": "plain-value-123"}) + "\n")
    (repo / "notes.txt").write_text(f"deploy with {TOKEN}\n")
    pyproject = repo / "pyproject.toml"
    pyproject.write_text((pyproject.read_text() if pyproject.exists() else "") + "\n[tool.cog]\n" + config)
    return repo


@pytest.mark.anyio
async def test_cog_mcp_keeps_the_workspace_secret_globs_and_redacts_meta(make_repo: Callable[..., Path]) -> None:
    repo = _repo(make_repo, 'secret_globs = ["config/credentials.*"]\ntest_command = "echo from-config-test-command"\n')
    async with Client(_params(repo, {"COG_SANDBOX": "off"})) as client:
        read = await client.call_tool("read_file", {"path": "config/credentials.json"})
        search = await client.call_tool("search_text", {"pattern": "plain-value|deploy"})
        tests = await client.call_tool("run_tests", {})
    assert read.is_error and "looks like a secret" in read.content[0].text
    assert "plain-value-123" not in json.dumps(search.model_dump(mode="json", by_alias=True))
    dumped = json.dumps(search.model_dump(mode="json", by_alias=True))
    assert "deploy with" in dumped and TOKEN not in dumped  # content and _meta alike
    assert search.meta is not None and META_DETAILS in search.meta
    details = tests.meta[META_DETAILS]  # type: ignore[index]
    assert details["sandbox"] == "none" and "from-config-test-command" in json.dumps(tests.model_dump(mode="json"))


@pytest.mark.anyio
@pytest.mark.skipif(bwrap_executable() is None, reason="bubblewrap is not installed")
async def test_cog_mcp_honours_cog_sandbox_over_the_config(make_repo: Callable[..., Path]) -> None:
    repo = _repo(make_repo, 'sandbox = "on"\n')
    async with Client(_params(repo)) as client:
        on = await client.call_tool("run_tests", {})
    async with Client(_params(repo, {"COG_SANDBOX": "off"})) as client:
        off = await client.call_tool("run_tests", {})
    assert on.meta[META_DETAILS]["sandbox"] == "bwrap"  # type: ignore[index]
    assert off.meta[META_DETAILS]["sandbox"] == "none"  # type: ignore[index]


def test_cog_mcp_with_bad_settings_exits_2_naming_them(make_repo: Callable[..., Path]) -> None:
    import subprocess

    repo = _repo(make_repo, 'sandbox = "sometimes"\n')
    proc = subprocess.run([sys.executable, "-m", "cogcli", "mcp", "-C", str(repo)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "sandbox" in proc.stderr and "Traceback" not in proc.stderr
