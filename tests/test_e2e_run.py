"""End to end: the agent fixes fixtures/calc over real loopback HTTP (OpenAI wire format) with the
real workspace tools and a real pytest run, and the same scenario replayed from its cassette.

The model's script is the demo cassette (read → run_tests → edit → run_tests → answer), served by
the loopback server for the HTTP run and played by ``replay:`` for the other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from model_servers import OpenAIServer, replies_from_cassette

from cogcli.wire.events import BaseEvent
from cogcli.contract.invoke import ToolResult
from cogcli.threads.store import default_store
from cogcli.models import get_model
from cogcli.loop.runtime import Agent, Cogitator, RunResult
from workspace_tools import workspace_tools

ROOT = Path(__file__).resolve().parents[1]
CASSETTE = ROOT / "fixtures" / "cassettes" / "calc_fix.jsonl"
INSTRUCTIONS = "You fix bugs in this repository. Read, edit, then test."


async def fix_calc(repo: Path, model: Any) -> tuple[RunResult, list[BaseEvent], list[ToolResult]]:
    events: list[BaseEvent] = []
    results: list[ToolResult] = []
    agent = Agent(name="cog", instructions=INSTRUCTIONS, model=model, tools=workspace_tools(repo))
    with default_store(repo) as store:
        try:
            result = await Cogitator(store).run(
                agent, input="Fix the failing test", on_event=events.append, on_tool_result=results.append
            )
        finally:
            await model.aclose()
    return result, events, results


def of_type(events: list[BaseEvent], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_agent_fixes_calc_over_openai_http_with_details_kept_from_the_model(make_repo: Callable[..., Path]) -> None:
    repo = make_repo("calc")
    with OpenAIServer(replies_from_cassette(CASSETTE)) as server:
        model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")
        result, events, results = await fix_calc(repo, model)
        bodies = [r.body for r in server.requests]

    # the file changed, the tests pass, the run says so
    assert result.status == "completed", (result.error, [r.error for r in results])
    assert "return a + b" in (repo / "calc" / "ops.py").read_text(encoding="utf-8")
    assert [r.name for r in results] == ["read_file", "run_tests", "edit_file", "run_tests"]
    assert all(r.ok for r in results)
    finish = of_type(events, "finish")[0]
    assert finish is events[-1] and len(of_type(events, "finish")) == 1
    assert [(f.path, f.added, f.removed) for f in finish.files_changed] == [("calc/ops.py", 1, 1)]
    assert finish.tests is not None and finish.tests["passed"] == 3 and finish.tests["failed"] == 0
    assert finish.steps == 5 and finish.usage.input_tokens == 812 + 1004 + 1391 + 1602 + 1790

    # the diff arrived in details: to on_tool_result and the tool-result event
    edit = results[2]
    diff = edit.details["diff"]
    assert "-    return a - b" in diff and "+    return a + b" in diff and "@@" in diff
    assert of_type(events, "tool-result")[2].details["diff"] == diff

    # the server got content only: no diff, no details, no presentation
    assert len(bodies) == 5
    sent = json.dumps(bodies)
    for piece in (diff, "@@ -1,", "--- a/calc/ops.py", "+++ b/calc/ops.py", "output_tail", "flask-conical", "file-pen"):
        assert piece not in sent, piece
    for r in results:
        assert json.dumps(r.presentation.model_dump(exclude_none=True)) not in sent
        assert r.presentation.label not in sent
    tool_messages = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [r.model_text(20_000) for r in results]

    # progress: one update per test, all before its run_tests result
    for call in (r for r in results if r.name == "run_tests"):
        updates = [e for e in of_type(events, "tool-update") if e.tool_call_id == call.call_id]
        outcome = next(e for e in of_type(events, "tool-result") if e.tool_call_id == call.call_id)
        assert len(updates) == 3
        assert all(u.seq < outcome.seq for u in updates)
    first_run, last_run = results[1], results[3]
    assert first_run.details["failed"] == 1 and last_run.details["passed"] == 3

    # the thread re-reads with the same rows
    with default_store(repo) as store:
        redrawn = store.thread_events(result.thread_id)
    live_rows = [(e.tool_call_id, e.presentation, e.details, e.result, e.error) for e in of_type(events, "tool-result")]
    thread_rows = [(e.tool_call_id, e.presentation, e.details, e.result, e.error) for e in of_type(redrawn, "tool-result")]
    assert thread_rows == live_rows
    assert [e.presentation.label for e in of_type(redrawn, "tool-call-start")] == ["Read file", "Run tests", "Edit file", "Run tests"]


# --- the same run from the cassette ---------------------------------------------------------

_TIMES = re.compile(r"\d+(\.\d+)? ?s\b")


def comparable(events: list[BaseEvent], repo: Path) -> list[Any]:
    """Events with ids, timestamps, durations and fragment boundaries taken out."""
    out: list[dict[str, Any]] = []
    for e in events:
        data = e.to_wire()
        for key in ("seq", "timestamp", "durationMs", "messageId", "threadId"):
            data.pop(key, None)
        if data["type"].startswith("text-"):
            data.pop("id")
        prev = out[-1] if out else None
        if prev is not None and data["type"] == prev["type"] == "text-delta":
            prev["delta"] += data["delta"]
            continue
        if prev is not None and data["type"] == prev["type"] == "tool-call-delta" and data["id"] == prev["id"]:
            prev["argsTextDelta"] += data["argsTextDelta"]
            continue
        out.append(data)
    return untimed(json.loads(json.dumps(out).replace(str(repo), "<repo>")))


_TIMING_KEYS = {"duration", "duration_s", "start", "stop"}


def untimed(value: Any) -> Any:
    """``value`` with clock readings (timing keys, "0.12 s" in text) replaced by a marker."""
    if isinstance(value, dict):
        return {k: "<t>" if k in _TIMING_KEYS else untimed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    if isinstance(value, str):
        return _TIMES.sub("<t>", value)
    return value


@pytest.mark.anyio
async def test_the_cassette_replays_the_http_run_event_for_event(make_repo: Callable[..., Path]) -> None:
    over_http = make_repo("calc", dest="http")
    replayed = make_repo("calc", dest="replay")
    with OpenAIServer(replies_from_cassette(CASSETTE)) as server:
        http_model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")
        http_result, http_events, _ = await fix_calc(over_http, http_model)
    replay_result, replay_events, _ = await fix_calc(replayed, get_model(f"replay:{CASSETTE}"))

    assert http_result.status == replay_result.status == "completed"
    assert (over_http / "calc" / "ops.py").read_text() == (replayed / "calc" / "ops.py").read_text()
    a, b = comparable(http_events, over_http), comparable(replay_events, replayed)
    for e in a:  # the demo cassette predates costs: the live run prices gpt-4o, the replay has no cost to play
        if e["type"] == "finish":
            assert e["usage"].pop("costUsd") > 0
    # each start names the model it ran (the replay its cassette)
    assert [e.pop("model") for e in a if e["type"] == "start"] == ["openai:gpt-4o"]
    assert [e.pop("model") for e in b if e["type"] == "start"] == [f"replay:{CASSETTE}"]
    assert [e["type"] for e in a] == [e["type"] for e in b]
    assert a == b
    assert any(e["type"] == "tool-update" for e in a)
