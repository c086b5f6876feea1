"""run_tests under bubblewrap: read-only root, writable workspace, private /tmp, no network,
and the report pipe still streams through the sandbox."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogcli import ErrorCode
from run_tests_helpers import processes_in, run_tool, wait_until
from workspace_tools.sandbox import bwrap

needs_bwrap = pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="bubblewrap is not usable here")


@pytest.fixture
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def sandbox_env(tmp_path: Path, listener: int, monkeypatch) -> Iterator[dict[str, Path]]:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = f"cog-sandbox-{uuid.uuid4().hex}"
    home_file = Path.home() / f".cog-sandbox-{uuid.uuid4().hex}"
    real = home_file.with_name(home_file.name + ".real")  # in the real home: the sandbox's must not show it
    real.write_text("real")
    monkeypatch.setenv("COG_TEST_OUTSIDE", str(outside))
    monkeypatch.setenv("COG_TEST_TMP_MARKER", marker)
    monkeypatch.setenv("COG_TEST_HOME_MARKER", home_file.name)
    monkeypatch.setenv("COG_TEST_PORT", str(listener))
    # the tests get an allow-listed environment: the person passes what the suite needs
    monkeypatch.setenv("COG_PASS_ENV", "COG_TEST_OUTSIDE COG_TEST_TMP_MARKER COG_TEST_HOME_MARKER COG_TEST_PORT")
    yield {"outside": outside, "tmp_marker": Path("/tmp") / marker, "home_file": home_file}
    real.unlink(missing_ok=True)
    home_file.unlink(missing_ok=True)  # written only by a run without the sandbox


@needs_bwrap
@pytest.mark.anyio
async def test_tests_run_sandboxed_and_still_stream(make_repo, sandbox_env) -> None:
    root = make_repo("sandboxed")
    run = await run_tool(root, sandbox="on")

    assert run.result.ok, run.result.error
    assert run.details["sandbox"] == "bwrap"
    failing = {t["id"]: t["longrepr"] for t in run.details["tests"] if t["outcome"] != "passed"}
    assert failing == {}
    assert len(run.updates) == 6  # the report pipe crossed the sandbox
    assert (root / "written-in-sandbox.txt").read_text() == "ok"
    assert not (sandbox_env["outside"] / "escaped.txt").exists()
    assert not sandbox_env["home_file"].exists()
    assert not sandbox_env["tmp_marker"].exists()
    assert not Path("/usr/cog-sandbox-escape.txt").exists()
    assert "ran in a sandbox: no network" in run.result.result


@pytest.mark.anyio
async def test_without_the_sandbox_the_network_is_reachable(make_repo, sandbox_env) -> None:
    run = await run_tool(make_repo("sandboxed"), {"keyword": "network"}, sandbox="off")

    assert run.result.ok, run.result.error
    assert run.details["sandbox"] == "none"
    assert run.outcomes() == {"tests/test_sandbox.py::test_network_is_unshared": "failed"}


@needs_bwrap
@pytest.mark.anyio
async def test_auto_uses_bwrap_when_it_works(make_repo, sandbox_env) -> None:
    run = await run_tool(make_repo("sandboxed"), {"keyword": "network"}, sandbox="auto")

    assert run.details["sandbox"] == "bwrap"
    assert run.outcomes() == {"tests/test_sandbox.py::test_network_is_unshared": "passed"}


@needs_bwrap
@pytest.mark.anyio
async def test_timeout_kills_the_tree_inside_the_sandbox(make_repo) -> None:
    root = make_repo("hang")
    run = await run_tool(root, sandbox="on", timeout=12)

    assert run.result.error_code == ErrorCode.TOOL_TIMEOUT
    pids = [int(p) for p in (root / "pids.txt").read_text().split()]
    assert len(pids) == 4  # pids inside the sandbox's own PID namespace: the host sees them by their cwd
    assert wait_until(lambda: processes_in(root) == [])


@needs_bwrap
@pytest.mark.anyio
async def test_test_command_runs_sandboxed(make_repo) -> None:
    run = await run_tool(make_repo("calc"), test_command="touch /usr/cog-escape 2>&1; echo done", sandbox="on")

    assert run.details["sandbox"] == "bwrap"
    assert "Read-only file system" in run.result.result
    assert not Path("/usr/cog-escape").exists()


@pytest.mark.anyio
async def test_sandbox_on_without_bwrap_is_a_clear_error(make_repo, monkeypatch) -> None:
    monkeypatch.setattr(bwrap, "bwrap_executable", lambda: None)
    root = make_repo("calc")
    run = await run_tool(root, sandbox="on")

    assert run.result.error_code == ErrorCode.TOOL_ERROR
    assert "apt install bubblewrap" in (run.result.error or "")
    assert run.updates == []

    fallback = await run_tool(root, {"keyword": "sub"}, sandbox="auto")
    assert fallback.details["sandbox"] == "none"


@needs_bwrap
@pytest.mark.anyio
async def test_caches_under_xdg_cache_home_are_writable_in_the_sandbox(make_repo) -> None:
    command = 'mkdir -p "$XDG_CACHE_HOME/tool" && echo cached > "$XDG_CACHE_HOME/tool/x" && cat "$XDG_CACHE_HOME/tool/x"'
    run = await run_tool(make_repo("calc"), test_command=command, sandbox="on")
    assert run.result.ok, run.result.error
    assert run.details["exit_code"] == 0 and "cached" in run.details["output_tail"]


HONEST_SUITE = '''
import os, socket, threading
from pathlib import Path

import pytest


def test_loopback_server_and_client_talk():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    threading.Thread(target=lambda: server.accept()[0].sendall(b"hi"), daemon=True).start()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        assert client.recv(2) == b"hi"


def test_localhost_resolves_as_on_the_host():
    flags = socket.AI_ADDRCONFIG
    got = sorted({a[4][0] for a in socket.getaddrinfo("localhost", 80, 0, socket.SOCK_STREAM, 0, flags)})
    assert got == os.environ["HOST_LOCALHOST"].split(",")


def test_outside_hosts_fail_at_once():
    with pytest.raises(OSError) as caught:
        socket.create_connection(("example.com", 80), timeout=30)
    assert not isinstance(caught.value, TimeoutError)
    with pytest.raises(OSError) as caught:
        socket.create_connection(("93.184.216.34", 80), timeout=30)
    assert not isinstance(caught.value, TimeoutError)


def test_home_is_a_writable_throwaway():
    (Path.home() / ".cache" / "tool").mkdir(parents=True, exist_ok=True)
    (Path.home() / ".toolrc").write_text("x")
    assert not (Path.home() / os.environ["HOST_HOME_FILE"]).exists()
'''


@needs_bwrap
@pytest.mark.anyio
async def test_honest_suites_pass_inside_the_sandbox(make_repo, monkeypatch) -> None:
    root = make_repo("calc")
    (root / "tests" / "test_honest.py").write_text(HONEST_SUITE)
    host = sorted({a[4][0] for a in socket.getaddrinfo("localhost", 80, 0, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)})
    real = Path.home() / f".cog-honest-{uuid.uuid4().hex}"
    real.write_text("the real home")
    monkeypatch.setenv("HOST_LOCALHOST", ",".join(host))
    monkeypatch.setenv("HOST_HOME_FILE", real.name)
    monkeypatch.setenv("COG_PASS_ENV", "HOST_LOCALHOST HOST_HOME_FILE")
    try:
        run = await run_tool(root, {"paths": ["tests/test_honest.py"]}, sandbox="on")
    finally:
        real.unlink()
    assert run.details["sandbox"] == "bwrap"
    failing = {t["id"]: t["longrepr"] for t in run.details["tests"] if t["outcome"] != "passed"}
    assert failing == {}
    assert run.details["passed"] == 4
    assert not (Path.home() / ".toolrc").exists() or (Path.home() / ".toolrc").read_text() != "x"
