"""The attacker's bench: real git repositories, real bwrap, the real ``cog`` command, run as root
and as an unprivileged user.

CI runs as root, so for the ``user`` runs the suite creates a system user (``cogsec``, removed
again at the end) and starts every command as that user with ``setpriv`` (no capabilities, no
supplementary groups). Its python must be one that user can execute: cog's own when reachable,
else the system's of the same version with cog's packages on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from workspace_tools.sandbox import bwrap

ROOT = Path(__file__).resolve().parents[2]
#: one user per xdist worker, so one worker removing its user never pulls it from under another
USER = "cogsec" + os.environ.get("PYTEST_XDIST_WORKER", "").replace("gw", "")

needs_bwrap = pytest.mark.skipif(bwrap.bwrap_executable() is None, reason=f"bubblewrap is not usable here: {bwrap.unusable_reason()}")

IDENTITY = {"user.name": "attacker", "user.email": "attacker@cog.invalid", "commit.gpgsign": "false", "init.defaultBranch": "main"}


@dataclass
class Runner:
    """Runs commands as one user: root, or the unprivileged ``cogsec``."""

    name: str
    uid: int
    gid: int
    python: str
    pythonpath: str
    base: Path

    def prefix(self) -> list[str]:
        if self.uid == os.geteuid():
            return []
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--"]

    def scratch(self, name: str) -> Path:
        path = self.base / f"{name}-{uuid.uuid4().hex[:8]}"
        path.mkdir(mode=0o755)
        self.own(path)
        return path

    def own(self, path: Path) -> None:
        if self.uid != os.geteuid():
            for folder, dirs, files in os.walk(path):
                for entry in (folder, *(os.path.join(folder, n) for n in dirs + files)):
                    os.lchown(entry, self.uid, self.gid)

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        home = self.base / "home"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": self.pythonpath,
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        env.update(extra or {})
        return env

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix(), *argv], cwd=cwd, env=self.env(env), capture_output=True, text=True,
                              timeout=timeout, input=input, stdin=None if input is not None else subprocess.DEVNULL)

    def cog_argv(self, args: Sequence[str]) -> list[str]:
        return [self.python, "-c", "from cogcli.cli import main; main()", *args]

    def cog(self, args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return self.run(self.cog_argv(args), cwd, env, timeout)

    def popen_cog(self, args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.prefix(), *self.cog_argv(args)], cwd=cwd, env=self.env(env), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

    def git(self, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """Plain git, as a person (or the attacker's demonstration) runs it: no protection."""
        return self.run(["git", *args], repo)

    def make_repo(self, files: Mapping[str, str], *, name: str = "repo") -> Path:
        repo = self.scratch(name)
        for rel, text in files.items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if rel.endswith(".sh"):
                path.chmod(0o755)
        self.own(repo)
        assert self.git(repo, "init", "-q").returncode == 0
        for key, value in IDENTITY.items():
            self.git(repo, "config", key, value)
        self.git(repo, "add", "-A")
        done = self.git(repo, "commit", "-q", "-m", "start")
        assert done.returncode == 0, done.stderr
        return repo


def _user_python(uid: int, gid: int, pythonpath: str) -> str | None:
    """A python the user can run with cog's packages importable."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, shutil.which(version) or "", f"/usr/bin/{version}", "/usr/bin/python3"):
        if not candidate or not os.path.exists(candidate):
            continue
        probe = subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", candidate, "-c",
             f"import sys; assert sys.version_info[:2] == {tuple(sys.version_info[:2])}; import cogcli, pydantic, typer"],
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": pythonpath, "HOME": "/"},
            capture_output=True, cwd="/", timeout=60,
        )
        if probe.returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="session")
def security_base() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="cog-security-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def unprivileged(security_base: Path) -> Iterator[tuple[int, int] | None]:
    """(uid, gid) of an unprivileged user (created when we are root), or None when there is none."""
    if os.geteuid() != 0:
        yield os.getuid(), os.getgid()
        return
    if shutil.which("setpriv") is None or shutil.which("useradd") is None:
        yield None
        return
    created = False
    try:
        import pwd

        entry = pwd.getpwnam(USER)
    except KeyError:
        done = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                              capture_output=True, text=True)
        if done.returncode != 0:
            yield None
            return
        created = True
        import pwd

        entry = pwd.getpwnam(USER)
    yield entry.pw_uid, entry.pw_gid
    if created:
        subprocess.run(["userdel", USER], capture_output=True)


@pytest.fixture(params=["root", "user"])
def runner(request: pytest.FixtureRequest, security_base: Path, unprivileged: tuple[int, int] | None) -> Runner:
    packages = os.pathsep.join([str(ROOT), *site.getsitepackages()])
    if request.param == "root":
        if os.geteuid() != 0:
            pytest.skip("the root runs need root (CI runs as root)")
        uid, gid, python = 0, 0, sys.executable
    else:
        if unprivileged is None:
            pytest.skip("no unprivileged user could be made here (needs useradd and setpriv)")
        uid, gid = unprivileged
        found = _user_python(uid, gid, packages) if uid != os.geteuid() else sys.executable
        if found is None:
            pytest.skip("no python the unprivileged user can run with cog's packages")
        python = found
    base = security_base / request.param
    if not base.exists():
        base.mkdir(mode=0o755)
        (base / "home").mkdir(mode=0o755)
        if uid != os.geteuid():
            for p in (base, base / "home"):
                os.chown(p, uid, gid)
    return Runner(request.param, uid, gid, python, packages, base)


def wait_for(condition, within: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``condition()`` became true within ``within`` seconds (polled, not a timing)."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def grows(path: Path, over: float = 1.0) -> bool:
    """Whether the file at ``path`` is still being written to: it grows within ``over`` seconds."""
    before = path.stat().st_size if path.exists() else -1
    return wait_for(lambda: (path.stat().st_size if path.exists() else -1) > before, over)


def processes_in(folder: Path) -> list[int]:
    """Live processes whose working directory is in ``folder``."""
    target = str(folder.resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd == target or cwd.startswith(target + "/"):
                try:
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if state not in ("Z", "X"):
                    found.append(int(entry.name))
    return found


def kill_everything_in(folder: Path) -> None:
    """Clean up what an attack left running (processes whose cwd is in ``folder``), and wait until it is gone."""
    for pid in processes_in(folder):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    wait_for(lambda: processes_in(folder) == [], 10)
