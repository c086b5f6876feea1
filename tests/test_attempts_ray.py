"""`cog edit --attempts N --ray`: what a node gets (a bundle of HEAD plus the uncommitted changes),
what it hands back (a patch, events, a row), and how that becomes a local branch the winner is
applied from through the journal — without Ray (fast), and once end to end on a local Ray (slow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cli_helpers import REPLAY, run_cog
from conftest import GIT_ENV

from cogcli.cli.ray_option import ray_address
from cogcli.commands.ray_attempts.driver import merge_row, node_approval, ray_missing, take_patch
from cogcli.commands.ray_attempts.node import NodeAttempt, attempt_on_node
from cogcli.contract.errors import ConfigError
from cogcli.settings.options import SettingFlags
from cogcli.worktrees.apply import apply_winner
from cogcli.worktrees.attempts import make_places
from cogcli.worktrees.pick import AttemptRow
from cogcli.worktrees.ship import SNAPSHOT_MESSAGE, bundle, snapshot


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


def test_the_snapshot_is_the_work_tree_as_git_status_sees_it_and_touches_nothing(make_repo) -> None:  # type: ignore[no-untyped-def]
    calc = make_repo("calc")
    head = git(calc, "rev-parse", "HEAD").strip()
    assert snapshot(calc) == head  # nothing uncommitted: HEAD itself
    (calc / "calc" / "ops.py").write_text((calc / "calc" / "ops.py").read_text() + "\n# mine, unstaged\n")
    (calc / "staged.txt").write_text("staged\n")
    git(calc, "add", "staged.txt")
    (calc / "new dir").mkdir()
    (calc / "new dir" / "untracked.bin").write_bytes(b"\x00\x01 binary")
    (calc / ".git" / "info" / "exclude").write_text("secret.env\n")
    (calc / "secret.env").write_text("TOKEN=x\n")
    tracked = sorted(p for p in git(calc, "ls-files").split("\n") if p)
    git(calc, "rm", "-q", "--cached", tracked[0])  # a deletion staged (the file stays, untracked)
    status = git(calc, "status", "--porcelain")

    base = snapshot(calc)
    assert base != head and git(calc, "rev-parse", f"{base}^").strip() == head
    assert git(calc, "log", "-1", "--format=%s", base).strip() == SNAPSHOT_MESSAGE
    assert git(calc, "show", f"{base}:calc/ops.py").endswith("# mine, unstaged\n")
    assert git(calc, "show", f"{base}:staged.txt") == "staged\n"
    assert subprocess.run(["git", "-C", str(calc), "cat-file", "blob", f"{base}:new dir/untracked.bin"],
                          capture_output=True, check=True).stdout == b"\x00\x01 binary"
    files = git(calc, "ls-tree", "-r", "--name-only", base).split("\n")
    assert "secret.env" not in files  # ignored: never sent
    assert git(calc, "status", "--porcelain") == status  # the index and work tree as they were
    assert len(git(calc, "worktree", "list").splitlines()) == 1  # the scratch worktree is gone
    assert git(calc, "rev-parse", "HEAD").strip() == head

    data = bundle(calc, base)
    assert git(calc, "branch", "--list", "cog/ship-*") == ""  # the bundle's branch is deleted
    (calc.parent / "b.bundle").write_bytes(data)
    from cogcli.batch.checkout import clone

    assert clone(str(calc.parent / "b.bundle"), calc.parent / "clone", local=False, ref=base) == base  # as a node clones it
    assert (calc.parent / "clone" / "new dir" / "untracked.bin").read_bytes() == b"\x00\x01 binary"


def _job(base: str, attempt: int = 1, approval: str = "auto") -> NodeAttempt:
    return NodeAttempt(attempt=attempt, name=f"try-t-{attempt}", branch=f"cog/try-t-{attempt}", base=base, inside=".",
                       instruction="Fix add", flags=SettingFlags(model=REPLAY), approval=approval)


def test_a_node_runs_the_attempt_on_a_clone_of_the_bundle_and_its_patch_becomes_the_branch_applied_here(make_repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CI", "1")
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("COG_TEST_SECRET_TOKEN", raising=False)
    calc = make_repo("calc")
    (calc / "notes.txt").write_text("uncommitted, and in the attempt\n")
    base = snapshot(calc)

    got = attempt_on_node(_job(base), bundle(calc, base), {"COG_TEST_SECRET_TOKEN": "s3cret"})
    assert "COG_TEST_SECRET_TOKEN" not in os.environ  # set for the run only
    theirs = AttemptRow.model_validate(got["row"])
    assert (theirs.status, theirs.passed, theirs.failed, theirs.tests_error) == ("completed", 3, 0, None)  # the picking run, on the node
    assert theirs.tokens > 0 and theirs.commit is not None and not Path(theirs.path).exists()  # its checkout removed
    events = [json.loads(line) for line in got["events"]]
    assert events[0]["type"] == "start" and events[-1]["type"] == "finish"
    assert b"-    return a - b" in got["patch"] and b"+    return a + b" in got["patch"]
    assert b"notes.txt" not in got["patch"]  # the uncommitted file was the base, not the change

    place = make_places(calc, 1, base)[0]
    row = AttemptRow(attempt=1, name=place.name, branch=place.branch, path=str(place.path))
    merge_row(row, got["row"])
    assert (row.name, row.path, row.commit, row.passed, row.tokens) == (place.name, str(place.path), None, 3, theirs.tokens)
    take_patch(row, place, base, got["patch"], "Fix add", "node-a")
    assert row.commit is not None and (row.files, row.added, row.removed) == (1, 1, 1)
    assert git(calc, "rev-parse", f"{place.branch}^").strip() == base
    assert "on Ray on node-a" in git(calc, "log", "-1", "--format=%B", place.branch)
    assert git(calc, "show", f"{place.branch}:notes.txt") == "uncommitted, and in the attempt\n"

    applied = apply_winner(calc, base, row, "Fix add")  # the work tree holds what the base holds: it applies
    assert applied.files == ["calc/ops.py"] and "    return a + b\n" in (calc / "calc" / "ops.py").read_text()
    assert (calc / "notes.txt").read_text() == "uncommitted, and in the attempt\n"
    undo = run_cog(["undo"], cwd=calc)
    assert undo.returncode == 0, undo.stderr
    assert "return a - b" in (calc / "calc" / "ops.py").read_text().split("def sub")[0]


def test_a_patch_that_does_not_apply_here_leaves_the_attempt_without_a_commit_and_says_why(make_repo) -> None:  # type: ignore[no-untyped-def]
    calc = make_repo("calc")
    base = snapshot(calc)
    place = make_places(calc, 1, base)[0]
    row = AttemptRow(attempt=1, name=place.name, branch=place.branch, path=str(place.path), status="completed")
    bad = b"diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n"
    take_patch(row, place, base, bad, "Fix add")
    assert row.commit is None and row.error is not None and "could not be committed here" in row.error
    assert not row.eligible()
    empty = AttemptRow(attempt=2, name="n", branch="cog/n", path="/x", status="completed")
    take_patch(empty, place, base, b"", "Fix add")
    assert empty.commit is None and empty.error is None  # it changed nothing


def test_a_node_cannot_ask_so_ask_and_stdin_are_refused_before_anything_runs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert node_approval("auto") == "auto" and node_approval("refuse") == "refuse"
    for mode in ("ask", "stdin"):
        with pytest.raises(ConfigError) as raised:
            node_approval(mode)
        assert "pass --yes" in raised.value.message and "nobody can answer" in raised.value.message
    monkeypatch.setenv("CI", "1")
    assert node_approval(None) == "auto"  # the default off a terminal under CI, as cog edit's


def test_ray_option_words_and_the_clear_errors(make_repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert ray_address(["--attempts", "3", "--ray", "Fix add"]) == ["--attempts", "3", "--ray=local", "Fix add"]
    assert ray_address(["--ray", "auto", "Fix"]) == ["--ray=auto", "Fix"]
    assert ray_address(["--ray", "head:6379", "--", "--ray"]) == ["--ray=head:6379", "--", "--ray"]
    assert ray_missing() is None  # the dev extra has Ray
    monkeypatch.setitem(sys.modules, "ray", None)
    assert "pip install 'cogcli[ray]'" in (ray_missing() or "")
    calc = make_repo("calc")
    alone = run_cog(["edit", "--ray", "--model", REPLAY, "Fix add"], cwd=calc)
    assert alone.returncode == 2 and "it goes with --attempts N" in alone.stderr and "cog batch" in alone.stderr
    asked = run_cog(["edit", "--attempts", "2", "--ray", "--approval", "ask", "--model", REPLAY, "Fix add"], cwd=calc)
    assert asked.returncode == 2 and "pass --yes" in asked.stderr
    assert git(calc, "branch", "--list", "cog/*") == ""  # refused before any worktree was made


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cog_edit_attempts_on_a_local_ray_picks_applies_and_keeps_branches(make_repo) -> None:  # type: ignore[no-untyped-def]
    calc = make_repo("calc")
    (calc / "notes.txt").write_text("mine, uncommitted\n")
    ray_dir = Path(tempfile.mkdtemp(prefix="cogray", dir="/tmp"))  # Ray's sockets need a short path
    try:
        done = run_cog(["edit", "--json", "--attempts", "2", "--ray", "--yes", "--model", REPLAY, "Fix add"], cwd=calc,
                       env={**GIT_ENV, "RAY_TMPDIR": str(ray_dir)}, timeout=540)
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert "your uncommitted changes are in them" in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    tagged = [line for line in lines if line.get("type") != "attempts"]
    assert {line["attempt"] for line in tagged} == {1, 2}
    assert sum(1 for line in tagged if line["type"] == "finish") == 2
    last = lines[-1]
    assert last["type"] == "attempts" and last["winner"] == 1 and last["applied"]["files"] == ["calc/ops.py"]
    assert [(a["attempt"], a["passed"], a["failed"], a["added"], a["removed"]) for a in last["attempts"]] == [(1, 3, 0, 1, 1), (2, 3, 0, 1, 1)]
    assert "    return a + b\n" in (calc / "calc" / "ops.py").read_text()
    for row in last["attempts"]:  # each attempt a local branch and worktree: the base, then its change
        assert git(calc, "log", "-1", "--format=%s", f"{row['branch']}^").strip() == SNAPSHOT_MESSAGE
        assert git(calc, "rev-parse", row["branch"]).strip() == row["commit"]
        assert Path(row["path"]).is_dir()
    undo = run_cog(["undo"], cwd=calc)
    assert undo.returncode == 0, undo.stderr
    assert "return a - b" in (calc / "calc" / "ops.py").read_text().split("def sub")[0]
    assert (calc / "notes.txt").read_text() == "mine, uncommitted\n"
