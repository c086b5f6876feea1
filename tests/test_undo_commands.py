"""`cog undo` puts back what a run's commands changed (issue 52), with the run's tool writes, in one
step: real `cog edit` runs (replayed cassettes) whose run_command rewrote, created, deleted and
chmod'ed files; refused when a file changed since; the dry run lists command changes apart from
tool writes; the result and undo say what is outside the workspace is not undone."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import repo_with, run_cog
from test_undo import cassette, snapshot

from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.session import Session
from cogcli.settings.load import load_settings

COMMAND = "printf 'rewritten\\n' > calc/ops.py; echo made > gen.txt; rm README.md; chmod 755 calc/__init__.py; mkdir -p out; echo x > out/y.txt"


def _edit(repo: Path, tmp: Path, command: str = COMMAND, *, also_edit: bool = True) -> subprocess.CompletedProcess[str]:
    calls = [{"name": "run_command", "arguments": {"command": command}}]
    turns = [("run it", calls)]
    if also_edit:
        turns.insert(0, ("edit first", [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "by a tool\n"}}]))
    model = cassette(tmp / "c.jsonl", *turns)
    return run_cog(["edit", "--model", model, "--sandbox", "off", "--yes", "do it"], repo)


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    repo = make_repo("calc")
    (repo / "README.md").write_text("read me\n")
    os.chmod(repo / "calc" / "__init__.py", 0o644)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "readme"], cwd=repo, check=True)
    return repo


def test_a_commands_rewrites_creations_deletions_and_chmod_are_undone_with_the_tool_writes(calc: Path, tmp_path: Path) -> None:
    before = snapshot(calc)
    run = _edit(calc, tmp_path)
    assert run.returncode == 0, run.stderr
    assert (calc / "calc" / "ops.py").read_text() == "rewritten\n" and (calc / "gen.txt").exists() and not (calc / "README.md").exists()
    assert stat.S_IMODE((calc / "calc" / "__init__.py").stat().st_mode) == 0o755 and (calc / "notes.txt").exists()

    dry = run_cog(["undo", "--dry-run"], calc)
    assert dry.returncode == 0, dry.stderr
    assert "tool writes: notes.txt (deleted)" in dry.stderr, dry.stderr
    assert "command changes: README.md (restored), calc/__init__.py, calc/ops.py, gen.txt (deleted), out/y.txt (deleted)" in dry.stderr
    assert "not undone" in dry.stderr and "old mode 100755\nnew mode 100644" in dry.stdout
    assert (calc / "gen.txt").exists()  # a dry run writes nothing

    undo = run_cog(["undo"], calc)
    assert undo.returncode == 0, undo.stderr
    assert snapshot(calc) == before
    assert "what the runs' commands did outside it (the network, a database, other folders) is not undone" in undo.stderr
    assert subprocess.run(["git", "status", "--porcelain"], cwd=calc, capture_output=True, text=True).stdout == ""


def test_a_file_a_command_changed_and_changed_again_since_is_refused_with_a_diff(calc: Path, tmp_path: Path) -> None:
    run = _edit(calc, tmp_path, also_edit=False)
    assert run.returncode == 0, run.stderr
    (calc / "calc" / "ops.py").write_text("rewritten\nby me\n")
    after = snapshot(calc)
    undo = run_cog(["undo"], calc)
    assert undo.returncode == 1
    assert "calc/ops.py changed since the run" in undo.stderr and "+by me" in undo.stderr
    assert snapshot(calc) == after  # nothing written


def test_the_model_reads_that_undo_can_put_the_commands_changes_back_but_not_what_is_outside(calc: Path, tmp_path: Path) -> None:
    run = run_cog(["edit", "--model", cassette(tmp_path / "c.jsonl", ("run", [{"name": "run_command", "arguments": {"command": "echo x > new.txt"}}])),
                   "--sandbox", "off", "--yes", "--json", "do it"], calc)
    assert run.returncode == 0, run.stderr
    assert "cog undo can put back the files it changed; what it did outside the workspace" in run.stdout


def _session(settings: Any, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch) -> Session:
    import dataclasses

    import cogcli.session.session as session_module

    monkeypatch.setattr(session_module, "make_model", lambda settings, record=None: model)
    return Session.open(dataclasses.replace(settings, model="scripted:test"))


async def _yes(approvals: list[Any]) -> dict[str, bool]:
    return {a.tool_call_id: True for a in approvals}


@pytest.mark.anyio
async def test_what_a_test_run_wrote_into_the_tree_is_undone_through_the_shared_undo_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"a.txt": "one\n", "snap.txt": "old snapshot\n"})
    command = "echo 'new snapshot' > snap.txt; echo cache > made.txt; rm a.txt"
    model = ScriptedModel([Turn("", [Call("c1", "run_tests", {})]), Turn("done")])
    settings = load_settings(repo, sandbox="off", test_command=command)
    before = snapshot(repo)
    async with _session(settings, model, monkeypatch) as session:
        await session.run("test it", approve=_yes)
        assert not (repo / "a.txt").exists() and (repo / "snap.txt").read_text() == "new snapshot\n"
        plan = session.undo(dry_run=True)  # the path cog undo, chat /rewind, Studio and ACP share
        assert sorted(f.path for f in plan.files if f.by_command) == ["a.txt", "made.txt", "snap.txt"]
        assert any("not undone" in n for n in plan.notes)
        session.undo()
    assert snapshot(repo) == before


@pytest.mark.anyio
async def test_what_a_background_command_changed_is_recorded_when_it_ends_and_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"a.txt": "one\n"})
    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": "echo made > bg.txt; printf 'two\\n' > a.txt", "background": True})]),
                           Turn("", [Call("c2", "run_command", {"command": "sleep 0.3"})]), Turn("done")])
    before = snapshot(repo)
    async with _session(load_settings(repo, sandbox="off"), model, monkeypatch) as session:
        await session.run("serve it", approve=_yes)
        assert (repo / "bg.txt").exists() and (repo / "a.txt").read_text() == "two\n"
        plan = session.undo()
        assert sorted(f.path for f in plan.files) == ["a.txt", "bg.txt"] and all(f.by_command for f in plan.files)
    assert snapshot(repo) == before


def test_a_mode_changed_since_the_command_is_refused_naming_both_modes(calc: Path, tmp_path: Path) -> None:
    run = _edit(calc, tmp_path, "chmod 755 calc/__init__.py", also_edit=False)
    assert run.returncode == 0, run.stderr
    os.chmod(calc / "calc" / "__init__.py", 0o700)
    undo = run_cog(["undo"], calc)
    assert undo.returncode == 1
    assert "calc/__init__.py changed since the run" in undo.stderr and "its mode is now 700, the run left 755" in undo.stderr, undo.stderr
    assert stat.S_IMODE((calc / "calc" / "__init__.py").stat().st_mode) == 0o700
