"""A test (written by a hostile model or shipped in a cloned repository) tries to get out of the
sandbox. Each attack runs twice through the real ``cog tool run_tests``: with ``--sandbox off`` it
works (so the check below can see an escape), with the sandbox it fails. As root and as an
unprivileged user."""

from __future__ import annotations

import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import Runner, grows, kill_everything_in, needs_bwrap, wait_for

pytestmark = needs_bwrap


@dataclass
class Bench:
    runner: Runner
    repo: Path
    outside: Path
    sockets: list[socket.socket]

    def run_tests(self, command: str, sandbox: str, *extra: str) -> dict:
        out = self.runner.cog(["tool", "run_tests", "--json", "--sandbox", sandbox, "--test-command", command, *extra], self.repo)
        assert out.returncode in (0, 1), out.stderr
        result = [json.loads(line) for line in out.stdout.splitlines() if line.strip()][-1]
        assert result["type"] == "tool-result", result
        assert result["details"]["sandbox"] == ("bwrap" if sandbox == "on" else "none"), result
        return result

    def listen_unix(self, path: Path) -> socket.socket:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen()
        server.setblocking(False)
        os.chmod(path, 0o777)  # any user may connect: only the sandbox should stand in the way
        self.sockets.append(server)
        return server


def accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@pytest.fixture
def bench(runner: Runner) -> Iterator[Bench]:
    repo = runner.make_repo({"README.md": "a repository from a stranger\n"})
    bench = Bench(runner, repo, runner.scratch("outside"), [])
    yield bench
    kill_everything_in(repo)
    for server in bench.sockets:
        server.close()


# (name, the test's shell command, how the host tells the attack worked)
Attack = tuple[str, Callable[[Bench], str], Callable[[Bench], bool]]

ATTACKS: list[Attack] = [
    (
        "remount the read-only root writable (root keeps capabilities)",
        lambda b: f"mount -o remount,bind,rw {b.outside} 2>/dev/null; echo pwned > {b.outside}/remount.txt",
        lambda b: (b.outside / "remount.txt").exists(),
    ),
    (
        "write the host through /proc/PID/root",
        lambda b: f"for p in $PPID 1; do echo pwned > /proc/$p/root{b.outside}/proc.txt; done 2>/dev/null; true",
        lambda b: (b.outside / "proc.txt").exists(),
    ),
    (
        "see the host's processes",
        lambda b: "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' > cmdlines.txt",
        lambda b: "cogcli.cli" in (b.repo / "cmdlines.txt").read_text(),
    ),
    (
        "plant core.fsmonitor in .git/config",
        lambda b: "printf '#!/bin/sh\\ntouch PWNED\\n' > x.sh; chmod +x x.sh; git config core.fsmonitor ./x.sh",
        lambda b: "fsmonitor" in (b.repo / ".git" / "config").read_text(),
    ),
    (
        "plant a pre-commit hook",
        lambda b: "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
        lambda b: (b.repo / ".git" / "hooks" / "pre-commit").exists(),
    ),
    (
        "plant a thread store in .cog/",
        lambda b: "mkdir -p .cog && echo planted > .cog/threads.db",
        lambda b: (b.repo / ".cog" / "threads.db").exists(),
    ),
    (
        "read cog's own state in .cog/ (a journal's bytes, the thread store)",
        lambda b: _plant_cog_state(b) + "cat .cog/journal/msg_h44/000001.after > stolen.txt",
        lambda b: (b.repo / "stolen.txt").is_file() and "COG-STATE-MARK" in (b.repo / "stolen.txt").read_text(),
    ),
    (
        "write the real home",
        lambda b: 'echo pwned > "$HOME/pwned.txt"',
        lambda b: (b.runner.base / "home" / "pwned.txt").exists(),
    ),
    (
        "connect to a unix socket file in the workspace",
        lambda b: _connect_script(b, b.repo / "host.sock"),
        lambda b: accepted(b.sockets[-1]),
    ),
    (
        "connect to a unix socket file under /run",
        lambda b: _connect_script(b, Path("/run") / f"cog-sec-{uuid.uuid4().hex[:8]}.sock"),
        lambda b: accepted(b.sockets[-1]),
    ),
    (
        "connect to a unix socket file under /var/tmp",
        lambda b: _connect_script(b, Path("/var/tmp") / f"cog-sec-{uuid.uuid4().hex[:8]}.sock"),
        lambda b: accepted(b.sockets[-1]),
    ),
    (
        "connect to a TCP server on the host's loopback",
        lambda b: _tcp_script(b),
        lambda b: accepted(b.sockets[-1]),
    ),
]


def _plant_cog_state(bench: Bench) -> str:
    """What an earlier run left in .cog/ (made here, by the person's cog): the command reads it."""
    folder = bench.repo / ".cog" / "journal" / "msg_h44"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "000001.after").write_text("COG-STATE-MARK: the bytes of a file an earlier run wrote\n")
    for p in (bench.repo / ".cog", folder.parent, folder):
        p.chmod(0o755)  # readable by the unprivileged user too: only the sandbox should stand in the way
    return ""


def _connect_script(bench: Bench, path: Path) -> str:
    bench.listen_unix(path)
    return f"python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); print('connected')\""


def _tcp_script(bench: Bench) -> str:
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    bench.sockets.append(server)
    port = server.getsockname()[1]
    return f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\""


def _cleanup_sockets(bench: Bench) -> None:
    for server in bench.sockets:
        name = server.getsockname()
        server.close()
        if isinstance(name, str) and name:
            Path(name).unlink(missing_ok=True)
    bench.sockets.clear()


def _reset(bench: Bench) -> None:
    git_dir = bench.repo / ".git"
    (git_dir / "hooks" / "pre-commit").unlink(missing_ok=True)
    bench.runner.git(bench.repo, "config", "--unset", "core.fsmonitor")
    shutil.rmtree(bench.repo / ".cog", ignore_errors=True)
    for p in (*bench.outside.iterdir(), bench.runner.base / "home" / "pwned.txt", bench.repo / "cmdlines.txt", bench.repo / "stolen.txt"):
        if p.is_file():
            p.unlink()


@pytest.mark.parametrize("attack", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_the_attack_works_without_the_sandbox_and_fails_inside_it(bench: Bench, attack: Attack) -> None:
    _name, script, escaped = attack
    try:
        bench.run_tests(script(bench), "off")
        assert escaped(bench), "the attack did not work even without the sandbox: this test would prove nothing"
    finally:
        _cleanup_sockets(bench)
        _reset(bench)

    try:
        bench.run_tests(script(bench), "on")
        assert not escaped(bench), "the attack got out of the sandbox"
    finally:
        _cleanup_sockets(bench)
        _reset(bench)


def test_root_in_the_sandbox_has_no_capabilities_and_no_host_pids(bench: Bench) -> None:
    result = bench.run_tests("grep CapEff /proc/self/status; ls /proc | grep -c '^[0-9]'", "on")
    tail = result["details"]["output_tail"]
    assert "CapEff:\t0000000000000000" in tail
    count = int(tail.split("\n")[1].strip())
    assert count < 10  # the sandbox's own few processes, not the host's


DAEMON = (
    "python3 - <<'EOF'\n"
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        while True:\n"
    "            with open('heartbeat.txt', 'a') as f: f.write('.')\n"
    "            time.sleep(0.05)\n"
    "    os._exit(0)\n"
    "time.sleep(0.5)\n"
    "EOF\n"
)


def test_a_double_forked_daemon_dies_with_the_run(bench: Bench) -> None:
    heartbeat = bench.repo / "heartbeat.txt"
    bench.run_tests(DAEMON, "off")
    assert grows(heartbeat), "without the sandbox the daemon should outlive the run"
    kill_everything_in(bench.repo)
    heartbeat.unlink()

    bench.run_tests(DAEMON, "on")
    assert heartbeat.exists()  # it ran
    assert not grows(heartbeat), "the daemon outlived the sandboxed run"


def test_kill_9_of_cog_takes_the_tests_children_with_it(bench: Bench) -> None:
    heartbeat = bench.repo / "heartbeat.txt"
    loop = "python3 -c \"import time\nwhile True:\n    open('heartbeat.txt','a').write('.'); time.sleep(0.05)\""
    for sandbox, survives in (("off", True), ("on", False)):
        heartbeat.unlink(missing_ok=True)
        proc = bench.runner.popen_cog(["tool", "run_tests", "--sandbox", sandbox, "--test-command", loop], bench.repo)
        try:
            assert wait_for(heartbeat.exists, 30), proc.stderr.read() if proc.poll() is not None else "no heartbeat"
            os.kill(proc.pid, 9)
            proc.wait()
            assert grows(heartbeat, 1.5) is survives, f"--sandbox {sandbox}: children {'died' if not survives else 'survived'} unexpectedly"
        finally:
            proc.kill()
            proc.communicate()
            kill_everything_in(bench.repo)
