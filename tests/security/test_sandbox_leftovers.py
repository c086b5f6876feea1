"""What the sandbox leaves behind on the host (issue 47), played through the real ``cog`` command as
root and as an unprivileged user:

1. a setuid file: ``cp /bin/sh ./rtsh && chmod 4755 ./rtsh`` in the sandbox (bwrap alone keeps the
   bit: root stays uid 0 in its user namespace) — cog strips it after run_command and run_tests,
   also in a folder its change scan skips (an environment, an ignored folder), and names it;
2. a planted virtualenv around tracked code (``src/pyvenv.cfg`` plus ``src/bin/python``) — the
   files a command changed and git_status still show ``src/app.py``;
3. a FIFO ``.gitignore`` — plain git waits on it; cog's steps end at once, the change still named.
"""

from __future__ import annotations

import json
import stat
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import Runner, needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.slow]

SETUID = "cp /bin/sh ./rtsh && chmod 4755 ./rtsh && mkdir -p .venv/bin build && cp /bin/sh .venv/bin/t && chmod 2755 .venv/bin/t " \
         "&& cp /bin/sh build/t && chmod 6755 build/t"
MADE = ("rtsh", ".venv/bin/t", "build/t")


def _result(out: subprocess.CompletedProcess[str]) -> dict:
    assert out.returncode in (0, 1), out.stderr
    result = [json.loads(line) for line in out.stdout.splitlines() if line.strip()][-1]
    assert result["type"] == "tool-result", result
    return result


def _tool(runner: Runner, repo: Path, *args: str) -> dict:
    return _result(runner.cog(["tool", *args, "--json"], repo, timeout=60))


def _privileged(repo: Path) -> list[str]:
    return [rel for rel in MADE if (repo / rel).exists() and (repo / rel).stat().st_mode & (stat.S_ISUID | stat.S_ISGID)]


def _reset(repo: Path) -> None:
    for rel in MADE:
        (repo / rel).unlink(missing_ok=True)


def test_a_setuid_file_made_in_the_sandbox_keeps_no_bit_on_the_host(runner: Runner) -> None:
    repo = runner.make_repo({"README.md": "x\n", ".gitignore": "build/\n"})
    # the attack through the sandbox alone, without cog's sweep: the bits reach the host
    bare = ("import subprocess, sys; from pathlib import Path; from workspace_tools.sandbox.bwrap import sandbox_prefix; "
            "sys.exit(subprocess.run([*sandbox_prefix('on', Path.cwd()), 'bash', '-c', sys.argv[1]]).returncode)")
    done = runner.run([runner.python, "-c", bare, SETUID], repo)
    assert done.returncode == 0, done.stderr
    assert _privileged(repo) == list(MADE), "the sandbox alone did not keep the bits: this test would prove nothing"
    assert (repo / "rtsh").stat().st_uid == runner.uid  # setuid to the user who ran it: root for root
    _reset(repo)

    result = _tool(runner, repo, "run_command", "--sandbox", "on", f"command={SETUID}")
    assert result["details"]["sandbox"] == "bwrap"
    assert all((repo / rel).exists() for rel in MADE) and _privileged(repo) == [], "a setuid file survived run_command"
    assert {r["path"] for r in result["details"]["privileges_removed"]} == set(MADE)
    assert "rtsh (setuid stripped)" in result["result"] and ".venv/bin/t (setgid stripped)" in result["result"]
    _reset(repo)

    result = _tool(runner, repo, "run_tests", "--sandbox", "on", "--test-command", SETUID)
    assert result["details"]["sandbox"] == "bwrap"
    assert all((repo / rel).exists() for rel in MADE) and _privileged(repo) == [], "a setuid file survived run_tests"
    assert {r["path"] for r in result["details"]["privileges_removed"]} == set(MADE)
    assert "build/t (setuid, setgid stripped)" in result["result"]


def test_a_planted_virtualenv_hides_no_change_to_tracked_files(runner: Runner) -> None:
    from workspace_tools.workspace.envdirs import EnvDirs

    repo = runner.make_repo({"src/app.py": "x = 1\n", "README.md": "x\n"})
    plant = "touch src/pyvenv.cfg && mkdir src/bin && ln -s /usr/bin/python3 src/bin/python && echo 'x = 2' > src/app.py"
    result = _tool(runner, repo, "run_command", "--sandbox", "on", f"command={plant}")
    assert "M src/app.py" in runner.git(repo, "status", "--porcelain").stdout  # what git says changed
    # without the tracked-files rule the folder passes for a virtualenv and src/app.py is left out
    assert EnvDirs(repo).excluded_file("src/app.py") == "src", "the plant does not look like a virtualenv: this proves nothing"
    assert {"path": "src/app.py", "change": "modified"} in result["details"]["changed_files"]
    status = _tool(runner, repo, "git_status")
    assert status.get("error") is None and "src/app.py" in status["result"] and "virtualenv" not in status["result"]
    assert "+x = 2" in _tool(runner, repo, "git_diff")["details"]["diff"]


def test_a_fifo_gitignore_stalls_no_step(runner: Runner) -> None:
    repo = runner.make_repo({"src/app.py": "x = 1\n", "README.md": "x\n"})
    started = time.monotonic()
    result = _tool(runner, repo, "run_command", "--sandbox", "on", "command=mkfifo src/.gitignore && echo 'x = 2' > src/app.py")
    assert stat.S_ISFIFO((repo / "src" / ".gitignore").lstat().st_mode)
    with pytest.raises(subprocess.TimeoutExpired):  # the attack: plain git waits on the pipe
        runner.run(["git", "status", "--porcelain"], repo, timeout=3)
    changed = {c["path"] for c in result["details"]["changed_files"]}
    assert "src/app.py" in changed and "src/.gitignore" in result["result"]
    status = _tool(runner, repo, "git_status")
    assert "src/.gitignore (a named pipe (FIFO))" in status["error"] and "rm 'src/.gitignore'" in status["error"]
    listed = _tool(runner, repo, "list_files")
    assert "src/app.py" in listed["details"]["files"]
    assert time.monotonic() - started < 25, "a step waited on the FIFO"
