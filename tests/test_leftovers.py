"""What a step leaves behind (issue 47), in process: setuid bits swept from the whole workspace, a
planted ``pyvenv.cfg`` that hides nothing, and a FIFO ``.gitignore`` that holds no git. The attacks
through the real ``cog`` command, as root and as a user, are in tests/security/test_sandbox_leftovers.py."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from conftest import init_git_repo
from ws_helpers import call

from cogcli.contract.errors import ErrorCode
from workspace_tools import workspace_tools
from workspace_tools.sandbox.leftovers import removed_text, strip_privileges
from workspace_tools.shell.tree_changes import compare, scan
from workspace_tools.workspace.envdirs import EnvDirs, env_kind, is_virtualenv, tracked_folders
from workspace_tools.workspace.git_reads import blocking_above, blocking_git_files


def _setuid_file(path: Path, mode: int = 0o4755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF")
    path.chmod(mode)
    return path


def test_setuid_and_setgid_bits_are_stripped_anywhere_in_the_workspace(tmp_path: Path) -> None:
    top = _setuid_file(tmp_path / "rtsh")
    in_env = _setuid_file(tmp_path / ".venv" / "bin" / "tool", 0o2755)  # a folder the change scan skips
    ignored = _setuid_file(tmp_path / "build" / "deep" / "x", 0o6711)
    plain = tmp_path / "run.sh"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o755)
    git_file = _setuid_file(tmp_path / ".git" / "hooks" / "x")  # read-only in the sandbox: not swept
    removed = strip_privileges(tmp_path)
    assert {(r.path, r.what, r.action) for r in removed} == {
        ("rtsh", "setuid", "stripped"), (".venv/bin/tool", "setgid", "stripped"), ("build/deep/x", "setuid, setgid", "stripped")}
    for path, mode in ((top, 0o755), (in_env, 0o755), (ignored, 0o711), (plain, 0o755)):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path
    assert git_file.stat().st_mode & stat.S_ISUID
    assert "rtsh (setuid stripped)" in removed_text(removed)
    assert strip_privileges(tmp_path) == [] and removed_text([]) == ""


def test_a_link_is_not_followed_and_a_hard_link_is_deleted_not_changed(tmp_path: Path) -> None:
    outside = _setuid_file(tmp_path / "outside" / "prog")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(outside)
    (work / "dir-link").symlink_to(outside.parent, target_is_directory=True)
    os.link(outside, work / "hard")  # with --sandbox off this may be a host program's own file
    removed = strip_privileges(work)
    assert [(r.path, r.action) for r in removed] == [("hard", "deleted")]
    assert outside.stat().st_mode & stat.S_ISUID and not (work / "hard").exists()


def test_the_writable_paths_are_swept_too(tmp_path: Path) -> None:
    extra = _setuid_file(tmp_path / "cache" / "x")
    (tmp_path / "work").mkdir()
    removed = strip_privileges(tmp_path / "work", [tmp_path / "cache"])
    assert [r.path for r in removed] == [f"{tmp_path / 'cache'}/x"] and not extra.stat().st_mode & stat.S_ISUID


def test_a_virtualenv_is_one_only_when_it_is_shaped_like_one(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert not is_virtualenv(str(tmp_path / "src")) and env_kind(tmp_path / "src") is None
    (tmp_path / "env" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert env_kind(tmp_path / "env") == "a virtualenv"
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "pyvenv.cfg").symlink_to(tmp_path / "env" / "pyvenv.cfg")
    (tmp_path / "linked" / "bin").symlink_to(tmp_path / "env" / "lib", target_is_directory=True)
    assert not is_virtualenv(str(tmp_path / "linked"))
    # a folder holding tracked files is never a virtualenv by content, and with keep_tracked never left out
    assert EnvDirs(tmp_path, tracked=frozenset({"env"})).excluded_file("env/a.py") is None
    assert EnvDirs(tmp_path, tracked=frozenset({".venv"})).excluded_file(".venv/a.py") == ".venv"
    assert EnvDirs(tmp_path, tracked=frozenset({".venv"}), keep_tracked=True).excluded_file(".venv/a.py") is None


def _fake_venv_repo(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    init_git_repo(tmp_path)
    # the attacker's shape of a virtualenv around tracked code
    (tmp_path / "src" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "src" / "bin").mkdir()
    (tmp_path / "src" / "bin" / "python").symlink_to("/usr/bin/python3")
    return tmp_path


def test_a_planted_virtualenv_hides_no_tracked_change(tmp_path: Path) -> None:
    root = _fake_venv_repo(tmp_path)
    tracked = tracked_folders(root)
    assert "src" in tracked
    before = scan(root, tracked=tracked)
    (root / "src" / "app.py").write_text("x = 2  # rewritten\n")
    (root / "src" / "new.py").write_text("y = 1\n")
    changes = compare(before, scan(root, tracked=tracked), root)
    assert "src/app.py" in changes.modified and "src/new.py" in changes.created
    tools = workspace_tools(root)
    status = call(tools, "git_status")
    assert status.error is None and "src/app.py" in status.result and "virtualenv" not in status.result
    assert "src/new.py" in status.result
    diff = call(tools, "git_diff")
    assert "+x = 2  # rewritten" in diff.details["diff"]
    listed = call(tools, "list_files")
    assert "src/app.py" in listed.details["files"] and "src/new.py" in listed.details["files"]


def test_a_fifo_gitignore_holds_no_step(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    init_git_repo(tmp_path)
    before = scan(tmp_path)
    os.mkfifo(tmp_path / "src" / ".gitignore")
    (tmp_path / "src" / "app.py").write_text("x = 2\n")
    (tmp_path / "top.py").write_text("")
    assert blocking_git_files(tmp_path) == {"src/.gitignore": "a named pipe (FIFO)"}
    assert blocking_above(tmp_path, ["top.py"]) == {} and blocking_above(tmp_path, ["src/app.py"]) == {"src/.gitignore": "a named pipe (FIFO)"}
    started = time.monotonic()
    changes = compare(before, scan(tmp_path), tmp_path)
    assert {"src/app.py", "top.py"} <= set(changes.paths()) and "src/.gitignore" in changes.notes[0]
    tools = workspace_tools(tmp_path)
    status = call(tools, "git_status")
    assert status.error is not None and status.error_code == ErrorCode.GIT_ERROR
    assert "src/.gitignore (a named pipe (FIFO))" in status.error and "rm 'src/.gitignore'" in status.error
    listed = call(tools, "list_files")
    assert "src/app.py" in listed.details["files"]
    os.mkfifo(tmp_path / "src" / ".gitattributes")  # git grep (search_text's prefilter) reads this one
    found = call(tools, "search_text", pattern="x = 2")
    assert found.error is None and "src/app.py" in found.result
    assert time.monotonic() - started < 20, "a step waited on the FIFO"


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_a_device_gitattributes_is_found_too(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("")
    init_git_repo(tmp_path)
    assert blocking_git_files(tmp_path) == {}
    os.mknod(tmp_path / ".gitattributes", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    assert blocking_git_files(tmp_path) == {".gitattributes": "a device"}


def test_outside_a_repository_nothing_is_walked_for_git(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".gitignore")
    assert blocking_git_files(tmp_path) == {}  # cog starts no git here: nothing to hold
