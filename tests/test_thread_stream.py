"""A stored thread sent as SSE a part at a time (issue 53, cogcli/server/thread_stream.py): the parts
give exactly the events of the whole thread, whatever the part sizes, over the API as in process, and
Last-Event-ID skips what a client already has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import Served
from test_serve_long_thread import ROWS, long_thread

from cogcli.models.base import ToolCallRequest
from cogcli.server import thread_stream
from cogcli.server.thread_stream import ThreadParts
from cogcli.threads.entries import AssistantEntry, ModelToolResult, RunEndEntry, ToolResultEntry, ToolResultMetadata, UserEntry
from cogcli.threads.store import default_store


def varied_thread(repo: Path) -> str:
    """Three runs: texts without calls, two calls in one turn (one run with other arguments than the
    model streamed: a tool-update), a follow-up input of the same run, a failed run."""
    entries: list[Any] = []
    for run in range(3):
        mid = f"msg_{run}"
        entries.append(UserEntry(content=f"task {run}", message_id=mid))
        for step in range(4):
            calls = [ToolCallRequest(id=f"r{run}s{step}c{n}", name="read_file", arguments={"path": f"a{n}.py"}) for n in range(2)]
            entries.append(AssistantEntry(content=f"run {run} step {step}", tool_calls=calls))
            entries.append(ToolResultEntry(
                tool_results=[ModelToolResult(call_id=c.id, name=c.name, content="x\n") for c in calls],
                metadata=ToolResultMetadata(content="x\n", arguments={"path": "other.py"} if step == 1 else None, duration_ms=1,
                                            presentation={"label": "Read file", "icon": "file", "detail": "a.py"}),
            ))
        entries.append(AssistantEntry(content="done"))
        if run == 1:
            entries.append(UserEntry(content="as JSON please", message_id=mid))  # the same run's follow-up
            entries.append(AssistantEntry(content="{}"))
        entries.append(RunEndEntry(status="error" if run == 2 else "completed", steps=4, message_id=mid,
                                   error="boom" if run == 2 else None))
    with default_store(repo) as store:
        info = store.create_thread(title="varied")
        store.append(info.id, entries, status="completed")
    return info.id


def whole(repo: Path, thread: str) -> list[str]:
    from cogcli.render.jsonl import event_bytes

    with default_store(repo) as store:
        return [event_bytes(e).decode() for e in store.thread_events(thread)]


def in_parts(repo: Path, thread: str) -> list[list[str]]:
    parts = ThreadParts(repo, thread)
    try:
        out = []
        while (part := parts.next_part()) is not None:
            assert [seq for seq, _ in part] == [json.loads(d)["seq"] for _, d in part]
            out.append([d.decode() for _, d in part])
        return out
    finally:
        parts.close()


@pytest.mark.parametrize("first, size", [(1, 1), (2, 3), (5, 7), (400, 1000)])
def test_the_parts_are_the_whole_threads_events_whatever_their_sizes(make_repo, monkeypatch, first: int, size: int) -> None:
    repo = make_repo("calc")
    thread = varied_thread(repo)
    monkeypatch.setattr(thread_stream, "FIRST_PART", first)
    monkeypatch.setattr(thread_stream, "PART", size)
    parts = in_parts(repo, thread)
    expected = whole(repo, thread)
    assert [line for part in parts for line in part] == expected
    assert any('"type":"tool-update"' in line for line in expected)  # the changed arguments came through
    assert (len(parts) > 3) == (first < 400)  # small sizes: many parts


def test_a_long_thread_comes_first_part_first_over_the_api_and_resumes_after_last_event_id(make_repo) -> None:
    repo = make_repo("calc")
    thread = long_thread(repo)
    with Served(repo) as srv:
        listed = srv.client.get(f"/api/threads/{thread}/events").json()  # the JSON array: whole, as before
        streamed = [f for f in srv.sse(f"/api/threads/{thread}/events")]
        resumed = [f for f in srv.sse(f"/api/threads/{thread}/events", last_event_id=5000)]
        missing = srv.client.get("/api/threads/thr_nope/events", headers={"Accept": "text/event-stream"})
        bad = srv.client.get(f"/api/threads/{thread}/events", headers={"Accept": "text/event-stream", "Last-Event-ID": "x"})
    assert sum(e["type"] == "tool-call-start" for e in listed) == ROWS
    assert [json.loads(f.data) for f in streamed[:-1]] == listed and streamed[-1].data == "[DONE]"
    assert [int(f.id) for f in streamed[:-1]] == [e["seq"] for e in listed]
    assert [json.loads(f.data) for f in resumed[:-1]] == [e for e in listed if e["seq"] > 5000] and resumed[-1].data == "[DONE]"
    assert missing.status_code == 404 and "thr_nope" in missing.json()["error"]
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_REQUEST"
