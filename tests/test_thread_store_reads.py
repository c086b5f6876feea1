"""Reading a thread's entries straight from their stored JSON (issue 53): the same entries as
written, a newer cog's kinds left out, and a planted row validated like any other — the store is in
the workspace's ``.cog/``, which a hostile repository can fill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from cogcli.threads.entries import AssistantEntry, UserEntry
from cogcli.threads.store import ThreadStore


def plant(store: ThreadStore, thread_id: str, seq: int, kind: str, data: object) -> None:
    with store._lock:
        store._db.execute(
            "INSERT INTO entries (thread_id, seq, kind, data, created_at) VALUES (?,?,?,?,?)",
            (thread_id, seq, kind, json.dumps(data), "2026-12-06T00:00:00Z"),
        )
        store._db.commit()


def test_entries_read_back_as_written_and_a_newer_kind_is_left_out(tmp_path: Path) -> None:
    with ThreadStore(tmp_path / "t.db") as store:
        info = store.create_thread()
        written = [UserEntry(content="fix it", message_id="msg_1"), AssistantEntry(content="done")]
        store.append(info.id, written)
        plant(store, info.id, 2, "hologram", {"kind": "hologram", "x": 1})  # what a newer cog might write
        assert [s.entry for s in store.entries(info.id)] == written
        assert [s.entry for s in store.entries(info.id, kinds=["assistant", "hologram"])] == written[1:]


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("user", {"kind": "user", "content": 42}),  # a field of the wrong type
        ("user", {"kind": "hologram", "content": "x"}),  # a kind cog does not know under one it does
        ("assistant", "not an object"),
        ("user", {"kind": "user", "content": "x", "images": [{"media_type": "image/png", "data": 7}]}),
    ],
)
def test_a_planted_row_is_validated_and_refused(tmp_path: Path, kind: str, data: object) -> None:
    with ThreadStore(tmp_path / "t.db") as store:
        info = store.create_thread()
        store.append(info.id, [UserEntry(content="fine")])
        plant(store, info.id, 1, kind, data)
        with pytest.raises(ValidationError):
            store.entries(info.id)


def test_a_row_is_read_as_the_kind_its_json_says(tmp_path: Path) -> None:
    with ThreadStore(tmp_path / "t.db") as store:
        info = store.create_thread()
        plant(store, info.id, 0, "user", {"kind": "assistant", "content": "hi"})
        (stored,) = store.entries(info.id)
        assert isinstance(stored.entry, AssistantEntry) and stored.entry.content == "hi"


def test_the_history_is_read_without_the_calls_metadata_and_is_the_same(tmp_path: Path) -> None:
    """Continuing a thread reads what the model reads: each call's ``metadata`` (details, the whole
    content: most of a long thread's bytes) is left in SQLite, and the history is the same."""
    from cogcli.threads.entries import ModelToolResult, ToolResultEntry, ToolResultMetadata
    from cogcli.threads.history import build_history
    from cogcli.models.base import ToolCallRequest

    with ThreadStore(tmp_path / "t.db") as store:
        info = store.create_thread()
        store.append(info.id, [
            UserEntry(content="read it", message_id="msg_1"),
            AssistantEntry(content="", tool_calls=[ToolCallRequest(id="c1", name="read_file", arguments={"path": "a.py"})]),
            ToolResultEntry(tool_results=[ModelToolResult(call_id="c1", name="read_file", content="x = 1\n")],
                            metadata=ToolResultMetadata(content="x = 1\n" * 1000, details={"diff": "-" * 5000})),
        ])
        lean = store.history_entries(info.id)
        assert all(not s.entry.model_dump(exclude_defaults=True).get("metadata") for s in lean)
        assert build_history("sys", lean) == build_history("sys", store.entries(info.id))


@pytest.mark.parametrize("data", [
    {"kind": "tool_result", "tool_results": [{"call_id": "c1", "name": "read_file", "content": 7}]},  # what the model would read
    "{not json",
])
def test_a_planted_row_is_refused_when_the_history_is_read_too(tmp_path: Path, data: object) -> None:
    with ThreadStore(tmp_path / "t.db") as store:
        info = store.create_thread()
        store.append(info.id, [UserEntry(content="fine")])
        with store._lock:
            store._db.execute("INSERT INTO entries (thread_id, seq, kind, data, created_at) VALUES (?,?,?,?,?)",
                              (info.id, 1, "tool_result", data if isinstance(data, str) else json.dumps(data), "2026-12-06T00:00:00Z"))
        with pytest.raises(ValidationError):
            store.history_entries(info.id)
