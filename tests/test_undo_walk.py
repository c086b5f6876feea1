"""Issue 39: a thread walked back run by run — `cog undo` again goes further back, `--to RUN` walks
back to before that run, `--dry-run` writes nothing; edits, creates, deletes and moves are put back
(through the journal's `record(path, before, after, mode)`, as move_file/delete_file record them);
a file changed since is refused with what differs and nothing is written; and the model is told
(or, with the conversation rewound, no longer reads the undone turns)."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_cog

from cogcli.threads.history import build_history
from cogcli.threads.store import AssistantEntry, UserEntry, default_store
from cogcli.session import Session
from cogcli.threads.undo import NothingToUndo, UndoRefused
from workspace_tools.files.journal import Journal

Change = tuple[str, "bytes | None"]


class Thread:
    """Runs made as cog makes them: the user entry, the journal record before each write, the write."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = default_store(root)
        self.id = self.store.create_thread(title="walk").id
        self.journal = Journal(root)
        self.runs: list[str] = []

    def run(self, text: str, *changes: Change, moves: tuple[tuple[str, str], ...] = ()) -> str:
        mid = f"msg_{uuid.uuid4().hex[:16]}"
        self.store.append(self.id, [UserEntry(content=text, message_id=mid)], status="running")
        self.journal.begin(self.id, mid)
        for old, new in moves:  # a move: the delete of the old path and the create of the new one
            data = (self.root / old).read_bytes()
            mode = stat.S_IMODE((self.root / old).stat().st_mode)
            self.journal.record(old, before=data, after=None, mode=mode)
            self.journal.record(new, before=None, after=data, mode=mode)
            (self.root / new).parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.root / old, self.root / new)
        for rel, after in changes:
            path = self.root / rel
            before = path.read_bytes() if path.exists() else None
            mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
            self.journal.record(rel, before=before, after=after, mode=mode)
            if after is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(after)
        self.store.append(self.id, [AssistantEntry(content=f"did {text}")], status="completed")
        self.runs.append(mid)
        return mid

    def close(self) -> None:
        self.journal.close()
        self.store.close()


@pytest.fixture
def thread(make_repo: Callable[..., Path]) -> Thread:
    root = make_repo("calc")
    (root / "a.txt").write_bytes(b"one\n")
    (root / "gone.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (root / "gone.sh").chmod(0o751)
    (root / "old" / "m.txt").parent.mkdir()
    (root / "old" / "m.txt").write_bytes(b"moved\n")
    t = Thread(root)
    yield t
    t.close()


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] not in (".git", ".cog") and p.is_file():
            out[rel.as_posix()] = (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
    return out


def test_undo_walks_back_run_by_run_edits_creates_deletes_and_moves(thread: Thread) -> None:
    root = thread.root
    start = files(root)
    thread.run("edit a", ("a.txt", b"two\n"), ("new.txt", b"made\n"))
    after1 = files(root)
    thread.run("delete and move", ("gone.sh", None), moves=(("old/m.txt", "new/dir/m.txt"),))
    after2 = files(root)
    thread.run("edit a again", ("a.txt", b"three\n"))
    thread.run("only looked")  # changed no files: skipped by the walk
    session = Session(root)
    try:
        plan = session.undo(thread.id)
        assert [r.number for r in plan.runs] == [3] and files(root) == after2
        plan = session.undo(thread.id)
        assert [r.number for r in plan.runs] == [2] and files(root) == after1  # gone.sh back with mode 751, m.txt moved back
        assert {(f.path, f.creates, f.deletes) for f in plan.files} == {("gone.sh", True, False), ("old/m.txt", True, False), ("new/dir/m.txt", False, True)}
        session.undo(thread.id)
        assert files(root) == start
        with pytest.raises(NothingToUndo, match="undone already"):
            session.undo(thread.id)
    finally:
        session.close()


def test_to_walks_back_to_before_a_run_and_dry_run_writes_nothing(thread: Thread) -> None:
    root = thread.root
    start = files(root)
    thread.run("one", ("a.txt", b"two\n"))
    thread.run("two", ("a.txt", b"three\n"), ("gone.sh", None))
    thread.run("three", ("b.txt", b"bee\n"))
    now = files(root)
    with Session(root) as session:
        dry = session.undo(thread.id, to="1", dry_run=True)
        assert [r.number for r in dry.runs] == [3, 2, 1] and files(root) == now
        assert sorted(f.path for f in dry.files) == ["a.txt", "b.txt", "gone.sh"]
        diff = dry.reverse_diff()
        assert "-three\n+one\n" in diff and "new file mode 100755" in diff and "deleted file mode" in diff
        session.undo(thread.id, to=thread.runs[1][:10])  # by message id prefix: runs 3 and 2
        assert (root / "a.txt").read_bytes() == b"two\n" and not (root / "b.txt").exists()
        session.undo(thread.id, to="#1")
        assert files(root) == start
        with pytest.raises(NothingToUndo, match="run 1 .* undone already"):
            session.undo(thread.id, to="1")
        with pytest.raises(NothingToUndo, match="no run 9"):
            session.undo(thread.id, to="9")


def test_a_file_changed_since_is_refused_with_what_differs_and_nothing_written(thread: Thread) -> None:
    root = thread.root
    thread.run("one", ("a.txt", b"two\n"), ("b.txt", b"bee\n"))
    thread.run("two", ("a.txt", b"three\n"))
    (root / "b.txt").write_bytes(b"bee\nthe person's line\n")  # changed since run 1
    now = files(root)
    with Session(root) as session:
        session.undo(thread.id)  # run 2 touched only a.txt: it walks back
        assert (root / "a.txt").read_bytes() == b"two\n"
        with pytest.raises(UndoRefused) as refused:
            session.undo(thread.id)
        text = refused.value.message
        assert "b.txt changed since the run" in text and "run 1" in text and "+the person's line" in text
        assert files(root) == {**now, "a.txt": ((root / "a.txt").read_bytes(), now["a.txt"][1])}  # a.txt not touched by the refused undo
        assert (root / "a.txt").read_bytes() == b"two\n"


def test_the_model_is_told_or_no_longer_reads_the_undone_runs(thread: Thread) -> None:
    thread.run("make b", ("b.txt", b"bee\n"))
    thread.run("edit a", ("a.txt", b"two\n"))
    with Session(thread.root) as session:
        session.undo(thread.id)  # code only: the model is told
        told = [m.content for m in build_history("", session.store().entries(thread.id))]
        assert "did edit a" in told  # the conversation is kept
        note = told[-1]
        assert note.startswith("[cog] The person undid the run for \"edit a\"") and "a.txt" in note and "no longer in the files" in note
        session.undo(thread.id, conversation=True)  # files and conversation: run 1 is gone from the history
        left = [m.content for m in build_history("", session.store().entries(thread.id))]
        assert "make b" not in left and "did make b" not in left and "edit a" in left
        assert not (thread.root / "b.txt").exists()
        # the conversation alone, back to run 2: the files stay
        (thread.root / "a.txt").write_bytes(b"by hand\n")
        session.undo(thread.id, to="2", code=False, conversation=True)
        assert build_history("", session.store().entries(thread.id)) == []
        assert (thread.root / "a.txt").read_bytes() == b"by hand\n"


@pytest.mark.slow
def test_cog_undo_to_and_thread_show_numbers_from_the_terminal(thread: Thread) -> None:
    thread.run("one", ("a.txt", b"two\n"))
    thread.run("two", ("a.txt", b"three\n"))
    shown = run_cog(["thread", "show", thread.id], thread.root)
    assert f"── run 1 · {thread.runs[0]} ──" in shown.stdout and f"── run 2 · {thread.runs[1]} ──" in shown.stdout
    dry = run_cog(["undo", "--to", "1", "--dry-run"], thread.root)
    assert dry.returncode == 0 and "-three\n+one\n" in dry.stdout and "would revert 1 file: a.txt" in dry.stderr
    assert (thread.root / "a.txt").read_bytes() == b"three\n"
    done = run_cog(["undo", "--to", "1", "--conversation"], thread.root)
    assert done.returncode == 0 and "walked back runs 2 (two), 1 (one)" in done.stderr and "the model no longer reads them" in done.stderr
    assert (thread.root / "a.txt").read_bytes() == b"one\n"
    shown = run_cog(["thread", "show", thread.id], thread.root)
    assert "── run 1 · " + thread.runs[0] + " · files undone · conversation rewound ──" in shown.stdout
