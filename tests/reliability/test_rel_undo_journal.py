"""Issue 13 §3: write-ahead undo. What a run is about to change is on disk (fsync'd) before the
file is written, so ``cog undo`` works after a kill or a full disk at any point, and an edit whose
record cannot be written is refused with the file left as it was.

Reproduced first: the file was written before the thread recorded the change, so a ``kill -9`` in
between (or ``database or disk is full`` when the thread is written) left a changed file that
``cog undo`` said it had nothing for — ``test_without_a_journal_undo_has_nothing_for_a_killed_run``."""

from __future__ import annotations

import errno
import json
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_helpers import cog_argv, cog_env, run_cog
from model_servers import OpenAIServer, Reply, ToolCall

from cogcli.contract.invoke import invoke_tool
from cogcli.threads.store import ThreadStore, UserEntry, default_store
from workspace_tools import workspace_tools
from workspace_tools.files.journal import Journal, read_journal

OPS = Path("calc") / "ops.py"
OLD = '    """Return the sum of a and b."""\n    return a - b'
NEW = '    """Return the sum of a and b."""\n    return a + b'


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    return make_repo("calc")


def _edit(root: Path, journal: Journal | None, path: str = str(OPS), old: str = OLD, new: str = NEW) -> Any:
    tool = next(t for t in workspace_tools(root, include_git=False, journal=journal) if t.name == "edit_file")
    return anyio.run(invoke_tool, tool, {"path": path, "old_text": old, "new_text": new})


def _started_run(root: Path) -> tuple[str, str]:
    """A thread whose last run has started (its user entry stored) and recorded nothing else:
    what a kill between a tool's write and the thread's record leaves."""
    with default_store(root) as store:
        thread_id = store.create_thread().id
        message_id = "msg_killedrun0000000001"
        store.append(thread_id, [UserEntry(content="Fix the failing test", message_id=message_id)], status="running")
    return thread_id, message_id


def test_without_a_journal_undo_has_nothing_for_a_killed_run(calc: Path) -> None:
    before = (calc / OPS).read_bytes()
    _started_run(calc)
    assert _edit(calc, None).ok and (calc / OPS).read_bytes() != before
    undo = run_cog(["undo"], calc)
    assert undo.returncode == 2 and "nothing to undo" in undo.stderr  # the bug: the edit cannot be undone


def test_a_change_recorded_before_the_write_is_undone_after_a_kill(calc: Path) -> None:
    before = (calc / OPS).read_bytes()
    thread_id, message_id = _started_run(calc)
    journal = Journal(calc)
    journal.begin(thread_id, message_id)
    assert _edit(calc, journal).ok
    assert _edit(calc, journal, old="    return a * b", new="    return a * b  # times").ok
    created = next(t for t in workspace_tools(calc, include_git=False, journal=journal) if t.name == "write_file")
    assert anyio.run(invoke_tool, created, {"path": "calc/new.py", "content": "x = 1\n"}).ok
    journal.close()
    assert [c.path for c in read_journal(calc, message_id) or []] == [str(OPS), str(OPS), "calc/new.py"]

    undo = run_cog(["undo"], calc)
    assert undo.returncode == 0, undo.stderr
    assert (calc / OPS).read_bytes() == before and not (calc / "calc" / "new.py").exists()
    assert run_cog(["undo"], calc).returncode == 2  # once


def test_a_record_whose_write_never_landed_is_skipped_and_a_later_change_refused(calc: Path) -> None:
    thread_id, message_id = _started_run(calc)
    journal = Journal(calc)
    journal.begin(thread_id, message_id)
    # recorded, then killed before the rename: the file still holds what the record found
    journal.record(str(OPS), before=(calc / OPS).read_bytes(), after=b"never written\n", mode=0o644)
    undo = run_cog(["undo"], calc)
    assert undo.returncode == 2 and "as they were before it" in undo.stderr
    assert _edit(calc, journal).ok
    (calc / OPS).write_text((calc / OPS).read_text() + "# mine\n")
    undo = run_cog(["undo"], calc)
    assert undo.returncode == 1 and "calc/ops.py changed since the run" in undo.stderr


def test_an_edit_whose_record_cannot_be_written_is_refused_and_the_file_left(calc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workspace_tools.files.journal as journal_module

    before = (calc / OPS).read_bytes()
    journal = Journal(calc)
    journal.begin("thr_x", "msg_diskfull")
    real = journal_module.write_at

    def full_disk(dir_fd: int, name: str, data: bytes, **options: Any) -> None:
        if name.endswith((".before", ".json")) and name != "run.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(dir_fd, name, data, **options)

    monkeypatch.setattr(journal_module, "write_at", full_disk)
    result = _edit(calc, journal)
    assert not result.ok and "No space left on device" in (result.error or "") and "left as it was" in (result.error or "")
    assert (calc / OPS).read_bytes() == before
    assert read_journal(calc, "msg_diskfull") == []  # no half record


def test_a_journal_that_cannot_start_refuses_every_edit(calc: Path) -> None:
    (calc / ".cog").write_text("not a folder\n")
    before = (calc / OPS).read_bytes()
    journal = Journal(calc)
    journal.begin("thr_x", "msg_cogfile")
    result = _edit(calc, journal)
    assert result.error_code == "TOOL_ERROR" and ".cog is not a folder" in (result.error or "")
    assert (calc / OPS).read_bytes() == before


class _FullDiskStore(ThreadStore):
    """A thread store whose disk fills after the run's first entry: every later write fails."""

    def append(self, thread_id: str, entries: Any, *, status: str | None = None) -> None:
        if any(not isinstance(e, UserEntry) for e in entries):
            raise sqlite3.OperationalError("database or disk is full")
        super().append(thread_id, entries, status=status)


@pytest.mark.anyio
async def test_a_full_disk_when_the_thread_is_written_still_leaves_an_undoable_edit(calc: Path) -> None:
    from cogcli.models.scripted import Call, ScriptedModel, Turn

    from cogcli.loop.runtime import Agent, Cogitator

    before = (calc / OPS).read_bytes()
    journal = Journal(calc)
    model = ScriptedModel([Turn("", [Call("c1", "edit_file", {"path": str(OPS), "old_text": OLD, "new_text": NEW})]), Turn("done")])
    events: list[Any] = []

    def on_event(event: Any) -> None:
        if event.type == "start":
            journal.begin(event.thread_id, event.message_id)
        events.append(event)

    store = _FullDiskStore(calc / ".cog" / "threads.db", workspace=calc)
    agent = Agent(name="t", instructions="x", model=model, tools=workspace_tools(calc, include_git=False, journal=journal))
    try:
        await Cogitator(store).run(agent, input="Fix the failing test", on_event=on_event)
    finally:
        store.close()
        journal.close()
    assert (calc / OPS).read_bytes() != before  # the edit landed, the thread could not record it
    assert events[-1].type == "finish"
    undo = await anyio.to_thread.run_sync(lambda: run_cog(["undo"], calc))
    assert undo.returncode == 0, undo.stderr
    assert (calc / OPS).read_bytes() == before


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.slow
def test_cog_edit_killed_after_its_edit_is_undone(calc: Path) -> None:
    """A real ``cog edit`` against a loopback model: the model asks for the edit, then never answers
    again; the run is SIGKILLed once the edit's result is out; ``cog undo`` puts the file back."""
    before = (calc / OPS).read_bytes()
    release = threading.Event()

    def hang(_request: Any) -> Reply:
        release.wait(60)
        return Reply("late")

    with OpenAIServer([Reply("", [ToolCall("c1", "edit_file", {"path": str(OPS), "old_text": OLD, "new_text": NEW})]), hang]) as server:
        env = cog_env({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-key-0000"})
        proc = subprocess.Popen([*cog_argv(), "edit", "--json", "--model", "openai:gpt-4o", "--sandbox", "off", "Fix it"],
                                cwd=calc, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line)["type"] == "tool-result":
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        release.set()
    assert (calc / OPS).read_bytes() != before
    undo = run_cog(["undo"], calc)
    assert undo.returncode == 0, undo.stderr
    assert (calc / OPS).read_bytes() == before
