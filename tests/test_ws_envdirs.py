"""The project, not its environments: virtualenvs and tool caches are left out of list_files,
search_text, git_status and git_diff (named once, counted, reachable by an explicit path),
secrets are left out of the change, and results stay small."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import init_git_repo
from ws_helpers import call

from cogcli.contract.errors import ErrorCode
from workspace_tools import workspace_tools
from workspace_tools.workspace.envdirs import EnvDirs, env_kind

VENV_FILES = 2_000


def result_size(result: object) -> int:
    """Bytes of a result as a tool-result line carries it (content + details)."""
    return len(json.dumps({"result": result.result, "details": result.details}))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def venv_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A small project, committed, with an untracked `.venv` made by `python -m venv` (pip comes
    from the wheel bundled with Python: no download), filled up to 2,000 files as a venv with a
    few packages installed is, and no .gitignore for it (as before Python 3.13)."""
    root = tmp_path_factory.mktemp("proj")
    (root / "src" / "proj").mkdir(parents=True)
    (root / "src" / "proj" / "__init__.py").write_text("def canonicalize_name(name):\n    return name.lower()\n")
    (root / "src" / "proj" / "util.py").write_text("".join(f"VALUE_{i} = {i}\n" for i in range(40)))
    (root / "README.md").write_text("# proj\n")
    init_git_repo(root)
    subprocess.run([sys.executable, "-m", "venv", str(root / ".venv")], check=True, capture_output=True)
    (root / ".venv" / ".gitignore").unlink(missing_ok=True)  # Python 3.13+ writes one; the case here is without
    site = next((root / ".venv" / "lib").glob("python3*/site-packages"))
    have = sum(len(files) for _, _, files in os.walk(root / ".venv"))
    fake = site / "fakepkg"
    fake.mkdir()
    for i in range(max(0, VENV_FILES - have)):
        (fake / f"mod{i}.py").write_text(f"def canonicalize_name(name):  # copy {i}\n    return name\n")
    yield root


@pytest.mark.slow
def test_untracked_venv_is_left_out_of_list_files_and_named_once(venv_repo: Path) -> None:
    result = call(workspace_tools(venv_repo), "list_files")
    assert result.ok, result.error
    assert result.details["files"] == ["README.md", "src/proj/__init__.py", "src/proj/util.py"]
    assert result.result.count(".venv") == 2  # the note, and the path to look inside
    (left,) = result.details["left_out"]
    assert left["path"] == ".venv/" and left["kind"] == "a virtualenv" and left["files"] >= VENV_FILES
    assert f".venv/ (a virtualenv, {left['files']:,} files)" in result.result
    inside = call(workspace_tools(venv_repo), "list_files", path=".venv", pattern="**/fakepkg/*.py")
    assert inside.details["total"] > 500 and all(f.startswith(".venv/") for f in inside.details["files"])


@pytest.mark.slow
def test_search_finds_the_project_not_the_venv_copies(venv_repo: Path) -> None:
    result = call(workspace_tools(venv_repo), "search_text", pattern=r"def canonicalize_name")
    assert result.ok, result.error
    assert [m["path"] for m in result.details["matches"]] == ["src/proj/__init__.py"]
    assert result.details["secrets_skipped"] == 0  # certifi's cacert.pem inside the venv is not counted
    assert ".venv/ (a virtualenv" in result.result
    inside = call(workspace_tools(venv_repo), "search_text", pattern=r"def canonicalize_name", path=".venv/lib")
    assert inside.details["total"] > 500


@pytest.mark.slow
def test_git_diff_of_a_one_line_change_is_small(venv_repo: Path) -> None:
    target = venv_repo / "src" / "proj" / "util.py"
    original = target.read_text()
    target.write_text(original.replace("VALUE_7 = 7", "VALUE_7 = 70"))
    try:
        tools = workspace_tools(venv_repo)
        diff = call(tools, "git_diff")
        status = call(tools, "git_status")
    finally:
        target.write_text(original)
    assert diff.ok, diff.error
    assert [f["path"] for f in diff.details["files"]] == ["src/proj/util.py"]
    assert "-VALUE_7 = 7\n+VALUE_7 = 70\n" in diff.result
    assert ".venv/ (a virtualenv" in diff.result and "fakepkg" not in diff.result
    assert result_size(diff) < 5_000 and result_size(status) < 5_000
    assert status.result.startswith("On branch main. 1 file changed, +1 -1 since HEAD:\n  M  src/proj/util.py  +1 -1\n")
    explicit = call(workspace_tools(venv_repo), "git_status")
    assert explicit.details["left_out"][0]["path"] == ".venv/"


def test_env_kinds_by_name_content_and_neighbour(tmp_path: Path) -> None:
    (tmp_path / "myenv" / "bin").mkdir(parents=True)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "myenv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (tmp_path / "crate").mkdir()
    (tmp_path / "crate" / "Cargo.toml").write_text("[package]\n")
    (tmp_path / "crate" / "target").mkdir()
    (tmp_path / "web" / "target").mkdir(parents=True)  # no Cargo.toml beside it: a project folder
    assert env_kind(tmp_path / "myenv") == "a virtualenv"
    assert env_kind(tmp_path / "crate" / "target") == "Cargo build output"
    assert env_kind(tmp_path / "web" / "target") is None
    assert env_kind(tmp_path / "node_modules") == "npm packages"
    envs = EnvDirs(tmp_path)
    assert envs.excluded_file("a/__pycache__/x.pyc") == "a/__pycache__"
    assert envs.excluded_file("myenv/lib/site.py") == "myenv"
    assert EnvDirs(tmp_path, inside="myenv/lib").excluded_file("myenv/lib/site.py") is None
    assert EnvDirs(tmp_path, inside=".cog").excluded_file(".cog/threads.db") == ".cog"


def test_tracked_node_modules_and_ignored_caches_are_left_out(tmp_path: Path) -> None:
    for rel in ["app.js", "node_modules/left/index.js", "node_modules/left/package.json", "pkg/__pycache__/m.cpython-311.pyc"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("module.exports = 1\n")
    init_git_repo(tmp_path)  # everything committed, node_modules included
    result = call(workspace_tools(tmp_path), "list_files")
    assert result.details["files"] == ["app.js"]
    assert {(f["path"], f["files"]) for f in result.details["left_out"]} == {("node_modules/", 2), ("pkg/__pycache__/", 1)}


def test_cog_state_is_never_listed_or_searched(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".cog").mkdir()
    (tmp_path / ".cog" / "threads.db").write_text("x = 1 secret thread\n")
    init_git_repo(tmp_path)
    for tools in (workspace_tools(tmp_path), workspace_tools(tmp_path / ".")):
        assert call(tools, "list_files").details["files"] == ["a.py"]
        assert ".cog" not in call(tools, "list_files").result
        assert call(tools, "list_files", path=".cog").error_code == ErrorCode.COG_STATE
        assert [m["path"] for m in call(tools, "search_text", pattern="x = 1").details["matches"]] == ["a.py"]
        assert call(tools, "search_text", pattern="x", path=".cog").error_code == ErrorCode.COG_STATE
        assert call(tools, "git_diff", path=".cog").error_code == ErrorCode.COG_STATE


def test_cog_state_is_not_listed_outside_a_repository_either(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".cog").mkdir()
    (tmp_path / ".cog" / "threads.db").write_text("thread\n")
    assert call(workspace_tools(tmp_path), "list_files").details["files"] == ["a.py"]


# -- git_status / git_diff: secrets, untracked folders, budget ------------------------------------


@pytest.fixture
def secrets_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".env").write_text("DB_PASSWORD=pw-111\n")
    (root / "app.py").write_text("print('hi')\n")
    init_git_repo(root)
    (root / ".env").write_text("DB_PASSWORD=pw-222\n")
    (root / ".env.local").write_text("API_TOKEN=tok-333\n")
    (root / "settings").symlink_to(".env.local")
    (root / "app.py").write_text("print('hello')\n")
    return root


def test_plain_git_shows_the_secrets(secrets_repo: Path) -> None:
    """The attack without the defence: git itself prints the changed secret lines."""
    shown = subprocess.run(["git", "diff", "HEAD"], cwd=secrets_repo, capture_output=True, text=True).stdout
    assert "pw-222" in shown and "pw-111" in shown
    assert "tok-333" in (secrets_repo / "settings").read_text()


def test_secret_files_are_named_never_shown_in_status_and_diff(secrets_repo: Path) -> None:
    for name in ("git_status", "git_diff"):
        result = call(workspace_tools(secrets_repo), name)
        assert result.ok, result.error
        everything = json.dumps({"r": result.result, "d": result.details})
        for value in ("pw-111", "pw-222", "tok-333"):
            assert value not in everything
        assert result.details["secret_files"] == [".env", ".env.local", "settings"]
        assert result.details["secrets_skipped"] == 3
        assert "3 changed files that look like secrets (.env, keys) not shown: .env, .env.local, settings" in result.result
        assert [f["path"] for f in result.details["files"]] == ["app.py"]
    assert "+print('hello')" in call(workspace_tools(secrets_repo), "git_diff").result


def test_allowed_secret_is_shown(secrets_repo: Path) -> None:
    result = call(workspace_tools(secrets_repo, allow_secrets=[".env"]), "git_diff")
    assert "+DB_PASSWORD=pw-222" in result.details["diff"] and "tok-333" not in result.details["diff"]


def test_untracked_folder_is_summarized_as_git_does(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    init_git_repo(tmp_path)
    (tmp_path / "newpkg" / "sub").mkdir(parents=True)
    (tmp_path / "newpkg" / "__init__.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "newpkg" / "sub" / "m.py").write_text("z = 3\n")
    (tmp_path / "newpkg" / "__pycache__").mkdir()
    (tmp_path / "newpkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0\1")
    result = call(workspace_tools(tmp_path), "git_status")
    assert result.result.splitlines()[:2] == ["On branch main. 2 files changed, +3 -0 since HEAD:", "  ?? newpkg/  2 files, +3"]
    assert [f["path"] for f in result.details["files"]] == ["newpkg/__init__.py", "newpkg/sub/m.py"]
    assert "newpkg/__pycache__/ (Python bytecode, 1 file)" in result.result
    diff = call(workspace_tools(tmp_path), "git_diff")
    assert "+++ b/newpkg/sub/m.py\n@@ -0,0 +1 @@\n+z = 3\n" in diff.result


def test_diff_over_the_budget_names_what_it_left_out_and_how_to_see_it(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    init_git_repo(tmp_path)
    for i in range(12):
        (tmp_path / f"big{i:02}.txt").write_text("".join(f"line {n} of file {i}\n" for n in range(400)))
    result = call(workspace_tools(tmp_path), "git_diff")
    assert result.ok, result.error
    assert len(result.result) < 45_000
    assert "budget and not shown: big" in result.result and "See one with git_diff path=FILE" in result.result
    assert len(result.details["files"]) == 12  # the stat counts every file
    one = call(workspace_tools(tmp_path), "git_diff", path="big11.txt")
    assert [f["path"] for f in one.details["files"]] == ["big11.txt"]
    assert "+line 399 of file 11\n" in one.result


def test_huge_change_keeps_details_bounded(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    init_git_repo(tmp_path)
    (tmp_path / "gen").mkdir()
    for i in range(40):
        (tmp_path / "gen" / f"f{i}.txt").write_text(("y" * 70 + "\n") * 300)
    result = call(workspace_tools(tmp_path), "git_diff")
    assert len(result.details["diff"]) <= 400_000
    assert len(result.details["omitted"]) > 0 and len(result.details["files"]) == 40


def test_a_repository_of_another_user_is_read_without_running_its_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain git refuses such a repository ('dubious ownership') because its config could run
    programs. cog's git names the repository explicitly and turns every such setting off, so it
    reads the repository and runs nothing it names."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give the repository to another user")
    root = tmp_path / "theirs"
    root.mkdir()
    (root / "a.py").write_text("a\n")
    init_git_repo(root)
    marker = tmp_path / "ran"
    (root / "x.sh").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (root / "x.sh").chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(root / "x.sh")], cwd=root, check=True)
    subprocess.run(["chown", "-R", "12345:12345", str(root)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    plain = subprocess.run(["git", "status"], cwd=root, capture_output=True, text=True)
    assert "dubious ownership" in plain.stderr
    result = call(workspace_tools(root), "git_status")
    assert result.ok, result.error
    assert "x.sh" in result.result  # the untracked script is listed, not run
    assert not marker.exists()
    listed = call(workspace_tools(root), "list_files")
    assert listed.details["files"] == ["a.py", "x.sh"] and not marker.exists()


def test_a_huge_tracked_change_is_named_not_diffed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workspace_tools.git.changes as git_tools

    (tmp_path / "small.py").write_text("a = 1\n")
    (tmp_path / "generated.txt").write_text("".join(f"{i}\n" for i in range(300)))
    init_git_repo(tmp_path)
    (tmp_path / "small.py").write_text("a = 2\n")
    (tmp_path / "generated.txt").write_text("".join(f"{i} changed\n" for i in range(300)))
    monkeypatch.setattr(git_tools, "MAX_DIFF_LINES", 100)
    result = call(workspace_tools(tmp_path), "git_diff")
    assert result.details["omitted"] == ["generated.txt"]
    assert "generated.txt" not in result.details["diff"] and "+a = 2" in result.details["diff"]
    assert [(f["path"], f["added"]) for f in result.details["files"]] == [("generated.txt", 300), ("small.py", 1)]
    assert "See one with git_diff path=FILE" in result.result
