"""Background commands the person keeps past the session's end (issue 50, part 2's leftover).

Real cog, real bwrap: ``cog edit --keep-jobs`` whose (replayed) model starts a loopback HTTP server in
the background; cog exits, names the job (pid, command, log), the server still answers (inside the
session's loopback, entered with nsenter), ``cog jobs`` lists it and ``cog jobs kill PID`` ends it.
Without the keep, the same run leaves nothing running. Chat's ``/jobs keep ID`` keeps one job of a
session and the others die; the keeper ends its job when cog is SIGKILLed (nothing kept).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cog
from run_tests_helpers import alive, wait_until_dead

from cogcli.contract.invoke import invoke_tool
from cogcli.session.background import jobs_reply
from workspace_tools.sandbox import bwrap
from workspace_tools.shell import kept

needs_sandbox = pytest.mark.skipif(not bwrap.bwrap_executable() or not shutil.which("nsenter"),
                                   reason=f"needs bubblewrap and nsenter: {bwrap.unusable_reason()}")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "index.html").write_text("hello from the kept server\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cassette(tmp_path: Path, command: str) -> Path:
    path = tmp_path / "serve.jsonl"
    lines = [
        {"type": "cassette", "schemaVersion": 1, "model": "openai:gpt-4o", "createdAt": "2026-12-06T00:00:00Z"},
        {"type": "turn", "text": "Starting the dev server.", "toolCalls": [
            {"id": "call_1", "name": "run_command", "arguments": {"command": command, "background": True}}],
         "usage": {"inputTokens": 10, "outputTokens": 5}, "stopReason": "tool_calls"},
        {"type": "turn", "text": "The server runs.", "toolCalls": [], "usage": {"inputTokens": 20, "outputTokens": 5}, "stopReason": "stop"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _fetch_inside(net_pid: int, port: int) -> str:
    """GET / from inside the kept job's network (the session's own loopback), as `cog jobs` says."""
    probe = f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/index.html', timeout=5).read().decode())"
    done = subprocess.run(["nsenter", f"--user=/proc/{net_pid}/ns/user", f"--net=/proc/{net_pid}/ns/net", "--preserve-credentials",
                           sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=30, check=False)
    return done.stdout + done.stderr


@pytest.mark.slow
@needs_sandbox
def test_a_kept_server_outlives_cog_edit_answers_afterwards_and_cog_jobs_kills_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state), "COG_SANDBOX": "on"}
    port = _free_port()
    cassette = _cassette(tmp_path, f"exec python3 -m http.server {port} --bind 127.0.0.1")
    done = run_cog(["edit", "--keep-jobs", "--model", f"replay:{cassette}", "start the dev server"], cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    said = re.search(r"kept job_1 running after the session \(pid (\d+)\): exec python3 -m http\.server .* its output goes to (\S+);",
                     done.stderr)
    assert said, done.stderr
    pid, log = int(said.group(1)), Path(said.group(2))
    assert "beyond cog undo" in done.stderr and "cog jobs kill " + str(pid) in done.stderr
    try:
        assert alive(pid), "cog exited and its kept job died with it"
        assert log.parent == state / "cog" / "jobs" and oct(log.stat().st_mode & 0o777) == "0o600"
        [record] = [r for r in _kept(env) if r.pid == pid]
        assert record.net_pid is not None and record.running
        answer = _until(lambda: "hello from the kept server" in _fetch_inside(record.net_pid, port))
        assert answer, _fetch_inside(record.net_pid, port)
        # the host (the rest of the machine) still does not share that loopback
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        assert _until(lambda: "GET /index.html" in log.read_text()), "the kept job's output never reached its log"
        listed = run_cog(["jobs"], cwd=repo, env=env)
        assert f"{pid}  running  exec python3 -m http.server {port}" in listed.stdout, listed.stdout
        assert f"log {log}" in listed.stdout and f"--net=/proc/{record.net_pid}/ns/net" in listed.stdout
        killed = run_cog(["jobs", "kill", str(pid)], cwd=repo, env=env)
        assert killed.returncode == 0 and f"killed {pid}" in killed.stdout, killed.stderr
        assert wait_until_dead([pid, record.net_pid]) == []
        assert "No kept background commands" in run_cog(["jobs"], cwd=repo, env=env).stdout
        again = run_cog(["jobs", "kill", str(pid)], cwd=repo, env=env)
        assert again.returncode == 2 and f"no kept job '{pid}'" in again.stderr
    finally:
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)


@pytest.mark.slow
@needs_sandbox
def test_without_keep_jobs_the_same_run_leaves_nothing_running(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "COG_SANDBOX": "on"}
    cassette = _cassette(tmp_path, "sleep 300 & exec sleep 301")
    done = run_cog(["edit", "--model", f"replay:{cassette}", "start it"], cwd=repo, env=env)
    assert done.returncode == 0 and "kept job" not in done.stderr, done.stderr
    assert _kept(env) == []
    # nothing of the session's is left: no keeper and no sandbox still holds the repository as its folder
    assert _until(lambda: not _processes_in(repo)), _processes_in(repo)


def _processes_in(folder: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd") == str(folder) and alive(int(entry.name)):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _kept(env: dict[str, str]) -> list[kept.KeptJob]:
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]
    try:
        return kept.kept_jobs()
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME")
        else:
            os.environ["XDG_STATE_HOME"] = saved


def _until(check: Any, timeout: float = 15) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


class _Session:
    """What jobs_reply reads of a session: its tools."""

    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools

    def run_tools(self) -> list[Any]:
        return self.tools


@pytest.mark.anyio
async def test_jobs_keep_keeps_one_job_of_a_chat_session_and_the_others_die(tmp_path: Path) -> None:
    from workspace_tools import workspace_tools

    repo = _repo(tmp_path)
    tools = workspace_tools(repo, sandbox="off", only=["run_command", "command_output", "kill_command"])
    by_name = {t.name: t for t in tools}
    session = _Session(tools)
    run = by_name["run_command"]
    try:
        await invoke_tool(run, {"command": "echo $$ > kept.pid; exec sleep 300", "background": True})
        await invoke_tool(run, {"command": "echo $$ > other.pid; exec sleep 300", "background": True})
        kept_pid, other_pid = (int(_until(lambda n=n: (repo / n).exists() and (repo / n).read_text().strip())) for n in ("kept.pid", "other.pid"))
        reply = jobs_reply(session, "keep job_1")
        assert reply.startswith("job_1 kept (pid ") and "cog jobs kill" in reply and "beyond undo" in reply, reply
        assert "running, kept" in jobs_reply(session, "") and "/jobs keep ID" in jobs_reply(session, "")
        assert "has ended" in jobs_reply(session, "keep job_9") or "no background command 'job_9'" in jobs_reply(session, "keep job_9")
        assert "keep ID keeps one" in jobs_reply(session, "keep")
    finally:
        run.close()
    try:
        assert wait_until_dead([other_pid]) == [], "a job not kept outlived the session"
        assert alive(kept_pid), "the kept job died with the session"
        [record] = kept.kept_jobs()
        assert record.job == "job_1" and record.command == "echo $$ > kept.pid; exec sleep 300" and record.net_pid is None
        kept.kill_kept(record.id)
        assert wait_until_dead([kept_pid]) == []
        assert kept.kept_jobs() == []
    finally:
        if alive(kept_pid):
            os.kill(kept_pid, signal.SIGKILL)


def test_an_ended_job_cannot_be_kept_and_sigkilled_cog_takes_its_jobs_along(tmp_path: Path) -> None:
    """The keeper's lifeline: cog killed outright (no atexit, no close) still ends every job not kept."""
    repo = _repo(tmp_path)
    script = (
        "import os, sys, anyio; from workspace_tools import workspace_tools; from cogcli.contract.invoke import invoke_tool\n"
        "tools = {t.name: t for t in workspace_tools(sys.argv[1], sandbox='off', only=['run_command'])}\n"
        "anyio.run(invoke_tool, tools['run_command'], {'command': 'echo $$ > job.pid; exec sleep 300', 'background': True})\n"
        "r = anyio.run(invoke_tool, tools['run_command'], {'command': 'true', 'background': True})\n"
        "import time; time.sleep(0.5)\n"
        "from workspace_tools.shell.jobs import jobs_of\n"
        "try:\n    jobs_of(tools.values()).get('job_2').keep()\nexcept Exception as exc:\n    print(exc)\n"
        "sys.stdout.flush(); os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(repo)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == -9 and "job_2 has ended; only a running background command can be kept" in done.stdout, done
    pid = int((repo / "job.pid").read_text())
    assert wait_until_dead([pid]) == [], "cog was killed and its background command still runs"


def test_keep_jobs_is_the_persons_never_the_workspaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.settings.load import load_settings

    repo = _repo(tmp_path)
    (repo / "cog.toml").write_text("keep_jobs = true\n")
    assert load_settings(repo).keep_jobs is False
    monkeypatch.setenv("COG_KEEP_JOBS", "1")
    assert load_settings(repo).keep_jobs is True


@needs_sandbox
def test_a_sandboxed_job_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    """bwrap's --die-with-parent fires when the *thread* that started it ends (an anyio worker idles
    out after 10 s): the keeper, not a thread of cog, is the sandbox's parent, so the job runs on."""
    import threading

    from workspace_tools.shell.jobs import Jobs

    repo = _repo(tmp_path)
    jobs = Jobs(workspace=repo)
    started: list[Any] = []
    argv = [*bwrap.sandbox_prefix("on", repo), "bash", "-c", "exec sleep 300"]
    thread = threading.Thread(target=lambda: started.append(jobs.start("sleep", argv, cwd=repo, env=dict(os.environ), sandboxed=True)))
    thread.start()
    thread.join()
    try:
        time.sleep(1.0)
        assert started[0].running, f"the job died with its starting thread (exit code {started[0].exit_code})"
    finally:
        jobs.close()
    assert not started[0].running
