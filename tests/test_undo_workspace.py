"""Issue 49: `cog undo` without a thread walks back the workspace's runs newest first, across threads
(each `cog edit` starts one), naming what it undid; `cog undo --list` shows them. Interleaved threads
come back in the order they ran; every protection of a thread's undo holds (a file changed since —
by hand, or by a later run of another thread not undone — is refused with what differs, nothing
written); `cog undo THREAD` keeps walking that thread alone; a run put back by hand says so without
suggesting itself."""

from __future__ import annotations

import json
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_cog

from cogcli.threads.store import AssistantEntry, UserEntry, default_store
from cogcli.threads.undo import thread_runs
from workspace_tools.files.journal import Journal


class Runs:
    """Runs made as cog makes them, in any thread: the user entry, the signed journal record before
    each write, the write."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = default_store(root)
        self.journal = Journal(root)

    def thread(self, title: str) -> str:
        return self.store.create_thread(title=title).id

    def run(self, thread_id: str, text: str, *changes: tuple[str, bytes | None]) -> str:
        mid = f"msg_{uuid.uuid4().hex[:16]}"
        self.store.append(thread_id, [UserEntry(content=text, message_id=mid)], status="running")
        self.journal.begin(thread_id, mid)
        for rel, after in changes:
            path = self.root / rel
            before = path.read_bytes() if path.exists() else None
            mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
            self.journal.record(rel, before=before, after=after, mode=mode)
            if after is None:
                path.unlink()
            else:
                path.write_bytes(after)
        self.store.append(thread_id, [AssistantEntry(content=f"did {text}")], status="completed")
        return mid

    def close(self) -> None:
        self.journal.close()
        self.store.close()


@pytest.fixture
def runs(make_repo: Callable[..., Path]) -> Runs:
    root = make_repo("calc")
    (root / "a.txt").write_bytes(b"a0\n")
    (root / "b.txt").write_bytes(b"b0\n")
    made = Runs(root)
    yield made
    made.close()


def read(root: Path, *names: str) -> list[bytes | None]:
    return [(root / n).read_bytes() if (root / n).exists() else None for n in names]


def test_interleaved_threads_are_walked_back_in_the_order_they_ran(runs: Runs) -> None:
    root = runs.root
    a, b = runs.thread("A"), runs.thread("B")
    runs.run(a, "A one", ("a.txt", b"a1\n"))
    runs.run(b, "B one", ("b.txt", b"b1\n"), ("new.txt", b"made\n"))
    runs.run(a, "A two", ("a.txt", b"a2\n"))
    runs.run(b, "B looked")  # changed no files: skipped by the walk

    listed = run_cog(["undo", "--list"], root)
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert rows[0].startswith("the runs of this workspace, newest first")
    assert [r.split()[0] for r in rows[1:]] == ["4", "3", "2", "1"]
    assert f"3  {a} run 2  A two" in rows[2] and f"2  {b} run 1  B one" in rows[3] and f"1  {a} run 1  A one" in rows[4]

    first = run_cog(["undo"], root)
    assert first.returncode == 0, first.stderr
    assert f"walked back run 3 (A two; run 2 of thread {a}): reverted 1 file: a.txt" in first.stderr
    assert read(root, "a.txt", "b.txt", "new.txt") == [b"a1\n", b"b1\n", b"made\n"]
    second = run_cog(["undo"], root)
    assert second.returncode == 0, second.stderr
    assert f"walked back run 2 (B one; run 1 of thread {b}): reverted 2 files: new.txt (deleted), b.txt" in second.stderr
    assert read(root, "a.txt", "b.txt", "new.txt") == [b"a1\n", b"b0\n", None]
    third = run_cog(["undo"], root)
    assert third.returncode == 0 and "walked back run 1 (A one" in third.stderr
    assert read(root, "a.txt", "b.txt") == [b"a0\n", b"b0\n"]
    done = run_cog(["undo"], root)
    assert done.returncode == 2 and "nothing to undo: every run in this workspace that changed files was undone already" in done.stderr

    listed = run_cog(["undo", "--list"], root).stdout
    assert "A two  [files undone]" in listed and "B one  [files undone]" in listed and "B looked\n" in listed
    # each thread keeps its own undo entries: `cog thread show` marks its runs
    shown = run_cog(["thread", "show", b], root).stdout
    assert "── run 1 · " in shown and "files undone" in shown.split("── run 2")[0]


def test_a_file_a_later_run_of_another_thread_changed_is_refused_until_that_run_is_undone(runs: Runs) -> None:
    root = runs.root
    a, b = runs.thread("A"), runs.thread("B")
    runs.run(a, "A edits", ("a.txt", b"a1\n"))
    runs.run(b, "B edits the same", ("a.txt", b"a1\nb's line\n"))
    # the thread alone, as before: its run's file changed since (thread B's run), refused with what differs
    alone = run_cog(["undo", a], root)
    assert alone.returncode == 1, alone.stderr
    assert "undo refused: a.txt changed since the run" in alone.stderr and "+b's line" in alone.stderr
    assert read(root, "a.txt") == [b"a1\nb's line\n"]
    # by hand, after the newest run: the workspace's walk refuses too, and writes nothing
    (root / "a.txt").write_bytes(b"a1\nb's line\nmine\n")
    mine = run_cog(["undo"], root)
    assert mine.returncode == 1 and "a.txt changed since the run" in mine.stderr and "+mine" in mine.stderr
    assert read(root, "a.txt") == [b"a1\nb's line\nmine\n"]
    (root / "a.txt").write_bytes(b"a1\nb's line\n")  # as the run left it
    dry = run_cog(["undo", "--to", "1", "--dry-run"], root)
    assert dry.returncode == 0, dry.stderr
    assert "-a1\n-b's line\n+a0\n" in dry.stdout  # both runs at once: a.txt straight back to before run 1
    assert f"would revert 1 file: a.txt" in dry.stderr and "runs 2 (B edits the same; run 1 of thread " in dry.stderr
    assert run_cog(["undo"], root).returncode == 0 and run_cog(["undo"], root).returncode == 0
    assert read(root, "a.txt") == [b"a0\n"]


def test_a_named_thread_is_walked_alone(runs: Runs) -> None:
    root = runs.root
    a, b = runs.thread("A"), runs.thread("B")
    runs.run(a, "A one", ("a.txt", b"a1\n"))
    runs.run(b, "B one", ("b.txt", b"b1\n"))
    out = run_cog(["undo", a], root)
    assert out.returncode == 0 and f"walked back run 1 (A one) of thread {a}" in out.stderr
    assert read(root, "a.txt", "b.txt") == [b"a0\n", b"b1\n"]  # B's run kept
    again = run_cog(["undo", a], root)
    assert again.returncode == 2 and f"every run of thread {a} that changed files was undone already" in again.stderr
    listed = run_cog(["undo", a, "--list"], root)
    assert listed.stdout.splitlines()[0].startswith("the runs of this thread") and "1  A one  [files undone]" in listed.stdout
    assert run_cog(["undo", "thr_nosuch", "--list"], root).returncode == 2
    # the workspace's walk skips what the thread's undo did
    rest = run_cog(["undo"], root)
    assert rest.returncode == 0 and "B one" in rest.stderr and read(root, "b.txt") == [b"b0\n"]


def test_a_run_put_back_by_hand_says_so_and_suggests_only_an_earlier_run(runs: Runs) -> None:
    root = runs.root
    a, b = runs.thread("A"), runs.thread("B")
    runs.run(a, "only run", ("a.txt", b"a1\n"))
    (root / "a.txt").write_bytes(b"a0\n")  # reverted by hand
    out = run_cog(["undo"], root)
    assert out.returncode == 2
    assert "the files of run 1 (only run; run 1 of thread" in out.stderr and "are as they were before it" in out.stderr
    assert "--to" not in out.stderr and "no run before it" in out.stderr
    runs.run(b, "second", ("b.txt", b"b1\n"))
    (root / "b.txt").write_bytes(b"b0\n")
    out = run_cog(["undo"], root)
    assert out.returncode == 2 and "walk further back with --to 1: run 1 (only run) too" in out.stderr
    with_thread = run_cog(["undo", a], root)  # one thread's only run: no --to 1 about run 1 itself
    assert with_thread.returncode == 2 and "--to" not in with_thread.stderr


def test_three_cog_edit_runs_each_in_its_own_thread_are_undone_one_after_another(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    """The newcomer's case: three separate `cog edit` runs (three threads), then `cog undo` three times."""
    root = make_repo("calc")
    for n in (1, 2, 3):
        cassette = tmp_path / f"write{n}.jsonl"
        turns = [{"type": "cassette", "schemaVersion": 1, "model": "openai:gpt-4o", "createdAt": "2026-12-02T14:00:00Z"},
                 {"type": "turn", "text": "", "toolCalls": [{"id": f"c{n}", "name": "write_file", "arguments": {"path": f"note{n}.txt", "content": f"{n}\n"}}],
                  "usage": {"inputTokens": 10, "outputTokens": 5}, "stopReason": "tool_calls"},
                 {"type": "turn", "text": "Done.", "toolCalls": [], "usage": {"inputTokens": 10, "outputTokens": 5}, "stopReason": "stop"}]
        cassette.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
        edit = run_cog(["edit", "--yes", "--model", f"replay:{cassette}", f"Write note {n}"], root)
        assert edit.returncode == 0, edit.stderr
    assert len(json.loads(run_cog(["thread", "list", "--json"], root).stdout)) == 3
    for n in (3, 2, 1):
        undo = run_cog(["undo"], root)
        assert undo.returncode == 0, undo.stderr
        named = f"walked back run {n} (Write note {n}; run 1 of thread thr_" if n > 1 else "walked back run 1 (Write note 1) of thread thr_"
        assert named in undo.stderr and f"note{n}.txt (deleted)" in undo.stderr
        assert not (root / f"note{n}.txt").exists() and (n == 1 or (root / f"note{n - 1}.txt").exists())
    assert run_cog(["undo"], root).returncode == 2


def test_an_answer_sent_back_is_no_run_of_its_own(runs: Runs) -> None:
    """--output-schema sends an invalid answer back as a user entry of the same run: one run, one number."""
    a = runs.thread("A")
    mid = runs.run(a, "one", ("a.txt", b"a1\n"))
    runs.store.append(a, [UserEntry(content="Your final answer is not valid …", message_id=mid)])
    runs.run(a, "two", ("a.txt", b"a2\n"))
    assert [(r.number, r.instruction) for r in thread_runs(runs.store.entries(a))] == [(1, "one"), (2, "two")]
    listed = run_cog(["undo", "--list"], runs.root).stdout
    assert "  2  " in listed and "  3  " not in listed
