"""cog's git worktrees: made on a new branch under .cog/worktrees/, listed with their diff stats,
merged (a conflict refused with nothing changed), removed (uncommitted changes kept unless
--force); hostile names refused; .worktreeinclude copies ignored files but never follows a link
out of the repository. Real git repositories in temp folders; the CLI runs the real `cog`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import REPLAY, run_cog
from conftest import GIT_ENV, init_git_repo

from cogcli.worktrees import git_ops
from cogcli.worktrees.include import copy_included
from cogcli.worktrees.merge import merge
from cogcli.worktrees.place import WorktreeError, check_name


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, env={**os.environ, **GIT_ENV}).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / ".gitignore").write_text(".env\n*.local\nlinked\nlinkdir\n")
    return init_git_repo(root)


def test_a_worktree_is_made_on_its_branch_listed_merged_and_removed(repo: Path) -> None:
    made = git_ops.create(repo, "fix-a")
    assert made.path == repo / ".cog" / "worktrees" / "fix-a" and made.branch == "cog/fix-a"
    assert (made.path / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert "/.cog/" in (repo / ".git" / "info" / "exclude").read_text()  # the main tree's git status stays clean
    assert _git(repo, "status", "--porcelain") == ""

    (made.path / "a.txt").write_text("one\nTWO\nthree\n")
    (made.path / "new.txt").write_text("new\n")
    assert sorted(git_ops.dirty(made.path)) == ["a.txt", "new.txt"]
    sha = git_ops.commit(made.path, "change a", ["a.txt", "new.txt"])
    assert sha and _git(repo, "rev-parse", "cog/fix-a").strip() == sha
    assert git_ops.commit(made.path, "nothing", None) is None  # nothing left to commit

    assert [w.name for w in git_ops.listed(repo)] == ["fix-a"]
    assert git_ops.diff_stats(repo, "HEAD", "cog/fix-a") == (2, 2, 1)

    done = merge(repo, "fix-a")
    assert done.commits == 1 and done.fast_forward
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree\n" and (repo / "new.txt").exists()

    where, unmerged = git_ops.remove(repo, "fix-a")
    assert unmerged is None and not where.path.exists()
    assert _git(repo, "branch", "--list", "cog/*") == "" and git_ops.listed(repo) == []


def test_a_conflicting_merge_is_refused_and_leaves_everything_as_it_was(repo: Path) -> None:
    made = git_ops.create(repo, "clash")
    (made.path / "a.txt").write_text("one\nfrom the worktree\nthree\n")
    git_ops.commit(made.path, "worktree side", ["a.txt"])
    (repo / "a.txt").write_text("one\nfrom main\nthree\n")
    _git(repo, "commit", "-qam", "main side")
    (repo / "untracked.txt").write_text("mine\n")
    head = _git(repo, "rev-parse", "HEAD")
    status = _git(repo, "status", "--porcelain")

    with pytest.raises(WorktreeError, match=r"conflicts with the current branch in a\.txt: nothing was merged"):
        merge(repo, "clash")
    assert _git(repo, "rev-parse", "HEAD") == head and _git(repo, "status", "--porcelain") == status
    assert (repo / "a.txt").read_text() == "one\nfrom main\nthree\n"
    assert not (repo / ".git" / "MERGE_HEAD").exists()

    made2 = git_ops.create(repo, "other")  # a clean one merges with a merge commit
    (made2.path / "b.txt").write_text("b\n")
    git_ops.commit(made2.path, "b", ["b.txt"])
    (repo / "c.txt").write_text("c\n")
    _git(repo, "add", "c.txt")
    _git(repo, "commit", "-qm", "c")
    done = merge(repo, "other")
    assert not done.fast_forward and (repo / "b.txt").read_text() == "b\n"
    assert _git(repo, "log", "-1", "--format=%s").startswith("Merge cog/other")


def test_remove_refuses_uncommitted_changes_unless_forced_and_says_how_to_get_unmerged_commits_back(repo: Path) -> None:
    made = git_ops.create(repo, "keep")
    (made.path / "a.txt").write_text("changed\n")
    with pytest.raises(WorktreeError, match="uncommitted changes .*a.txt.*--force"):
        git_ops.remove(repo, "keep")
    assert made.path.is_dir()
    with pytest.raises(WorktreeError, match="uncommitted changes"):
        merge(repo, "keep")
    sha = git_ops.commit(made.path, "c", ["a.txt"])
    (made.path / "scratch.txt").write_text("x\n")
    _, unmerged = git_ops.remove(repo, "keep", force=True)
    assert unmerged == sha and not made.path.exists()
    assert _git(repo, "cat-file", "-t", sha).strip() == "commit"  # still there to be brought back


@pytest.mark.parametrize("name", ["../x", "-x", "x/y", "..", ".hidden", "naïve", "ｆｕｌｌ", "a..b", "x.lock", "a\nb", "", "x" * 64, "名前"])
def test_hostile_names_are_refused(repo: Path, name: str) -> None:
    with pytest.raises(WorktreeError, match="is not a worktree name"):
        check_name(name)
    if name:  # "" asks cog to make a name up
        with pytest.raises(WorktreeError, match="is not a worktree name"):
            git_ops.create(repo, name)
    assert not (repo.parent / "x").exists() and _git(repo, "branch", "--list", "cog/*") == ""


def test_worktreeinclude_copies_ignored_files_and_never_follows_a_link_out(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("the person's secret\n")
    (repo / ".env").write_text("TOKEN=dev\n")
    os.chmod(repo / ".env", 0o600)
    (repo / "db.local").write_text("local\n")
    (repo / "not-listed.local").write_text("x\n")
    os.symlink(outside / "secret", repo / "linked")  # a file link out of the repository
    os.symlink(outside, repo / "linkdir")  # a folder link out
    (repo / ".worktreeinclude").write_text("# what a worktree needs\n.env\ndb.local\nlinked\nlinkdir\nlinkdir/secret\na.txt\n")

    made = git_ops.create(repo, "inc")
    assert (made.path / ".env").read_text() == "TOKEN=dev\n"
    assert (made.path / ".env").stat().st_mode & 0o777 == 0o600
    assert (made.path / "db.local").read_text() == "local\n"
    assert not (made.path / "not-listed.local").exists()  # not named in .worktreeinclude
    assert not os.path.lexists(made.path / "linked") and not os.path.lexists(made.path / "linkdir")
    # the attack: a copy that follows links brings the outside file in
    naive = tmp_path / "naive"
    shutil.copy(repo / "linked", naive)
    assert naive.read_text() == "the person's secret\n"


def test_a_linked_worktreeinclude_is_not_read(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "patterns").write_text(".env\n")
    (repo / ".env").write_text("TOKEN=dev\n")
    os.symlink(tmp_path / "patterns", repo / ".worktreeinclude")
    dest = tmp_path / "dest"
    dest.mkdir()
    assert copy_included(repo, dest) == ([], [])
    assert not (dest / ".env").exists()


@pytest.mark.slow
def test_cog_edit_in_a_worktree_commits_there_and_leaves_the_work_tree_alone(make_repo) -> None:  # type: ignore[no-untyped-def]
    calc = make_repo("calc")
    (calc / "node_modules").mkdir()  # ignored: the worktree starts without it, and cog says so
    (calc / ".git" / "info" / "exclude").write_text("node_modules/\n")
    done = run_cog(["edit", "--model", REPLAY, "--worktree-name", "fix", "Fix add"], cwd=calc, env=GIT_ENV)
    assert done.returncode == 0, done.stderr
    assert "git ignores node_modules/, so the worktree starts without it" in done.stderr
    where = calc / ".cog" / "worktrees" / "fix"
    assert f"worktree fix: {where} (branch cog/fix)" in done.stderr
    assert "committed" in done.stderr and "cog worktree merge fix" in done.stderr
    assert "return a - b" in (calc / "calc" / "ops.py").read_text().split("def sub")[0]  # the work tree untouched
    assert (where / ".cog" / "threads.db").exists() and not (calc / ".cog" / "threads.db").exists()  # its own thread store
    listed = run_cog(["worktree", "list", "--json"], cwd=calc)
    assert '"name": "fix"' in listed.stdout and '"files": 1' in listed.stdout and '"uncommitted": 0' in listed.stdout
    merged = run_cog(["worktree", "merge", "fix"], cwd=calc, env=GIT_ENV)
    assert merged.returncode == 0, merged.stderr
    assert "return a + b" in (calc / "calc" / "ops.py").read_text()
    assert run_cog(["worktree", "remove", "fix"], cwd=calc).returncode == 0
    assert not where.exists()

    bad = run_cog(["edit", "--model", REPLAY, "--worktree-name", "../x", "Fix add"], cwd=calc)
    assert bad.returncode == 2 and "is not a worktree name" in bad.stderr and "Traceback" not in bad.stderr
    assert not (calc / ".cog" / "x").exists() and not (calc.parent / "x").exists()
    for verb in ("merge", "remove"):  # bad input: exit 2, as cog undo for no such run
        refused = run_cog(["worktree", verb, "nope"], cwd=calc)
        assert refused.returncode == 2 and "no worktree 'nope'" in refused.stderr, refused.stderr
        hostile = run_cog(["worktree", verb, "../x"], cwd=calc)
        assert hostile.returncode == 2 and "is not a worktree name" in hostile.stderr and "Traceback" not in hostile.stderr


def test_a_linked_cog_folder_is_refused_and_nothing_is_made_through_it(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, repo / ".cog")
    with pytest.raises(WorktreeError, match="symbolic link"):
        git_ops.create(repo, "through")
    assert list(outside.iterdir()) == [] and _git(repo, "branch", "--list", "cog/*") == ""


def test_a_chat_session_s_changes_are_committed_on_its_branch_when_it_ends(repo: Path) -> None:
    from cogcli.worktrees.enter import enter, finish

    entered = enter(repo, repo, "")
    assert entered.root == entered.place.path and entered.place.name.startswith("wt-")
    (entered.root / "a.txt").write_text("edited in the chat\n")
    (entered.root / "made.txt").write_text("new\n")
    (entered.root / "x.local").write_text("ignored\n")  # git ignores it: not committed
    finish(entered, "cog chat in worktree", None)
    assert git_ops.dirty(entered.root) == []
    shown = _git(repo, "show", "--name-only", "--format=%s", entered.place.branch)
    assert shown.split() == ["cog", "chat", "in", "worktree", "a.txt", "made.txt"]
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_merge_is_refused_before_writing_when_the_persons_changes_are_in_the_way(repo: Path) -> None:
    made = git_ops.create(repo, "theirs")
    (made.path / "a.txt").write_text("one\nfrom the worktree\nthree\n")
    git_ops.commit(made.path, "worktree side", ["a.txt"])
    (repo / "a.txt").write_text("my uncommitted edit\n")
    head = _git(repo, "rev-parse", "HEAD")
    with pytest.raises(WorktreeError, match="nothing was merged"):
        merge(repo, "theirs")
    assert (repo / "a.txt").read_text() == "my uncommitted edit\n" and _git(repo, "rev-parse", "HEAD") == head


def test_an_attempt_that_made_a_link_is_not_applied(repo: Path, tmp_path: Path) -> None:
    from cogcli.worktrees.apply import apply_winner
    from cogcli.worktrees.pick import AttemptRow

    base = git_ops.head(repo)
    made = git_ops.create(repo, "linky")
    os.symlink("/etc/passwd", made.path / "pw")
    sha = git_ops.commit(made.path, "a link", None)
    row = AttemptRow(attempt=1, name="linky", branch="cog/linky", path=str(made.path), status="completed", commit=sha)
    with pytest.raises(WorktreeError, match="pw a link or a submodule"):
        apply_winner(repo, base, row, "make a link")
    assert not os.path.lexists(repo / "pw")


def test_the_repository_s_hooks_and_filters_never_run_when_cog_makes_merges_or_removes_a_worktree(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\necho hook >> {marker}\n")
    hook.chmod(0o755)
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    _git(repo, "add", ".gitattributes")
    _git(repo, "commit", "-qm", "attributes")
    _git(repo, "config", "filter.evil.smudge", f"sh -c 'echo smudge >> {marker}; cat'")
    _git(repo, "config", "core.fsmonitor", f"sh -c 'echo fsmonitor >> {marker}'")
    # the attack: plain git runs them
    subprocess.run(["git", "worktree", "add", "-q", "-b", "plain", str(tmp_path / "plain")], cwd=repo, check=True, capture_output=True)
    assert "hook" in marker.read_text() and "smudge" in marker.read_text()
    marker.unlink()

    made = git_ops.create(repo, "safe")
    (made.path / "a.txt").write_text("changed\n")
    git_ops.commit(made.path, "c", ["a.txt"])
    git_ops.listed(repo)
    merge(repo, "safe")
    git_ops.remove(repo, "safe")
    assert not marker.exists()


def test_an_ignored_environment_folder_a_worktree_starts_without_is_named_unless_worktreeinclude_copies_it(repo: Path) -> None:
    from cogcli.worktrees.include import environments_left_out

    assert environments_left_out(repo) == []
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").write_text("")
    (repo / "node_modules" / "x").mkdir(parents=True)
    (repo / "node_modules" / "x" / "index.js").write_text("")
    assert environments_left_out(repo) == []  # not ignored: committed, a worktree has them
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + ".venv/\nnode_modules/\n")
    assert environments_left_out(repo) == [".venv", "node_modules"]
    (repo / ".worktreeinclude").write_text("node_modules/\n")
    assert environments_left_out(repo) == [".venv"]
    where = git_ops.create(repo, "envs")
    assert (where.path / "node_modules" / "x" / "index.js").exists() and not (where.path / ".venv").exists()
