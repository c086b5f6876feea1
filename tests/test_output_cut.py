"""A turn the model stopped at its output limit: the call whose arguments were cut is never run.

Over real loopback HTTP in both providers' streaming formats (OpenAI ``finish_reason: "length"``,
Anthropic ``stop_reason: "max_tokens"``), and replayed from the cassette the HTTP run recorded: a
``write_file`` cut mid-arguments writes nothing and ends ``OUTPUT_CUT``, the model's next request
carries the error text, the complete call of the same turn runs, and the run goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from model_servers import AnthropicServer, OpenAIServer, Reply, ToolCall

from cogcli.wire.events import BaseEvent
from cogcli.contract.invoke import ToolResult
from cogcli.threads.store import default_store
from cogcli.models import get_model
from cogcli.models.record import RecordingModel
from cogcli.loop.runtime import Agent, Cogitator, RunResult
from workspace_tools import workspace_tools

#: the argument text of a write_file the output limit cut inside its content string
CUT_ARGS = '{"path": "big.txt", "content": "line 1\\nline 2\\nli'
CUT_TEXT = "your reply was cut at the output limit while writing the arguments of write_file"


def script(stop_reason: str) -> list[Reply]:
    return [
        Reply("Writing both files.", [
            ToolCall("c1", "write_file", {"path": "small.txt", "content": "whole\n"}),
            ToolCall("c2", "write_file", CUT_ARGS),
        ], stop_reason=stop_reason),
        Reply("Again, in two parts.", [ToolCall("c3", "write_file", {"path": "big.txt", "content": "line 1\n"})]),
        Reply("Done."),
    ]


async def run(repo: Path, model: Any) -> tuple[RunResult, list[BaseEvent], list[ToolResult]]:
    events: list[BaseEvent] = []
    results: list[ToolResult] = []
    agent = Agent(name="cog", instructions="Write files.", model=model, tools=workspace_tools(repo))
    with default_store(repo) as store:
        try:
            result = await Cogitator(store).run(agent, input="write them", on_event=events.append, on_tool_result=results.append)
        finally:
            await model.aclose()
    return result, events, results


def check_run(repo: Path, result: RunResult, events: list[BaseEvent], results: list[ToolResult]) -> None:
    assert result.status == "completed", result.error
    results = sorted(results, key=lambda r: r.call_id)  # in the order they ended: the cut one first
    assert [(r.call_id, r.error_code) for r in results] == [("c1", None), ("c2", "OUTPUT_CUT"), ("c3", None)]
    cut = results[1]
    assert CUT_TEXT in (cut.error or "") and "shorter arguments" in (cut.error or "")
    # the complete call of the cut turn ran; the cut one wrote nothing, its retry did
    assert (repo / "small.txt").read_text(encoding="utf-8") == "whole\n"
    assert (repo / "big.txt").read_text(encoding="utf-8") == "line 1\n"
    # each started call still has its end and its one result on the wire
    ended = [e for e in events if e.type == "tool-call-end"]  # type: ignore[attr-defined]
    assert [e.id for e in ended] == ["c1", "c2", "c3"]  # type: ignore[attr-defined]
    assert sorted(e.tool_call_id for e in events if e.type == "tool-result") == ["c1", "c2", "c3"]  # type: ignore[attr-defined]


def tool_messages(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages"))


@pytest.mark.anyio
@pytest.mark.parametrize(("server_type", "model_name", "stop_reason"), [
    (OpenAIServer, "openai:gpt-4o", "length"),
    (AnthropicServer, "anthropic:claude-sonnet-4-5", "max_tokens"),
])
async def test_a_call_cut_by_the_output_limit_is_not_run_and_the_model_is_told(
    make_repo: Callable[..., Path], tmp_path: Path, server_type: Any, model_name: str, stop_reason: str,
) -> None:
    repo = make_repo("calc")
    with server_type(script(stop_reason)) as server:
        model = get_model(model_name, base_url=server.base_url, api_key="sk-test")
        # the first write of big.txt would leave it with the cut text: watch that it never exists
        assert not (repo / "big.txt").exists()
        result, events, results = await run(repo, model)
        bodies = [r.body for r in server.requests]

    check_run(repo, result, events, results)
    assert len(bodies) == 3
    assert CUT_TEXT not in tool_messages(bodies[0])
    assert CUT_TEXT in tool_messages(bodies[1])  # the next request tells the model
    assert result.steps == 3 and result.output == "Done."


@pytest.mark.anyio
async def test_only_the_cut_call_fails_and_a_text_only_cut_turn_ends_the_run_as_before(make_repo: Callable[..., Path]) -> None:
    repo = make_repo("calc")
    script = [
        Reply("", [ToolCall("c1", "write_file", CUT_ARGS)], stop_reason="length"),
        Reply("The answer is long and was cut he", stop_reason="length"),
    ]
    with OpenAIServer(script) as server:
        model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")
        result, _, results = await run(repo, model)
    assert not (repo / "big.txt").exists()
    assert [r.error_code for r in results] == ["OUTPUT_CUT"]
    assert result.status == "completed" and result.output == "The answer is long and was cut he"


@pytest.mark.anyio
async def test_the_cassette_keeps_the_stop_reason_and_replays_the_cut(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    cassette = tmp_path / "cut.jsonl"
    first = make_repo("calc", dest="recorded")
    with OpenAIServer(script("length")) as server:
        model = RecordingModel(get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test"), cassette)
        check_run(first, *await run(first, model))

    turns = [json.loads(line) for line in cassette.read_text(encoding="utf-8").splitlines()][1:]
    assert [t.get("stopReason") for t in turns] == ["length", "tool_calls", "stop"]
    assert turns[0]["toolCalls"][1]["arguments"] == CUT_ARGS  # kept as the text that was cut

    replayed = make_repo("calc", dest="replayed")
    check_run(replayed, *await run(replayed, get_model(f"replay:{cassette}")))
