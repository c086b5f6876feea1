"""`--sandbox auto|on|off` from the command line: the escape suite fails inside the sandbox and
succeeds without it; auto without a usable bwrap says so once; on without it exits 2 first."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPLAY, json_lines, run_cog

from workspace_tools.sandbox import bwrap

needs_bwrap = pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="bubblewrap is not usable here")

ESCAPES = {
    "tests/test_sandbox.py::test_outside_the_workspace_is_out_of_reach",
    "tests/test_sandbox.py::test_home_is_out_of_reach",
    "tests/test_sandbox.py::test_network_is_unshared",
}
NOTICE = "tests run WITHOUT a sandbox"


@pytest.fixture
def escape_env(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A listening socket, a folder outside the workspace and a file name under $HOME, for the
    fixture suite (fixtures/sandboxed) to try to reach."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    outside = tmp_path / "outside"
    outside.mkdir()
    home_file = Path.home() / f".cog-sandbox-{uuid.uuid4().hex}"
    real = home_file.with_name(home_file.name + ".real")  # in the real home: the sandbox's must not show it
    real.write_text("real")
    env = {
        "COG_TEST_OUTSIDE": str(outside),
        "COG_TEST_TMP_MARKER": f"cog-sandbox-{uuid.uuid4().hex}",
        "COG_TEST_HOME_MARKER": home_file.name,
        "COG_TEST_PORT": str(server.getsockname()[1]),
        "COG_PASS_ENV": "COG_TEST_OUTSIDE,COG_TEST_TMP_MARKER,COG_TEST_HOME_MARKER,COG_TEST_PORT",
    }
    yield {"env": env, "server": server, "outside": outside / "escaped.txt", "home": home_file}
    server.close()
    real.unlink(missing_ok=True)
    home_file.unlink(missing_ok=True)  # written only by the run without the sandbox


def connected(server: socket.socket) -> bool:
    """True when someone connected (the kernel completes the handshake before accept)."""
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def run_escapes(repo: Path, sandbox: str, env: dict[str, str]) -> dict[str, Any]:
    out = run_cog(["tool", "run_tests", "--json", "--sandbox", sandbox, "keyword=outside or home or network"], repo, env=env)
    assert out.returncode in (0, 1), out.stderr
    result = json_lines(out.stdout)[-1]
    assert result["type"] == "tool-result", result
    return result["details"]


@needs_bwrap
def test_escapes_fail_inside_the_sandbox_and_succeed_without_it(make_repo, escape_env) -> None:
    repo = make_repo("sandboxed")
    env = escape_env["env"]

    inside = run_escapes(repo, "on", env)
    assert inside["sandbox"] == "bwrap"
    assert {t["id"]: t["outcome"] for t in inside["tests"]} == dict.fromkeys(ESCAPES, "passed")
    assert not escape_env["outside"].exists()
    assert not escape_env["home"].exists()
    assert not connected(escape_env["server"])

    # the same tests without the sandbox: every escape works, so each test fails ("DID NOT RAISE")
    bare = run_escapes(repo, "off", env)
    assert bare["sandbox"] == "none"
    assert {t["id"]: t["outcome"] for t in bare["tests"]} == dict.fromkeys(ESCAPES, "failed")
    assert all("DID NOT RAISE" in t["longrepr"] or "the real home is visible" in t["longrepr"] for t in bare["tests"])
    assert escape_env["outside"].read_text() == "escaped"
    assert escape_env["home"].read_text() == "escaped"
    assert connected(escape_env["server"])


@pytest.fixture
def broken_bwrap(tmp_path: Path) -> dict[str, str]:
    """A PATH whose bwrap cannot create a sandbox, as in a container without user namespaces."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def write_cassette(path: Path, turns: list[dict[str, Any]]) -> str:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}, *({"type": "turn", **t} for t in turns)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return f"replay:{path}"


def test_auto_without_a_usable_bwrap_runs_unsandboxed_with_one_notice(make_repo, broken_bwrap, tmp_path: Path) -> None:
    repo = make_repo("calc")
    model = write_cassette(
        tmp_path / "twice.jsonl",
        [
            {"toolCalls": [{"id": "c1", "name": "run_tests", "arguments": {}}]},
            {"toolCalls": [{"id": "c2", "name": "run_tests", "arguments": {"paths": ["tests"]}}]},
            {"text": "Ran them twice."},
        ],
    )
    out = run_cog(["edit", "--json", "--model", model, "Run the tests"], repo, env=broken_bwrap)

    assert out.returncode == 1, out.stderr  # test_add fails in fixtures/calc
    runs = [e for e in json_lines(out.stdout) if e["type"] == "tool-result"]
    assert [r["details"]["sandbox"] for r in runs] == ["none", "none"]
    assert out.stderr.count(NOTICE) == 1
    assert "No permissions to create new namespace" in out.stderr and "apt install bubblewrap" in out.stderr
    # and it names the settings that block user namespaces
    assert "kernel.unprivileged_userns_clone" in out.stderr and "apparmor_restrict_unprivileged_userns" in out.stderr
    quiet = run_cog(["tool", "run_tests", "--sandbox", "off"], repo, env=broken_bwrap)
    assert NOTICE not in quiet.stderr


@pytest.mark.parametrize("where", ["flag", "COG_SANDBOX", "pyproject"])
def test_on_without_a_usable_bwrap_exits_2_before_anything_runs(make_repo, broken_bwrap, where: str) -> None:
    repo = make_repo("calc")
    env, flags = dict(broken_bwrap), []
    if where == "flag":
        flags = ["--sandbox", "on"]
    elif where == "COG_SANDBOX":
        env["COG_SANDBOX"] = "on"
    else:
        (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text() + '\n[tool.cog]\nsandbox = "on"\n')

    for args in (["edit", *flags, "--model", REPLAY, "Fix the failing test"], ["tool", "run_tests", *flags]):
        out = run_cog(args, repo, env=env)
        assert (out.returncode, out.stdout) == (2, ""), out.stderr
        assert "--sandbox on: bwrap is installed but cannot create a sandbox here" in out.stderr
        assert "apt install bubblewrap" in out.stderr
    assert not (repo / ".cog").exists()  # no thread was started
    assert "return a - b" in (repo / "calc" / "ops.py").read_text()


@needs_bwrap
def test_the_flag_beats_the_environment_which_beats_pyproject(make_repo) -> None:
    repo = make_repo("calc")
    (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text() + '\n[tool.cog]\nsandbox = "off"\n')

    def sandbox(args: list[str], env: dict[str, str] | None = None) -> str:
        out = run_cog(["tool", "run_tests", "--json", *args, "keyword=sub"], repo, env=env)
        return json_lines(out.stdout)[-1]["details"]["sandbox"]

    # a workspace cannot turn the sandbox off (a test or the model could have written that line)
    assert sandbox([]) == "bwrap"
    ignored = run_cog(["tool", "run_tests", "keyword=sub"], repo)
    assert '[tool.cog] sandbox = "off" in pyproject.toml is ignored' in ignored.stderr
    assert sandbox([], {"COG_SANDBOX": "off"}) == "none"
    assert sandbox([], {"COG_SANDBOX": "auto"}) == "bwrap"
    assert sandbox(["--sandbox", "off"], {"COG_SANDBOX": "on"}) == "none"
    bad = run_cog(["tool", "run_tests"], repo, env={"COG_SANDBOX": "sometimes"})
    assert bad.returncode == 2 and "COG_SANDBOX must be auto, on or off" in bad.stderr
