"""Issue 52: the folders a command made for the files it created are removed by `cog undo` once
they are empty again — never one that holds anything else, never one that was there before — and
the folders a command deleted with their files are made again."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import repo_with
from test_undo import snapshot

from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.session import Session
from cogcli.settings.load import load_settings


def _folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir() and p.relative_to(root).parts[0] not in (".git", ".cog")}


async def _run(repo: Path, command: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """One run whose run_command runs ``command``; then undo, returning (the dry run, the files and folders before)."""
    import cogcli.session.session as session_module

    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": command})]), Turn("done")])
    monkeypatch.setattr(session_module, "make_model", lambda settings, record=None: model)

    async def yes(approvals: list[Any]) -> dict[str, bool]:
        return {a.tool_call_id: True for a in approvals}

    async with Session.open(dataclasses.replace(load_settings(repo, sandbox="off"), model="scripted:test")) as session:
        await session.run("run it", approve=yes)
        dry = session.undo(dry_run=True)
        session.undo()
    return dry


@pytest.mark.anyio
async def test_folders_a_command_made_are_removed_once_empty_and_no_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"a.txt": "one\n", ".gitignore": "*.log\n"})
    (repo / "was_empty").mkdir()  # there before, empty: stays
    before, folders = snapshot(repo), _folders(repo)
    command = ("mkdir -p out/sub/deep && echo x > out/sub/deep/y.txt; echo z > was_empty/z.txt;"
               " mkdir -p kept && echo k > kept/k.txt && echo cache > kept/run.log;"  # run.log: ignored, not undone
               " mkdir -p build/x/y")  # folders with no file in them
    dry = await _run(repo, command, monkeypatch)
    assert ("the folders the runs' commands made are removed if empty then: build/, build/x/, build/x/y/, kept/, out/, out/sub/, "
            "out/sub/deep/") in dry.notes, dry.notes
    assert snapshot(repo) == {**before, "kept/run.log": (b"cache\n", 0o644)}
    assert _folders(repo) == folders | {"kept"}  # out/ and its folders gone; kept/ holds the ignored file; was_empty/ stays


@pytest.mark.anyio
async def test_folders_a_command_deleted_with_their_files_are_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"docs/a.md": "a\n", "docs/b/c.md": "c\n", "a.txt": "one\n"})
    before, folders = snapshot(repo), _folders(repo)
    await _run(repo, "rm -rf docs", monkeypatch)
    assert snapshot(repo) == before and _folders(repo) == folders


@pytest.mark.anyio
async def test_a_run_that_only_made_empty_folders_is_undone_and_a_folder_holding_a_file_since_stays(tmp_path: Path,
                                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"a.txt": "one\n"})
    folders = _folders(repo)
    dry = await _run(repo, "mkdir -p build/x cache", monkeypatch)
    assert "walking back run 1" in dry.summary(would=True) and "build/" in dry.summary(would=True)
    assert _folders(repo) == folders

    import cogcli.session.session as session_module

    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": "mkdir -p build/x"})]), Turn("done")])
    monkeypatch.setattr(session_module, "make_model", lambda settings, record=None: model)

    async def yes(approvals: list[Any]) -> dict[str, bool]:
        return {a.tool_call_id: True for a in approvals}

    async with Session.open(dataclasses.replace(load_settings(repo, sandbox="off"), model="scripted:test")) as session:
        await session.run("run it", approve=yes)
        (repo / "build" / "mine.txt").write_text("mine\n")  # the person's, since
        session.undo()
    assert (repo / "build" / "mine.txt").read_text() == "mine\n" and not (repo / "build" / "x").exists()


def test_a_folder_flag_added_to_a_record_after_it_was_signed_sets_the_record_aside(tmp_path: Path) -> None:
    """The folder a record names for removal is signed like the rest of it: a record turned into a
    folder record (to have undo remove a folder of the person's) does not verify."""
    import json

    from workspace_tools.files.journal import JOURNAL_DIR, Journal, read_run

    repo = repo_with(tmp_path, {"a.txt": "one\n"})
    (repo / "mine").mkdir()
    journal = Journal(repo)
    journal.begin("thr_1", "msg_1")
    journal.record("mine", before=None, after=None, mode=None, by="command: true")
    journal.close()
    record = repo.joinpath(*JOURNAL_DIR, "msg_1", "000001.json")
    meta = json.loads(record.read_text())
    record.write_text(json.dumps({**meta, "folder": True}))
    read = read_run(repo, "msg_1")
    assert read is not None and read.rejected == ["000001.json"] and read.changes == []
