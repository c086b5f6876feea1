"""Background commands (issue 50, part 2): run_command(background=true), command_output, kill_command.

Real processes, real bwrap: a server started in the background is reachable from a later sandboxed
command (the session's one loopback network) and from nothing else; output is read in pieces and
stays bounded; a kill ends the whole group; a closing session (or a process that exits) leaves
nothing running.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from run_tests_helpers import alive as _alive, wait_until_dead

from cogcli.contract.invoke import invoke_tool
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.session import Session
from cogcli.settings.load import load_settings
from workspace_tools import workspace_tools
from workspace_tools.sandbox import bwrap
from workspace_tools.shell import jobs as jobs_module

SANDBOX = "on" if bwrap.bwrap_executable() else "off"
needs_sandbox = pytest.mark.skipif(SANDBOX != "on", reason=f"needs bubblewrap: {bwrap.unusable_reason()}")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "index.html").write_text("hello from the dev server\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def _tools(repo: Path, sandbox: str = SANDBOX) -> dict[str, Any]:
    return {t.name: t for t in workspace_tools(repo, sandbox=sandbox, only=["run_command", "command_output", "kill_command"])}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _until(check: Any, timeout: float = 10) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value or time.monotonic() > deadline:
            return value
        await anyio.sleep(0.1)


PROBE = "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/index.html', timeout=5).read().decode())\""


@pytest.mark.anyio
@needs_sandbox
async def test_a_server_started_in_the_background_answers_a_later_sandboxed_command_and_nobody_else(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    tools = _tools(repo)
    port = _free_port()
    try:
        started = await invoke_tool(tools["run_command"], {"command": f"exec python3 -m http.server {port} --bind 127.0.0.1",
                                                           "background": True})
        assert started.details["job"] == "job_1" and started.details["running"] is True, started.result
        assert started.details["sandbox"] == "bwrap" and started.details["shared_network"] is True
        assert started.result.startswith("started job_1 in the background: running")
        assert started.presentation.label == "Start" and started.presentation.detail.endswith("· job_1")

        async def answered() -> Any:
            probe = await invoke_tool(tools["run_command"], {"command": PROBE.format(port=port)})
            return probe if "hello from the dev server" in probe.details["stdout"] else None

        probe = await _until(answered)
        assert probe is not None, "the later sandboxed command never reached the background server"
        assert probe.details["sandbox"] == "bwrap" and probe.details["network"] is False
        # the host (and so the rest of the machine) does not share that loopback
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        log = await invoke_tool(tools["command_output"], {"id": "job_1", "wait_s": 2})
        assert "GET /index.html" in log.details["output"] and log.details["running"] is True
        killed = await invoke_tool(tools["kill_command"], {"id": "job_1"})
        assert killed.details["running"] is False and killed.details["killed"] is True
        assert killed.result.startswith("job_1 killed after")
    finally:
        tools["run_command"].close()


@pytest.mark.anyio
@needs_sandbox
async def test_without_the_shared_network_a_second_sandbox_cannot_reach_the_server(tmp_path: Path) -> None:
    """What the shared network is for: two sandboxes of their own do not see each other's loopback."""
    repo = _repo(tmp_path)
    port = _free_port()
    server = subprocess.Popen([*bwrap.sandbox_prefix("on", repo), "python3", "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        probe = await invoke_tool(_tools(repo)["run_command"], {"command": PROBE.format(port=port)})
        assert "hello from the dev server" not in probe.details["stdout"] and probe.details["exit_code"] != 0
    finally:
        server.kill()
        server.wait()


@pytest.mark.anyio
async def test_output_is_read_in_pieces_until_the_command_ends(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    tools = _tools(repo)
    try:
        started = await invoke_tool(tools["run_command"], {"command": "echo one; sleep 1; echo two; sleep 1; echo three; exit 4",
                                                           "background": True})
        seen: list[str] = [started.details["output"]]  # what it printed in its first moment comes with the start
        last: Any = None
        for _ in range(20):
            last = await invoke_tool(tools["command_output"], {"id": "job_1", "wait_s": 1})
            seen.append(last.details["output"])
            if not last.details["running"]:
                break
        text = "".join(seen)
        assert text.split() == ["one", "two", "three"], seen  # each line once: a read takes only what is new
        assert last.details["exit_code"] == 4 and last.result.startswith("job_1 exited 4 after")
        again = await invoke_tool(tools["command_output"], {"id": "job_1"})
        assert again.details["output"] == "" and "(no new output)" in again.result
        done = await invoke_tool(tools["kill_command"], {"id": "job_1"})
        assert done.result.startswith("job_1 had already ended: exited 4") and done.details["killed"] is False
    finally:
        tools["run_command"].close()


@pytest.mark.anyio
async def test_a_chatty_command_stays_bounded_in_memory_and_in_what_the_model_reads(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    tools = _tools(repo)
    try:
        await invoke_tool(tools["run_command"], {"command": "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END",
                                                 "background": True})
        job = jobs_module.jobs_of(tools.values()).get("job_1")  # waited for without reading: one read at the end
        await _until(lambda: anyio.to_thread.run_sync(lambda: not job.running))
        out = await _ended(tools)
        assert out.details["bytes_total"] == 5_000_005 and out.details["output"].endswith("END\n")
        assert len(out.details["output"]) <= jobs_module.READ_LIMIT and out.details["dropped"] > 0
        assert "earlier bytes not shown" in out.result
    finally:
        tools["run_command"].close()


async def _ended(tools: dict[str, Any]) -> Any:
    out = await invoke_tool(tools["command_output"], {"id": "job_1", "wait_s": 1})
    return out if not out.details["running"] else None


def test_the_job_buffer_keeps_only_its_newest_bytes() -> None:
    jobs = jobs_module.Jobs()
    try:
        job = jobs.start("x", [sys.executable, "-c", "import sys; sys.stdout.write('a' * 600000 + 'Z')"], cwd=Path.cwd(),
                         env=dict(os.environ), sandboxed=False)
        job.process.wait()
        deadline = time.monotonic() + 5
        while job.total < 600001 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert job.total == 600001 and len(job._buffer) == jobs_module.BUFFER and job._buffer.endswith(b"Z")
    finally:
        jobs.close()


@pytest.mark.anyio
async def test_kill_ends_the_command_and_everything_it_started(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    tools = _tools(repo, sandbox="off")  # off: the PIDs are the host's, so the test can watch them
    try:
        await invoke_tool(tools["run_command"], {"command": "sleep 300 & echo $! > child.pid; sleep 300", "background": True})
        pid = int((await _until(lambda: _read(repo / "child.pid"))) or 0)
        assert pid and _alive(pid)
        killed = await invoke_tool(tools["kill_command"], {"id": "job_1"})
        assert killed.details["killed"] is True
        assert wait_until_dead([pid]) == []
    finally:
        tools["run_command"].close()


async def _read(path: Path) -> str | None:
    text = path.read_text().strip() if path.exists() else ""
    return text or None


@pytest.mark.anyio
async def test_unknown_ids_and_too_many_jobs_get_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    tools = _tools(repo, sandbox="off")
    monkeypatch.setattr(jobs_module, "MAX_RUNNING", 1)
    try:
        missing = await invoke_tool(tools["command_output"], {"id": "job_9"})
        assert missing.error_code == "INVALID_ARGUMENTS" and "no background command 'job_9'" in missing.error
        await invoke_tool(tools["run_command"], {"command": "sleep 30", "background": True})
        second = await invoke_tool(tools["run_command"], {"command": "sleep 30", "background": True})
        assert not second.ok and "1 background commands are running already (job_1)" in second.error
        assert "kill_command" in second.error
    finally:
        tools["run_command"].close()


def _session(repo: Path, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch) -> Session:
    import cogcli.session.session as session_module

    monkeypatch.setattr(session_module, "make_model", lambda settings, record=None: model)
    return Session.open(dataclasses.replace(load_settings(repo), model="scripted:test", sandbox="off"))


@pytest.mark.anyio
async def test_a_closing_session_kills_its_background_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    model = ScriptedModel([
        Turn(calls=[Call("c1", "run_command", {"command": "echo $$ > job.pid; exec sleep 300", "background": True})]),
        Turn(text="started"),
    ])
    session = _session(repo, model, monkeypatch)

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        return {a.tool_call_id: True for a in approvals}

    async with session:
        result = await session.run("start a sleeper", approve=approve)
        assert result.status == "completed"
        pid = int((await _until(lambda: _read(repo / "job.pid"))) or 0)
        assert pid and _alive(pid)
    assert wait_until_dead([pid]) == [], "the session closed and its background command still runs"


def test_a_process_that_exits_without_closing_leaves_nothing_running(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    script = (
        "import sys, anyio; from workspace_tools import workspace_tools; from cogcli.contract.invoke import invoke_tool\n"
        "tools = {t.name: t for t in workspace_tools(sys.argv[1], sandbox='off', only=['run_command'])}\n"
        "r = anyio.run(invoke_tool, tools['run_command'], {'command': 'echo $$ > job.pid; exec sleep 300', 'background': True})\n"
        "print(r.details['job'])\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(repo)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "job_1", done.stderr
    pid = int((repo / "job.pid").read_text())
    assert wait_until_dead([pid]) == []
