"""The private snapshot store under command undo (issue 52): only what changed is copied; what it
cannot keep (too large, a link, ignored) is named and never acted on; a damaged or linked object is
refused; `cog thread list` shows what undo keeps on disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import repo_with, run_cog
from test_undo_commands import _session, _yes

from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.settings.load import load_settings
from workspace_tools.shell import snapshot_store
from workspace_tools.shell.snapshot_store import SnapshotStore
from workspace_tools.shell.tree_changes import scan


def _repo(tmp_path: Path) -> Path:
    repo = repo_with(tmp_path, {"a.txt": "one\n", "b.txt": "two\n", ".gitignore": "build/\n", "build/out.o": "obj\n", "big.bin": "x" * 64})
    os.symlink("a.txt", repo / "link")
    return repo


def test_a_snapshot_copies_what_changed_only_and_names_what_it_cannot_keep(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    store = SnapshotStore(repo, max_file=32)
    first = store.take(scan(repo))
    assert first.copied == 3  # a.txt, b.txt, .gitignore
    kept = {p: first.kept(p) for p in ("big.bin", "link", "build/out.o")}
    assert kept["big.bin"].why.startswith("too large") and kept["link"].why == "a link" and kept["build/out.o"].why == "ignored by git"
    (repo / "a.txt").write_text("changed\n")
    again = SnapshotStore(repo, max_file=32).take(scan(repo))  # a new session reads the index back
    assert again.copied == 1
    assert store.read(again.kept("a.txt").sha) == b"changed\n" and store.read(first.kept("a.txt").sha) == b"one\n"


def test_a_damaged_or_linked_object_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    store = SnapshotStore(repo)
    taken = store.take(scan(repo))
    objects = snapshot_store.store_folder(repo) / "objects"
    sha_a, sha_b = taken.kept("a.txt").sha, taken.kept("b.txt").sha
    (objects / sha_a).write_bytes(b"evil\n")  # its bytes no longer hash to its name
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"two\n")
    (objects / sha_b).unlink()
    os.symlink(outside, objects / sha_b)  # the right bytes, but through a link
    assert store.read(sha_a) is None and store.read(sha_b) is None


@pytest.mark.anyio
async def test_what_cannot_be_kept_is_said_in_the_result_and_left_alone_by_undo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    monkeypatch.setattr(snapshot_store, "MAX_FILE", 32)
    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": "echo y > big.bin; echo three > b.txt"})]), Turn("done")])
    async with _session(load_settings(repo, sandbox="off"), model, monkeypatch) as session:
        events: list[Any] = []
        await session.run("go", approve=_yes, on_event=events.append)
        said = " ".join(str(getattr(e, "result", "")) for e in events if getattr(e, "type", "") == "tool-result")
        assert "cog undo cannot put back big.bin: too large" in said, said
        plan = session.undo()
    assert (repo / "b.txt").read_text() == "two\n" and (repo / "big.bin").read_text() == "y\n"
    assert any("big.bin was not put back" in n and "too large" in n for n in plan.notes), plan.notes


def test_thread_list_shows_what_undo_keeps_on_disk(tmp_path: Path) -> None:
    from test_undo import cassette

    repo = _repo(tmp_path)
    model = cassette(tmp_path / "c.jsonl", ("run", [{"name": "run_command", "arguments": {"command": "echo x > new.txt"}}]))
    assert run_cog(["edit", "--model", model, "--sandbox", "off", "--yes", "go"], repo).returncode == 0
    listed = run_cog(["thread", "list"], repo)
    assert listed.returncode == 0 and "undo keeps" in listed.stderr and "command snapshots" in listed.stderr, listed.stderr
    assert "undo keeps" not in listed.stdout


@pytest.mark.anyio
@pytest.mark.parametrize("undo_ignored", [False, True])
async def test_files_git_ignores_are_undone_only_when_the_person_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undo_ignored: bool) -> None:
    import dataclasses

    repo = _repo(tmp_path)
    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": "echo new > build/out.o; echo three > b.txt"})]), Turn("done")])
    settings = dataclasses.replace(load_settings(repo, sandbox="off"), undo_ignored=undo_ignored)
    async with _session(settings, model, monkeypatch) as session:
        await session.run("go", approve=_yes)
        plan = session.undo()
    assert (repo / "b.txt").read_text() == "two\n"
    assert (repo / "build" / "out.o").read_text() == ("obj\n" if undo_ignored else "new\n")
    assert ("build/out.o" in [f.path for f in plan.files]) is undo_ignored


def test_runs_falling_off_and_objects_nothing_names_are_pruned_and_the_disk_line_follows(tmp_path: Path) -> None:
    """The journals keep the newest KEEP_RUNS runs (each with its own copies); an object of the store
    that no index entry names any more (a file's older bytes) goes once a day old, at a session's
    first snapshot; what `cog thread list` says undo keeps is what is left."""
    import time

    from cogcli.threads.undo_disk import _size, undo_disk_line
    from workspace_tools.files.journal import JOURNAL_DIR, KEEP_RUNS, Journal, read_run

    repo = repo_with(tmp_path, {"a.txt": "a" * 300_000})
    store = SnapshotStore(repo)
    old = store.take(scan(repo)).kept("a.txt").sha
    (repo / "a.txt").write_text("b" * 1000)
    new = store.take(scan(repo)).kept("a.txt").sha
    journal = Journal(repo)
    for i in range(KEEP_RUNS + 3):
        journal.begin("thr_1", f"msg_{i:03d}")
        journal.record("a.txt", before=b"x" * 10_000, after=b"y", mode=0o644)
    journal.close()
    runs = sorted(p.name for p in repo.joinpath(*JOURNAL_DIR).iterdir())
    assert len(runs) == KEEP_RUNS and runs[0] == "msg_003" and read_run(repo, "msg_000") is None and read_run(repo, "msg_052") is not None

    objects = snapshot_store.store_folder(repo) / "objects"
    os.utime(objects / old, (time.time() - 2 * snapshot_store.PRUNE_AGE,) * 2)
    before = snapshot_store.disk_use(repo)
    SnapshotStore(repo).take(scan(repo))  # a new session's first snapshot
    assert not (objects / old).exists() and store.read(new) == b"b" * 1000  # the one the index names stays
    assert before - snapshot_store.disk_use(repo) >= 300_000
    journals = snapshot_store.folder_bytes(repo.joinpath(*JOURNAL_DIR))
    assert KEEP_RUNS * 10_000 <= journals < (KEEP_RUNS + 3) * 10_000
    line = undo_disk_line(repo)
    assert line is not None and f"run journals {_size(journals)}" in line
    assert f"command snapshots {_size(snapshot_store.disk_use(repo))}" in line and f"undo keeps {_size(journals + snapshot_store.disk_use(repo))}" in line


def test_a_long_session_prunes_again_hourly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    repo = repo_with(tmp_path, {"a.txt": "one\n"})
    store = SnapshotStore(repo)
    old = store.take(scan(repo)).kept("a.txt").sha
    (repo / "a.txt").write_text("two\n")
    store.take(scan(repo))
    objects = snapshot_store.store_folder(repo) / "objects"
    os.utime(objects / old, (time.time() - 2 * snapshot_store.PRUNE_AGE,) * 2)
    (repo / "a.txt").write_text("three\n")
    store.take(scan(repo))
    assert (objects / old).exists()  # within the hour: not looked for again
    monkeypatch.setattr(store, "_next_prune", time.monotonic() - 1)  # an hour later
    store.take(scan(repo))
    assert not (objects / old).exists()


@pytest.mark.anyio
async def test_a_link_out_a_command_made_is_named_and_left_and_the_rest_of_the_run_is_still_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found trying a real project: `ln -s /elsewhere d/out` in a run made `cog undo` refuse the whole
    # run ("d/out is a symlink ... outside the workspace") though a link is documented as left alone.
    repo = _repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    command = f"mkdir d && ln -s {outside} d/out; rm a.txt && ln -s {outside}/a a.txt; echo three > b.txt"
    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": command})]), Turn("done")])
    async with _session(load_settings(repo, sandbox="off"), model, monkeypatch) as session:
        await session.run("go", approve=_yes, on_event=lambda e: None)
        plan = session.undo()
    assert (repo / "b.txt").read_text() == "two\n"  # the rest of the run is put back
    assert (repo / "d" / "out").is_symlink() and list(outside.iterdir()) == []  # the link left, nothing written through it
    assert any("d/out was not put back" in n and "a link" in n for n in plan.notes), plan.notes
    # a file it replaced by a link: its record is cog's own (once set aside as "planted or altered")
    assert any("a.txt was not put back" in n for n in plan.notes) and not any("set aside" in n for n in plan.notes), plan.notes


@pytest.mark.anyio
async def test_a_run_whose_only_change_cog_could_not_keep_says_so_rather_than_put_back_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.threads.undo_types import NothingToUndo

    repo = _repo(tmp_path)
    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": f"ln -s {tmp_path} out"})]), Turn("done")])
    async with _session(load_settings(repo, sandbox="off"), model, monkeypatch) as session:
        await session.run("go", approve=_yes, on_event=lambda e: None)
        with pytest.raises(NothingToUndo) as refused:
            session.undo()
    said = refused.value.message
    assert "nothing cog can undo in" in said and "out was not put back" in said and "put back by hand?" not in said, said
