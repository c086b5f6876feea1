"""git_status and git_diff: the whole change since HEAD, untracked files included, as one diff."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import init_git_repo
from ws_helpers import assert_diff_applies, call, copy_tree

from cogcli.contract.errors import ErrorCode
from workspace_tools import workspace_tools


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo("workspace")


def change_things(repo: Path) -> None:
    tools = workspace_tools(repo)
    assert call(tools, "edit_file", path="src/util.py", old_text="Hello", new_text="Hi").ok
    assert call(tools, "write_file", path="src/new.py", content="VALUE = 1\n").ok
    (repo / "docs" / "readme.md").unlink()
    (repo / "ignored.log").write_text("not part of the change\n")
    (repo / ".gitignore").write_text("build/\n*.log\n")  # unchanged content: not a change


def test_status_lists_every_changed_file_with_counts(repo: Path) -> None:
    change_things(repo)
    result = call(workspace_tools(repo), "git_status")
    assert result.ok, result.error
    assert result.result == (
        "On branch main. 3 files changed, +2 -4 since HEAD:\n"
        "  D  docs/readme.md  +0 -3\n"
        "  M  src/util.py  +1 -1\n"
        "  ?? src/new.py  +1 -0\n"
    )
    assert result.details["files"] == [
        {"path": "docs/readme.md", "status": "deleted", "added": 0, "removed": 3, "binary": False},
        {"path": "src/util.py", "status": "modified", "added": 1, "removed": 1, "binary": False},
        {"path": "src/new.py", "status": "untracked", "added": 1, "removed": 0, "binary": False},
    ]
    assert (result.details["added"], result.details["removed"]) == (2, 4)
    assert result.presentation.model_dump(exclude_none=True) == {"label": "Git status", "icon": "git-compare"}
    assert "diff --git" not in result.result  # the model gets the stat; the diff is for the app


def test_diff_in_details_rebuilds_the_working_tree_from_head(repo: Path, tmp_path: Path) -> None:
    before = copy_tree(repo, tmp_path / "before")
    change_things(repo)
    (repo / "ignored.log").unlink()
    result = call(workspace_tools(repo), "git_diff")
    assert result.presentation.model_dump(exclude_none=True) == {"label": "Git diff", "icon": "git-compare"}
    diff = result.details["diff"]
    assert "diff --git a/src/new.py b/src/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.py\n" in diff
    assert result.result.startswith("On branch main. 3 files changed")
    assert diff in result.result  # small diffs are shown to the model in full
    assert_diff_applies(before, repo, diff)


def test_clean_repo_says_so(repo: Path) -> None:
    result = call(workspace_tools(repo), "git_status")
    assert result.result == "On branch main. No changes: the workspace matches HEAD.\n"
    assert result.details["files"] == [] and result.details["diff"] == ""


def test_repo_without_commits_diffs_against_the_empty_tree(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    init_git_repo(tmp_path, commit=False)
    subprocess.run(["git", "add", "a.txt"], cwd=tmp_path, check=True)
    (tmp_path / "b.txt").write_text("two\n")
    result = call(workspace_tools(tmp_path), "git_status")
    assert result.ok, result.error
    assert [(f["path"], f["status"]) for f in result.details["files"]] == [("a.txt", "added"), ("b.txt", "untracked")]


def test_workspace_in_a_subfolder_sees_only_its_own_changes(repo: Path) -> None:
    (repo / "docs" / "readme.md").write_text("# Docs\n\nChanged.\n")
    (repo / "src" / "util.py").write_text("changed\n")
    result = call(workspace_tools(repo / "src"), "git_status")
    assert [f["path"] for f in result.details["files"]] == ["util.py"]


def test_binary_untracked_file_is_marked_binary(repo: Path) -> None:
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02")
    files = call(workspace_tools(repo), "git_status").details["files"]
    assert files == [{"path": "blob.bin", "status": "untracked", "added": 0, "removed": 0, "binary": True}]


def test_not_a_repo_is_a_git_error(tmp_path: Path) -> None:
    for name in ("git_status", "git_diff"):
        result = call(workspace_tools(tmp_path), name)
        assert result.error_code == ErrorCode.GIT_ERROR
        assert "not in a git repository" in result.error


def test_workspace_tools_declares_names_effects_and_schemas(tmp_path: Path) -> None:
    tools = {t.name: t for t in workspace_tools(tmp_path)}
    assert list(tools) == ["read_file", "list_files", "search_text", "edit_file", "apply_patch", "write_file", "move_file", "delete_file",
                           "git_status", "git_diff", "run_tests", "run_command", "command_output", "kill_command"]
    for name in ("edit_file", "apply_patch", "write_file", "move_file", "delete_file"):
        assert tools[name].side_effects == ("writes files",)
        assert not tools[name].annotations.get("readOnly")
    for name in ("read_file", "list_files", "search_text", "git_status", "git_diff"):
        assert tools[name].side_effects == () and tools[name].annotations == {"readOnly": True}
    for name, t in tools.items():
        schema = t.input_schema()
        for field, spec in schema.get("properties", {}).items():
            assert spec.get("description"), f"{name}.{field} has no description"
    assert [t.name for t in workspace_tools(tmp_path, include_git=False)] == [
        "read_file", "list_files", "search_text", "edit_file", "apply_patch", "write_file", "move_file", "delete_file", "run_tests", "run_command", "command_output", "kill_command"
    ]


def test_a_hunk_inside_a_key_block_shows_none_of_its_body(repo: Path) -> None:
    """One body line of a key kept in an ordinary file changes: the hunk shows body lines but
    neither BEGIN nor END, which redaction alone cannot recognise. git_diff (and git_status's
    details) work the key's lines out from the file and hide them."""
    import random

    from cogcli.secrets.redactor import redact

    rng = random.Random(3)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = ["".join(rng.choice(alphabet) for _ in range(64)) for _ in range(30)]
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n"
    (repo / "keyfixture.py").write_text(f'KEY = """\n{key}"""\n')
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "key"], cwd=repo, check=True)
    changed = body[15][:-4] + "AAAA"
    (repo / "keyfixture.py").write_text(f'KEY = """\n{key.replace(body[15], changed)}"""\n')

    plain = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True).stdout
    assert body[14] in redact(plain)[0], "redaction alone leaves the hunk's body lines: the test proves nothing"
    for name in ("git_diff", "git_status"):
        result = call(workspace_tools(repo), name)
        assert result.ok, result.error
        shown = str(result.result) + str(result.details)
        assert not any(line in shown for line in [*body, changed]), name
    diff = call(workspace_tools(repo), "git_diff").details["diff"]
    assert "-[REDACTED]" in diff and "+[REDACTED]" in diff  # the change is still there, without the key
