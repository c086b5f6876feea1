"""A repository whose ``.venv/pyvenv.cfg`` (or ``venv/``) says ``home = <HOME>/x`` or ``home = /tmp/x``.

cog used to read that line and show the folder above it in the sandbox: the person's home or the
whole host ``/tmp`` (with every unix socket in it, a tmux or ssh-agent socket: a full escape). The
sandbox now shows only what the interpreter resolved on the host reports as its base installation,
and never the home, /tmp or a folder above them. Each attack runs through the real ``cog tool
run_tests``: with ``--sandbox off`` the test reads the planted file in the host's home and connects
to the host's socket in /tmp; with the sandbox it does neither. As root and as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

import pytest

from workspace_tools.sandbox import python as pyenv, python_binds as pysandbox

from .conftest import Runner, kill_everything_in, needs_bwrap

PROBE = """\
import socket
out = []
try:
    out.append("secret=" + open({secret!r}).read().strip())
except OSError as exc:
    out.append("secret-refused=" + type(exc).__name__)
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect({sock!r})
    out.append("connected")
except OSError as exc:
    out.append("socket-refused=" + type(exc).__name__)
open("result.txt", "w").write("\\n".join(out) + "\\n")
"""


def _host_python() -> str:
    """A real interpreter on the host (what an attacker's ``.venv/bin/python`` links to)."""
    found = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable
    return os.path.realpath(found)


def _accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@needs_bwrap
@pytest.mark.parametrize("folder", [".venv", "venv"])
@pytest.mark.parametrize("home_line", ["HOME", "/tmp"])
def test_a_pyvenv_cfg_home_never_widens_the_sandbox(runner: Runner, folder: str, home_line: str) -> None:
    home = runner.base / "home"
    token = uuid.uuid4().hex
    secret = home / f"secret-{token[:8]}.txt"
    secret.write_text(token + "\n")
    secret.chmod(0o644)
    runner.own(secret)
    sock_path = Path("/tmp") / f"cog-sec-pyvenv-{token[:8]}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    server.listen()
    server.setblocking(False)
    os.chmod(sock_path, 0o777)  # any user may connect: only the sandbox should stand in the way
    cfg_home = f"{home}/x" if home_line == "HOME" else "/tmp/x"
    repo = runner.make_repo({
        f"{folder}/pyvenv.cfg": f"home = {cfg_home}\ninclude-system-site-packages = false\nversion = 3.11.0\n",
        "probe.py": PROBE.format(secret=str(secret), sock=str(sock_path)),
    })
    (repo / folder / "bin").mkdir()
    (repo / folder / "bin" / "python").symlink_to(_host_python())  # a working env, so it is the project's
    runner.own(repo)
    result = repo / "result.txt"
    try:
        outcomes = {}
        for mode in ("off", "on"):
            result.unlink(missing_ok=True)
            out = runner.cog(["tool", "run_tests", "--json", "--sandbox", mode, "--test-command", "python3 probe.py"], repo)
            assert out.returncode in (0, 1), out.stderr
            event = [json.loads(line) for line in out.stdout.splitlines() if line.strip()][-1]
            assert event["details"]["sandbox"] == ("bwrap" if mode == "on" else "none"), event
            assert result.exists(), (mode, out.stdout[-2000:], out.stderr[-2000:])
            outcomes[mode] = (result.read_text(), _accepted(server))
        # without the sandbox the attack works: the home's file is read, the host's socket answers
        assert f"secret={token}" in outcomes["off"][0] and "connected" in outcomes["off"][0], outcomes
        assert outcomes["off"][1] is True
        # in the sandbox neither is there, whatever the workspace's pyvenv.cfg says
        text, reached = outcomes["on"]
        assert token not in text and "secret-refused=" in text, text
        assert "connected" not in text and "socket-refused=" in text, text
        assert reached is False
    finally:
        kill_everything_in(repo)
        server.close()
        sock_path.unlink(missing_ok=True)
        secret.unlink(missing_ok=True)


# -- the guard every bind of the interpreter's installation passes ---------------------------------


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "host" / "home" / "someone"
    (home / ".pyenv" / "versions" / "3.11.7").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_the_bind_guard_refuses_home_tmp_run_and_every_folder_above_them(fake_home: Path) -> None:
    refused = [fake_home, fake_home.parent, fake_home.parent.parent, Path("/"), Path("/tmp"), Path("/run"),
               Path("/var/tmp"), Path("/dev/shm"), Path("/var"), Path("/dev"), fake_home / ".ssh", fake_home / ".config",
               fake_home / ".gnupg"]
    for sub in (".ssh", ".config", ".gnupg"):
        (fake_home / sub).mkdir()
    for path in refused:
        assert path.is_dir(), path  # a folder that exists: refused for what it is, not for being absent
        assert not pyenv.bind_allowed(path), path
    # the home lies under /tmp here: every folder between / and the home is refused too
    for parent in fake_home.parents:
        assert not pyenv.bind_allowed(parent), parent
    assert not pyenv.bind_allowed("relative/path")
    assert not pyenv.bind_allowed(str(fake_home) + "/../someone")  # resolved, it is the home
    link = fake_home / ".pyenv" / "versions" / "to-home"
    link.symlink_to(fake_home)
    assert not pyenv.bind_allowed(link)  # a link is judged by where it leads
    # a child that is an installation is fine, as are the system's folders
    assert pyenv.bind_allowed(fake_home / ".pyenv" / "versions" / "3.11.7")
    assert pyenv.bind_allowed("/usr")


def test_root_s_home_is_refused_when_home_is_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/root")
    if not Path("/root").is_dir():
        pytest.skip("no /root here")
    assert not pyenv.bind_allowed("/root")
    assert not pyenv.bind_allowed("/")


def test_a_hostile_pyvenv_cfg_puts_nothing_of_the_home_or_tmp_in_the_sandbox(tmp_path: Path, fake_home: Path) -> None:
    """The undefended primitive read ``home =`` and returned its parent; the defended one asks the
    host's interpreter and guards what it says."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for folder, line in ((".venv", f"{fake_home}/x"), ("venv", "/tmp/x")):
        (repo / folder / "bin").mkdir(parents=True)
        (repo / folder / "pyvenv.cfg").write_text(f"home = {line}\n")
        (repo / folder / "bin" / "python").symlink_to(_host_python())
    shown = pyenv.interpreter_homes(repo)
    for path in shown:
        assert pyenv.bind_allowed(path)
        assert path not in (fake_home, Path("/tmp"), Path("/")) and path not in fake_home.parents
    base = Path(os.path.realpath(pysandbox._base_prefix(_host_python(), 0) or "/nonexistent"))
    assert shown == ([base] if pyenv.bind_allowed(base) else []), (shown, base)


def test_an_interpreter_inside_the_workspace_is_never_run_on_the_host(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    marker = tmp_path / "ran-on-the-host"
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python.write_text(f"#!/bin/sh\ntouch {marker}\necho /\n")  # a copy (venv --copies), or an attacker's script
    python.chmod(0o755)
    project = pyenv.find_project_python(repo, repo)
    assert project.source == ".venv" and project.python == str(python)
    shown, notes = pyenv.sandbox_paths(project, repo)
    assert shown == []
    assert len(notes) == 1 and "inside the workspace" in notes[0] and "not run it on the host" in notes[0]
    assert not marker.exists()


@pytest.mark.parametrize("mode", [0o777, 0o755])
def test_an_interpreter_others_can_write_is_not_run_and_what_one_reports_is_guarded(
    tmp_path: Path, fake_home: Path, mode: int
) -> None:
    """The workspace's ``.venv/bin/python`` links to a file named ``python3`` outside any repository.
    In a folder anyone can write, it is not run (another user could have put it there); in the
    person's own folder it is, and what it reports (here: the home) is still refused."""
    host = tmp_path / "host-bin"
    host.mkdir()
    marker = tmp_path / "ran"
    fake = host / "python3"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\necho {fake_home}\n")
    fake.chmod(0o755)
    host.chmod(mode)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(fake)
    shown, notes = pyenv.sandbox_paths(pyenv.find_project_python(repo, repo), repo)
    if mode == 0o777:
        assert not marker.exists() and shown == [] and "not an interpreter installed on the host" in notes[0]
    else:
        assert marker.exists() and notes == []
        # it said "the home"; the folder above its bin/ (the other guess) holds the home: neither is shown
        assert shown == []
