"""Issue 35: `cog undo` trusted a record planted in `.cog/journal/` and deleted a file the run never
touched (a person's untracked `notes/plan.md`).

The attack: after a real run that edited `app.py`, a record is planted in that run's journal folder
— as a test run with `--sandbox off` (or any program in the repository) can write it — saying the
run created `notes/plan.md` with exactly the bytes it holds now. Undo walks that record back: it
deletes the person's file. The defence: every record cog writes is signed with the person's key in
`$XDG_STATE_HOME/cog/journal.key` (0600, outside the workspace); undo sets aside a record that does
not verify and never acts on it. Shown with the check switched off (the attack works) and on (it
fails), as root and as an unprivileged user.
"""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

from .conftest import Runner
from .test_host_files import cassette

PLAN = b"# my plan\nnothing cog made\n"

#: `cog undo` with the records' MAC check switched off: what undo did before the defence
UNDEFENDED = (
    "import workspace_tools.files.journal as j; j.verify = lambda *a: True; "
    "import sys; sys.argv = ['cog', *sys.argv[1:]]; from cogcli.cli import main; main()"
)


def _run_then_plant(runner: Runner, mac: str | None) -> tuple[Path, Path]:
    repo = runner.make_repo({"app.py": "x = 1\n"})
    plan = repo / "notes" / "plan.md"  # the person's untracked file: no run touches it
    plan.parent.mkdir()
    plan.write_bytes(PLAN)
    runner.own(plan.parent)
    model = cassette(runner, ("edit_file", {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"}))
    out = runner.cog(["edit", "--yes", "--sandbox", "off", "--model", model, "change x"], repo)
    assert out.returncode == 0, out.stderr
    assert (repo / "app.py").read_text() == "x = 2\n"
    (run_dir,) = [p for p in (repo / ".cog" / "journal").iterdir() if p.is_dir()]
    record = {"seq": 99, "path": "notes/plan.md", "exists": False, "mode": None, "after": hashlib.sha256(PLAN).hexdigest()}
    if mac is not None:
        record["mac"] = mac
    # written as the attacker: the user the run ran as, straight into the run's journal folder
    planted = runner.run([runner.python, "-c", f"import sys; open(sys.argv[1], 'w').write({json.dumps(json.dumps(record))})", str(run_dir / "000099.json")], repo)
    assert planted.returncode == 0, planted.stderr
    return repo, plan


def test_a_planted_journal_record_deletes_a_file_without_the_defence(runner: Runner) -> None:
    repo, plan = _run_then_plant(runner, mac=None)
    out = runner.run([runner.python, "-c", UNDEFENDED, "undo"], repo)
    assert out.returncode == 0, out.stderr
    assert not plan.exists(), "the attack needs undo to act on the planted record"
    assert (repo / "app.py").read_text() == "x = 1\n"


def test_undo_acts_only_on_records_cog_signed(runner: Runner) -> None:
    for mac in (None, "0" * 64):  # no MAC, and a made-up one
        repo, plan = _run_then_plant(runner, mac=mac)
        out = runner.cog(["undo", "--dry-run"], repo)
        assert out.returncode == 0 and "notes/plan.md" not in out.stdout + out.stderr.split("note:")[0], out.stderr
        out = runner.cog(["undo"], repo)
        assert out.returncode == 0, out.stderr
        assert plan.read_bytes() == PLAN, "undo deleted a file the run never touched"
        assert (repo / "app.py").read_text() == "x = 1\n"  # the run's own change is still undone
        assert "set aside 1 record" in out.stderr and "not acted on" in out.stderr
    key = Path(runner.env()["HOME"]) / ".local" / "state" / "cog" / "journal.key"
    info = key.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == runner.uid
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert repo not in key.parents
