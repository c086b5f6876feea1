"""The person's approvals of a workspace's MCP servers carried into the worktrees cog makes — only
where the worktree holds the approved bytes (issue 50, part 3's leftover).

Real git worktrees, the real trust store under a temp ``XDG_CONFIG_HOME``, and the real ``cog edit
--worktree`` starting a real MCP server (tests/mcp_progress_server.py, copied into the project).
The attacks: a worktree whose server script, or whose cog.toml, differs from what the person
approved inherits nothing, though the command line is the same.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cog
from conftest import init_git_repo

from cogcli.settings import trust
from cogcli.worktrees import git_ops

ROOT = Path(__file__).resolve().parent.parent
COMMAND = shlex.join([sys.executable, "srv.py"])


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


def _project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(ROOT / "tests" / "mcp_progress_server.py", repo / "srv.py")
    (repo / "cog.toml").write_text(f"mcp_servers = [{json.dumps(COMMAND)}]\n")
    (repo / "README.md").write_text("a project with its own MCP server\n")
    return init_git_repo(repo)


def _approve(repo: Path) -> None:
    store = trust.load_store()
    trust.approve(store, repo, "mcp_servers", COMMAND)
    trust.save_store(store)


def test_an_approval_is_carried_into_a_worktree_with_the_same_bytes(tmp_path: Path, config: Path) -> None:
    repo = _project(tmp_path)
    _approve(repo)
    made = git_ops.create(repo, "same")
    assert trust.is_trusted(trust.load_store(), made.path, "mcp_servers", COMMAND)
    # the main workspace's approval is untouched, and one worktree's approval is its own path's
    assert trust.is_trusted(trust.load_store(), repo, "mcp_servers", COMMAND)
    workspaces = sorted(c.workspace for c in trust.load_store().commands)
    assert workspaces == sorted([str(repo.resolve()), str(made.path.resolve())])


def test_a_worktree_whose_server_script_differs_inherits_nothing(tmp_path: Path, config: Path) -> None:
    """The attack: a commit (here HEAD) whose srv.py is not what the person approved in the working tree."""
    repo = _project(tmp_path)
    (repo / "srv.py").write_text((repo / "srv.py").read_text() + "\n# reviewed by the person\n")  # approved, uncommitted
    _approve(repo)
    made = git_ops.create(repo, "other-script")
    assert (made.path / "srv.py").read_bytes() != (repo / "srv.py").read_bytes()
    assert (made.path / "cog.toml").read_bytes() == (repo / "cog.toml").read_bytes()  # the same command line there
    checked = trust.review(trust.load_store(), made.path, "mcp_servers", COMMAND)
    assert not checked.approved
    assert [c.workspace for c in trust.load_store().commands] == [str(repo.resolve())]


def test_a_worktree_whose_cog_toml_differs_inherits_nothing(tmp_path: Path, config: Path) -> None:
    repo = _project(tmp_path)
    (repo / "cog.toml").write_text(f"# the person's edit\nmcp_servers = [{json.dumps(COMMAND)}]\n")  # uncommitted
    _approve(repo)
    made = git_ops.create(repo, "other-config")
    assert (made.path / "srv.py").read_bytes() == (repo / "srv.py").read_bytes()
    assert not trust.is_trusted(trust.load_store(), made.path, "mcp_servers", COMMAND)


def test_cog_edit_in_a_worktree_starts_the_approved_server_and_refuses_a_changed_one(tmp_path: Path, config: Path) -> None:
    repo = _project(tmp_path)
    _approve(repo)
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps({"type": "cassette", "schemaVersion": 1, "model": "t"}) + "\n"
                        + json.dumps({"type": "turn", "text": "Done."}) + "\n")
    env = {"XDG_CONFIG_HOME": str(config)}
    done = run_cog(["edit", "--worktree-name", "ok", "--model", f"replay:{cassette}", "hello"], repo, env=env)
    assert done.returncode == 0 and "not starting" not in done.stderr, done.stderr  # the server started, in the worktree
    assert str(repo / ".cog" / "worktrees" / "ok") in done.stderr

    # a commit that changes the server: a worktree from it needs the person's approval again
    (repo / "srv.py").write_text((repo / "srv.py").read_text() + "\nimport os  # changed\n")
    init_git_repo(repo)  # commits the change
    refused = run_cog(["edit", "--worktree-name", "changed", "--model", f"replay:{cassette}", "hello"], repo, env=env)
    assert refused.returncode == 2 and "cog trust" in refused.stderr and "srv.py" in refused.stderr, refused.stderr
