"""A workspace hook's approved copy (cogcli/hooks/snapshot.py), what its approval covers of the files
a shell script sources, and the environment a hook gets (no workspace folder on PATH or PYTHONPATH)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from cogcli.contract.errors import ConfigError
from cogcli.hooks.process import hook_environment
from cogcli.hooks.snapshot import snapshot
from cogcli.settings.trust import command_files
from cogcli.settings.trust_closure import sourced_names


@pytest.fixture()
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_the_copy_holds_the_approved_bytes_and_nothing_else(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    (root / "hooks").mkdir(parents=True)
    (root / "hooks" / "guard.sh").write_text(". hooks/lib.sh\n")
    (root / "hooks" / "lib.sh").write_text("true\n")
    (root / "other.py").write_text("x = 1\n")
    files = command_files(root, "sh hooks/guard.sh")
    assert files["hooks/lib.sh"] == sha("true\n")  # the sourced file is part of the approval
    folder = snapshot(root, "sh hooks/guard.sh", files)
    assert str(folder).startswith(str(state)) and oct(folder.stat().st_mode & 0o777) == "0o700"
    assert (folder / "hooks" / "lib.sh").read_text() == "true\n" and not (folder / "other.py").exists()
    assert snapshot(root, "sh hooks/guard.sh", files) == folder  # kept while intact
    (root / "hooks" / "lib.sh").write_text("rm -rf ~\n")  # rewritten after the approval: not copied
    (folder / "hooks" / "lib.sh").unlink()
    with pytest.raises(ConfigError, match=r'"hooks/lib.sh" changed while cog copied it.*cog trust'):
        snapshot(root, "sh hooks/guard.sh", files)


def test_a_hook_run_by_a_workspace_virtualenv_is_refused_with_the_fix(tmp_path: Path, state: Path) -> None:
    with pytest.raises(ConfigError, match="workspace virtualenv .venv.*python outside the workspace"):
        snapshot(tmp_path, ".venv/bin/python hook.py", {".venv/ (virtualenv)": "tree:3:ab", "hook.py": "absent"})


def test_the_copies_are_never_kept_inside_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(root / "state"))  # inside the workspace: it gives way to the default
    copy = snapshot(root, "true", {}).resolve()
    assert not copy.is_relative_to(root.resolve()) and copy.is_relative_to(home.resolve())
    monkeypatch.setenv("HOME", str(root))  # the default is inside it too: refused, naming the fix
    with pytest.raises(ConfigError, match="XDG_STATE_HOME"):
        snapshot(root, "true", {})


def test_sourced_files_are_read_from_the_script_and_the_project_variable() -> None:
    text = '. hooks/lib.sh\nsource "$(dirname "$0")/more.sh"\nif x; then . ./a.sh; fi\n. "$CLAUDE_PROJECT_DIR/c.sh"\n. $X/y.sh\necho . no\n'
    assert sourced_names(text, "hooks") == ["hooks/lib.sh", "hooks/more.sh", "a.sh", "c.sh"]


def test_a_command_naming_the_project_variable_covers_the_workspace_file(tmp_path: Path) -> None:
    (tmp_path / "guard.py").write_text("pass\n")
    assert command_files(tmp_path, 'python3 "$CLAUDE_PROJECT_DIR/guard.py"')["guard.py"] == sha("pass\n")


def test_a_hooks_environment_has_no_workspace_folder_and_imports_nothing_from_it(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "bin").mkdir()
    environ = {
        "PATH": os.pathsep.join([str(root / ".venv" / "bin"), str(root / "bin"), "bin", "/usr/bin"]),
        "PYTHONPATH": os.pathsep.join([str(root), "src", "/opt/lib"]), "OPENAI_API_KEY": "sk-x",
    }
    person = hook_environment(root, environ=environ)
    assert person["PATH"] == "/usr/bin" and person["PYTHONPATH"] == "/opt/lib" and person["PYTHONSAFEPATH"] == "1"
    assert "OPENAI_API_KEY" not in person and person["COG_PROJECT_DIR"] == str(root)
    copy = tmp_path / "copy"
    workspace_hook = hook_environment(root, environ=environ, folder=copy)
    assert workspace_hook["CLAUDE_PROJECT_DIR"] == str(copy) and "PYTHONSAFEPATH" not in workspace_hook  # runs in its copy
