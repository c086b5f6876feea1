"""Hooks run on the host: they must run exactly what was approved, and nothing of the workspace.

- A workspace hook approved with ``cog trust`` ran the *current* workspace files at each event: the
  model's ``write_file`` (or a sandboxed test) rewrote a module the hook imports, or a shell file it
  sources, and the next PreToolUse ran the new code on the host. Now it runs from a private copy of
  the approved bytes (``cogcli/hooks/snapshot.py``), and sourced files are part of the approval.
- The person's own hooks ran the workspace's code: with the project's ``.venv/bin`` first on
  ``PATH``, ``python3 ~/hook.py`` ran the venv's Python and a ``.pth`` planted in it;
  ``python3 -m black`` in the workspace root imported the model's ``black.py``. Now a hook's ``PATH``
  holds no workspace folder and Python gets ``PYTHONSAFEPATH=1`` (``cogcli/hooks/process.py``).

Each attack is shown working with the defence patched away (run as the runner's user through
``python -c``), and failing with it, as root and as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from .conftest import Runner
from .test_config_and_env_attacks import _cassette

pytestmark = pytest.mark.slow

READ = {"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}

#: cog with the copy patched away: a workspace hook runs in the workspace, as before the defence
WITHOUT_COPY = "import cogcli.hooks.snapshot as s\ns.snapshot = lambda root, command, files: root\nfrom cogcli.cli import main\nmain()\n"
#: cog with the environment of a hook as it was before the defence
WITHOUT_CLEAN_ENV = (
    "import os, cogcli.hooks.engine as e\nfrom workspace_tools.sandbox.environment import is_credential_name as c\n"
    "def old(root, pass_env=(), environ=None, *, folder=None):\n"
    "    env = {k: v for k, v in os.environ.items() if not c(k)}\n"
    "    env['COG_PROJECT_DIR'] = env['CLAUDE_PROJECT_DIR'] = str(folder or root)\n    return env\n"
    "e.hook_environment = old\nfrom cogcli.cli import main\nmain()\n"
)


def patched_cog(runner: Runner, code: str, args: list[str], cwd: Path, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return runner.run([runner.python, "-c", code, *args], cwd, env, timeout=180)


def hook_events(stdout: str) -> list[dict]:
    return [e for e in (json.loads(line) for line in stdout.splitlines() if line.startswith("{")) if e.get("type") == "hook"]


def test_an_approved_workspace_hook_runs_the_approved_bytes_not_what_the_run_wrote(runner: Runner) -> None:
    repo = runner.make_repo({
        "README.md": "hello\n",
        "hooks/guard.py": "import helper\n",
        "hooks/helper.py": "OK = 1\n",
        "hooks/guard.sh": ". hooks/lib.sh\n",
        "hooks/lib.sh": "true\n",
        "cog.toml": '[[hooks.PreToolUse]]\ncommand = "python3 hooks/guard.py"\n\n[[hooks.PreToolUse]]\ncommand = "sh hooks/guard.sh"\n',
    })
    listed = runner.cog(["trust", "--approve"], repo)
    assert listed.returncode == 0, listed.stderr
    assert "hooks/lib.sh" in listed.stdout and "hooks/helper.py" in listed.stdout  # both part of the approval
    evil_py = f"import pathlib\npathlib.Path({str(repo / 'PWNED-py')!r}).write_text('ran on the host')\n"
    evil_sh = f"touch {repo / 'PWNED-sh'}  # rewritten by the run\n"
    model = _cassette(runner.scratch("c") / "c.jsonl", [
        {"id": "w1", "name": "write_file", "arguments": {"path": "hooks/helper.py", "content": evil_py}},
        {"id": "w2", "name": "write_file", "arguments": {"path": "hooks/lib.sh", "content": evil_sh}},
        READ,
    ])
    args = ["edit", "--json", "--yes", "--model", model, "go"]

    # without the copy: the next PreToolUse runs what the run wrote, on the host
    attacked = patched_cog(runner, WITHOUT_COPY, args, repo)
    assert attacked.returncode == 0, attacked.stderr
    assert (repo / "PWNED-py").exists() and (repo / "PWNED-sh").exists()
    for marker in ("PWNED-py", "PWNED-sh"):
        (repo / marker).unlink()
    assert runner.git(repo, "checkout", "--", "hooks").returncode == 0
    shutil.rmtree(repo / "hooks" / "__pycache__", ignore_errors=True)

    # with it: the same run writes the same files, and every event runs the approved bytes
    defended = runner.cog(args, repo)
    assert defended.returncode == 0, defended.stderr
    assert (repo / "hooks" / "lib.sh").read_text() == evil_sh  # the attack happened
    assert not (repo / "PWNED-py").exists() and not (repo / "PWNED-sh").exists()
    ran = hook_events(defended.stdout)
    assert len(ran) == 6 and all(e["outcome"] == "ok" for e in ran), ran

    # the next run: the rewritten files are asked about again (refused off a terminal), not run
    again = runner.cog(args, repo)
    assert again.returncode == 2 and "hooks/helper.py" in again.stderr and "cog trust" in again.stderr
    assert not (repo / "PWNED-py").exists() and not (repo / "PWNED-sh").exists()


def plant_venv(runner: Runner, repo: Path) -> None:
    """What a sandboxed command can write: a project ``.venv`` whose Python runs a planted ``.pth``."""
    real = os.path.realpath(shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable)
    venv = repo / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").symlink_to(real)
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(real)}\ninclude-system-site-packages = false\n")
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    (site / "evil.pth").write_text(f"import pathlib; pathlib.Path({str(repo / 'PWNED-pth')!r}).write_text('ran')\n")
    (repo / "black.py").write_text(f"import pathlib\npathlib.Path({str(repo / 'PWNED-black')!r}).write_text('ran')\n")
    runner.own(repo)


def test_the_persons_own_hooks_run_no_workspace_code(runner: Runner) -> None:
    repo = runner.make_repo({"README.md": "hello\n"})
    plant_venv(runner, repo)
    config = runner.scratch("xdg")
    hooks = runner.scratch("cog-hooks")
    (hooks / "check.py").write_text(f"import pathlib\npathlib.Path({str(hooks / 'ran')!r}).write_text('yes')\n")
    (config / "cog").mkdir()
    (config / "cog" / "config.toml").write_text(
        f'[[hooks.PreToolUse]]\ncommand = "python3 {hooks / "check.py"}"\n\n[[hooks.PreToolUse]]\ncommand = "python3 -m black -q ."\n'
    )
    runner.own(config)
    runner.own(hooks)
    env = {"XDG_CONFIG_HOME": str(config), "PATH": f"{repo / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    model = _cassette(runner.scratch("c") / "c.jsonl", [READ])
    args = ["edit", "--json", "--yes", "--model", model, "go"]

    # the environment as it was: the activated .venv's Python runs the .pth, -m imports the model's black.py
    attacked = patched_cog(runner, WITHOUT_CLEAN_ENV, args, repo, env)
    assert attacked.returncode == 0, attacked.stderr
    assert (repo / "PWNED-pth").exists() and (repo / "PWNED-black").exists()
    for marker in ("PWNED-pth", "PWNED-black", ):
        (repo / marker).unlink()
    (hooks / "ran").unlink()

    defended = runner.cog(args, repo, env)
    assert defended.returncode == 0, defended.stderr
    assert (hooks / "ran").read_text() == "yes"  # the person's hook ran, with the host's python
    assert not (repo / "PWNED-pth").exists() and not (repo / "PWNED-black").exists()
