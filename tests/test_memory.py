"""Threads in SQLite: the workspace store, ids and prefixes, atomic steps, a killed process,
and the history builder that never reads metadata."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cogcli.models.scripted import Call, ScriptedModel, Turn

from cogcli.contract.errors import ConfigError
from cogcli.threads.history import MISSING_RESULT, build_history
from cogcli.threads.store import (
    AssistantEntry,
    ModelToolResult,
    StoredEntry,
    ThreadStore,
    ToolResultEntry,
    ToolResultMetadata,
    UserEntry,
    default_store,
    default_store_path,
)
from cogcli.models.base import ToolCallRequest
from cogcli.loop.runtime import Agent, Cogitator

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


# --- the workspace store -------------------------------------------------------------------


def test_default_store_lives_in_dot_cog_and_is_excluded_through_info_exclude(make_repo: Callable[..., Path]) -> None:
    repo = make_repo("calc")
    with default_store(repo) as store:
        store.create_thread(title="hello")
        mode = store._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert default_store_path(repo) == repo / ".cog" / "threads.db"
    assert default_store_path(repo).is_file()
    with default_store(repo):  # a second open adds no second line
        pass
    exclude = (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8").splitlines()
    assert exclude.count("/.cog/") == 1
    assert not (repo / ".gitignore").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_default_store_outside_git_touches_no_git_files(tmp_path: Path) -> None:
    with default_store(tmp_path) as store:
        info = store.create_thread(title="x")
        assert store.workspace == str(tmp_path.resolve())
        assert store.get_thread(info.id).workspace == str(tmp_path.resolve())
    assert not (tmp_path / ".git").exists()
    assert (tmp_path / ".cog" / "threads.db").is_file()


def test_threads_survive_reopening_and_are_listed_newest_first(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    with ThreadStore(db) as store:
        a = store.create_thread(title="first   task\nwith two lines", model="openai:gpt-4o")
        b = store.create_thread(title="second")
        store.append(a.id, [UserEntry(content="later input")], status="completed")
    with ThreadStore(db) as store:
        listed = store.list_threads()
        assert [t.id for t in listed] == [a.id, b.id]  # a was updated last
        assert listed[0].title == "first task with two lines" and listed[0].model == "openai:gpt-4o"
        assert listed[0].status == "completed" and listed[1].status == "running"
        last = store.last_thread()
        assert last is not None and last.id == a.id
        assert [e.entry.content for e in last.entries] == ["later input"]


def test_thread_ids_resolve_by_unique_prefix(tmp_path: Path) -> None:
    with ThreadStore(tmp_path / "t.db") as store:
        store.create_thread("thr_abc111")
        store.create_thread("thr_abc222")
        store.create_thread("thr_x%_y")
        assert store.get_thread("thr_abc1").id == "thr_abc111"
        assert store.get_thread("thr_abc222").id == "thr_abc222"
        assert store.get_thread("thr_zzz") is None
        with pytest.raises(ConfigError, match="ambiguous.*thr_abc"):
            store.get_thread("thr_abc")
        # LIKE wildcards in an id are matched literally
        assert store.get_thread("thr_x%").id == "thr_x%_y"
        assert store.get_thread("thr_%") is None
        with pytest.raises(ConfigError, match="no thread 'nope'"):
            store.thread_events("nope")
        assert store.last_thread() is not None


def test_a_step_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    with ThreadStore(tmp_path / "t.db") as store:
        info = store.create_thread()
        store.append(info.id, [UserEntry(content="one")])
        with pytest.raises((KeyError, sqlite3.IntegrityError)):
            store.append("thr_missing", [UserEntry(content="a"), UserEntry(content="b")])
        rows = store._db.execute("SELECT thread_id, seq FROM entries ORDER BY rowid").fetchall()
        assert [tuple(r) for r in rows] == [(info.id, 0)]


def test_a_store_from_a_newer_cog_or_a_broken_file_is_a_clear_error(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    sqlite3.connect(newer).execute("PRAGMA user_version=99").connection.close()
    with pytest.raises(ConfigError, match="newer cog"):
        ThreadStore(newer)
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database, just some text long enough" * 40)
    with pytest.raises(ConfigError, match="cannot open thread store"):
        ThreadStore(broken)


@pytest.mark.anyio
async def test_continuing_a_thread_that_does_not_exist_fails_before_any_event() -> None:
    events: list[Any] = []
    agent = Agent(name="t", instructions="", model=ScriptedModel([Turn("hi")]), tools=[])
    with pytest.raises(ConfigError, match="no thread 'thr_nope'"):
        await Cogitator().run(agent, input="x", thread_id="thr_nope", on_event=events.append)
    assert events == []


# --- a killed process loses at most the step in flight -------------------------------------

KILLED_RUN = """
import sys, time
from pathlib import Path
import anyio
from pydantic import BaseModel
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli import tool, tool_output
from cogcli.threads.store import ThreadStore
from cogcli.loop.runtime import Agent, Cogitator

class Args(BaseModel):
    text: str

@tool(presentation={"label": "Note"})
async def note(params: Args):
    \"\"\"Write a note.\"\"\"
    return tool_output(params.text, details={"diff": "DETAILS_" + params.text})

@tool()
async def hang(params: Args):
    \"\"\"Hang.\"\"\"
    Path(sys.argv[2]).write_text("ready")
    await anyio.sleep_forever()

model = ScriptedModel([
    Turn("Noting.", [Call("c1", "note", {"text": "kept"})]),
    Turn("Hanging.", [Call("c2", "hang", {"text": "lost"})]),
])
agent = Agent(name="t", instructions="sys", model=model, tools=[note, hang])
anyio.run(lambda: Cogitator(ThreadStore(sys.argv[1])).run(agent, input="go"))
"""


def test_a_killed_run_keeps_every_completed_step(tmp_path: Path) -> None:
    script = tmp_path / "killed_run.py"
    script.write_text(textwrap.dedent(KILLED_RUN), encoding="utf-8")
    db, ready = tmp_path / "threads.db", tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, str(script), str(db), str(ready)], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the scripted run never reached its second tool"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stderr:
            proc.stderr.close()

    with ThreadStore(db) as store:
        thread = store.last_thread()
        assert thread is not None and thread.status == "running"  # it never got to say how it ended
        assert [e.entry.kind for e in thread.entries] == ["user", "assistant", "tool_result"]
        result = thread.entries[2].entry
        assert result.tool_results[0].content == "kept" and result.metadata.details == {"diff": "DETAILS_kept"}
        history = build_history("sys", thread.entries)
        assert [(m.role, m.content) for m in history] == [("system", "sys"), ("user", "go"), ("assistant", "Noting."), ("tool", "kept")]
        assert "DETAILS_" not in str([m.model_dump() for m in history])


# --- the history builder -------------------------------------------------------------------


def stored(*entries: Any) -> list[StoredEntry]:
    return [StoredEntry(seq=i, created_at="2026-12-01T00:00:00.000Z", entry=e) for i, e in enumerate(entries)]


def test_history_holds_what_the_model_read_and_never_metadata() -> None:
    entries = stored(
        UserEntry(content="fix it"),
        AssistantEntry(content="Editing.", tool_calls=[ToolCallRequest(id="c1", name="edit", arguments={"path": "a.py"})]),
        ToolResultEntry(
            tool_results=[ModelToolResult(call_id="c1", name="edit", content="1 replacement")],
            metadata=ToolResultMetadata(
                details={"diff": "SECRET_DIFF"},
                presentation={"label": "SECRET_LABEL"},
                content="SECRET_WHOLE_CONTENT",
                arguments={"path": "SECRET_ARGS"},
            ),
        ),
        AssistantEntry(content="Done."),
    )
    history = build_history("be careful", entries)
    assert [(m.role, m.content, m.tool_call_id) for m in history] == [
        ("system", "be careful", None),
        ("user", "fix it", None),
        ("assistant", "Editing.", None),
        ("tool", "1 replacement", "c1"),
        ("assistant", "Done.", None),
    ]
    assert "SECRET" not in str([m.model_dump() for m in history])


def test_history_gives_a_call_without_a_recorded_result_an_error_to_read() -> None:
    calls = [ToolCallRequest(id="c1", name="a", arguments={}), ToolCallRequest(id="c2", name="b", arguments={})]
    entries = stored(
        UserEntry(content="go"),
        AssistantEntry(content="", tool_calls=calls),
        ToolResultEntry(tool_results=[ModelToolResult(call_id="c1", name="a", content="ok")]),
        ToolResultEntry(tool_results=[ModelToolResult(call_id="zz", name="x", content="stray")]),
        UserEntry(content="again"),
        AssistantEntry(content=""),  # an empty answer: no message at all
    )
    history = build_history("", entries)
    assert [(m.role, m.tool_call_id, m.content) for m in history] == [
        ("user", None, "go"),
        ("assistant", None, ""),
        ("tool", "c1", "ok"),
        ("tool", "c2", MISSING_RESULT),
        ("user", None, "again"),
    ]


@pytest.mark.anyio
async def test_the_run_status_is_recorded_on_the_thread(tmp_path: Path) -> None:
    from runtime_helpers import echo

    store = ThreadStore(tmp_path / "t.db")
    model = ScriptedModel([Turn("", [Call("c1", "echo", {"text": "a"})]), Turn("", [Call("c2", "echo", {"text": "b"})])])
    agent = Agent(name="t", instructions="", model=model, tools=[echo], max_steps=1)
    result = await Cogitator(store).run(agent, input="loop")
    assert result.status == "max_steps"
    thread = store.get_thread(result.thread_id)
    assert thread.status == "max_steps"
    end = thread.entries[-1].entry
    assert end.kind == "run_end" and end.status == "max_steps" and end.steps == 1
    assert end.usage.total_tokens == 15


def test_an_unknown_thread_is_said_one_way() -> None:
    """``require_id`` is the one "no thread … (list them with `cog thread list`)" (issue 37: the run,
    the chat, /compact and the redraw each said it themselves)."""
    import pytest as _pytest

    from cogcli.contract.errors import ConfigError
    from cogcli.threads.store import ThreadStore

    store = ThreadStore(":memory:")
    made = store.create_thread(title="t").id
    assert store.require_id(made[:8]) == made
    with _pytest.raises(ConfigError, match=r"no thread 'nope' to continue \(list them with `cog thread list`\)"):
        store.require_id("nope", to=" to continue")
