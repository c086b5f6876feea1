"""Reasoning kept where a thread is reshaped, checked against the loopback Anthropic server (which
answers 400, as the API does, when the turn going on lacks the thinking it signed): a run walked
back with ``/rewind`` (``threads/rewind.py``) leaves the other runs' thinking verbatim and
``cog edit --thread`` sends it back; a compacted history still carries each kept turn's thinking
first, with its tool use; thinking tokens are output tokens in the usage, the cost and
``--max-tokens``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from cli_helpers import json_lines, run_cog
from model_servers import AnthropicServer, RedactedThinking, Reply, Thinking, ToolCall, collect

from cogcli.compaction import ContextBudget
from cogcli.models import Message, Reasoning, ToolCallRequest, ToolSpec, get_model
from cogcli.models.sse import RetryPolicy
from cogcli.session import Session
from cogcli.threads.history import build_history
from cogcli.threads.rewind import rewind_text
from cogcli.threads.store import AssistantEntry, ThreadStore

KEY = "sk-ant-test"
MODEL = "anthropic:claude-sonnet-4-5"
ONE = (Thinking("add subtracts? Read ops.py.", signature="EqQBsig1=="), RedactedThinking("EmwKrun1encrypted=="))
ONE_END = Thinking("It returns a - b.", signature="EqQBsig1end==")
TWO = Thinking("Now sub: read it too.", signature="EqQBsig2==")
TWO_END = Thinking("sub is right.", signature="EqQBsig2end==")
THREE = Thinking("The person asks again.", signature="EqQBsig3==")


def edit(repo: Path, server: AnthropicServer, *args: str, ok: bool = True) -> list[dict]:
    out = run_cog(["edit", "--json", "--model", MODEL, *args], repo,
                  env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.base_url, "COG_REASONING": "high"})
    assert (out.returncode == 0) is ok, out.stderr
    return json_lines(out.stdout)


@pytest.mark.slow  # three cog edit runs against a loopback model: about 15 s on a shared machine
def test_a_rewound_run_takes_its_thinking_with_it_and_the_rest_goes_back_verbatim_with_thread(make_repo) -> None:
    repo = make_repo("calc")
    script = [
        Reply("Reading.", [ToolCall("toolu_1", "read_file", {"path": "calc/ops.py"})], thinking=ONE), Reply("add returns a - b.", thinking=(ONE_END,)),
        Reply("Reading sub.", [ToolCall("toolu_2", "read_file", {"path": "calc/ops.py"})], thinking=(TWO,)), Reply("sub is fine.", thinking=(TWO_END,)),
        Reply("Still a - b.", thinking=(THREE,)),
    ]
    with AnthropicServer(script) as server:
        thread = edit(repo, server, "Why does add fail?")[-1]["threadId"]
        edit(repo, server, "--thread", thread, "And sub?")
        with Session(repo) as session:
            said = rewind_text(session, thread, "2 conversation")
            entries = session.store().entries(thread)
        history = build_history("", entries)
        edit(repo, server, "--thread", thread, "So what is wrong?")
    assert "walked back run 2" in said and "the model no longer reads it" in said, said
    # the model's history after the rewind: run 1's turns with their blocks as they came, run 2's gone
    kept = [m.reasoning for m in history if m.role == "assistant"]
    assert [[(b.kind, b.text, b.signature, b.data) for b in blocks] for blocks in kept] == [
        [("thinking", ONE[0].text, ONE[0].signature, None), ("redacted_thinking", "", None, ONE[1].data)],
        [("thinking", ONE_END.text, ONE_END.signature, None)],
    ]
    # the request of the run after the rewind: run 1's thinking first in its turns, verbatim; nothing of run 2
    body = server.requests[4].body
    sent = json.dumps(body)
    assert "Reading sub." not in sent and TWO.signature not in sent and TWO_END.signature not in sent
    tool_turn, answer = body["messages"][1]["content"], body["messages"][3]["content"]
    assert tool_turn[:2] == [{"type": "thinking", "thinking": ONE[0].text, "signature": ONE[0].signature},
                             {"type": "redacted_thinking", "data": ONE[1].data}]
    assert [b["type"] for b in tool_turn] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert answer[0] == {"type": "thinking", "thinking": ONE_END.text, "signature": ONE_END.signature}
    with ThreadStore(repo / ".cog" / "threads.db") as store:  # the rewound run stays in the thread, as it came
        stored = [b.signature for e in store.entries(thread) if isinstance(e.entry, AssistantEntry) for b in e.entry.reasoning or []]
    assert TWO.signature in stored and THREE.signature in stored


def thinking_turns(n: int, server: AnthropicServer) -> list[Message]:
    """A long tool loop whose every turn thinks, each block signed by ``server`` as if it had streamed it."""
    out = [Message(role="system", content="You are cog."), Message(role="user", content="Write the modules")]
    for i in range(n):
        thought = Reasoning(format="anthropic", kind="thinking", text=f"module {i} next " * 20, signature=f"EqQBsig{i}==")
        server.signed.add(json.dumps({"type": "thinking", "thinking": thought.text, "signature": thought.signature}, sort_keys=True))
        call = ToolCallRequest(id=f"toolu_{i}", name="write_file", arguments={"path": f"m{i}.py", "content": "x = 1\n" * 300})
        out += [Message(role="assistant", content=f"Writing m{i}.py.", tool_calls=[call], reasoning=[thought]),
                Message(role="tool", tool_call_id=f"toolu_{i}", name="write_file", content=f"wrote m{i}.py\n" + "ok\n" * 400)]
    return out


@pytest.mark.anyio
async def test_a_compacted_tool_loop_keeps_each_turns_thinking_with_its_tool_use_and_the_api_takes_it() -> None:
    tools = [ToolSpec(name="write_file", description="Write a file", parameters={"type": "object"})]

    async def summarize(messages: list[Message]) -> str:
        return "Wrote the first modules."

    with AnthropicServer([Reply("Done.")] * 3) as server:
        history = thinking_turns(14, server)
        model = get_model(MODEL, base_url=server.base_url, api_key=KEY, retry=RetryPolicy(retries=0), reasoning="high")
        stubbed = await ContextBudget(window=12_000).before_request(history, summarize=summarize)
        summarized = await ContextBudget(window=6_000).before_request(history, summarize=summarize)
        for compacted in (stubbed, summarized):
            events = await collect(model, compacted, tools)
            assert events[-1].type == "turn-end"  # the server took it: the turn going on starts with its signed thinking
    # the first only stubbed old results, the second also summarized the oldest turns away
    assert len(stubbed) == len(history) and stubbed != history and 4 < len(summarized) < len(history)
    originals = {m.content: m.reasoning for m in history if m.role == "assistant"}
    for compacted, request in zip((stubbed, summarized), server.requests):
        for m in request.body["messages"]:
            types = [b["type"] for b in m["content"]]
            if "tool_use" in types:  # never a tool use without the thinking before it, never thinking altered
                assert types[0] == "thinking" and json.dumps(m["content"][0], sort_keys=True) in server.signed
        kept = [m for m in compacted if m.role == "assistant"]
        assert kept and all(m.reasoning == originals[m.content] for m in kept)


def test_thinking_tokens_count_in_the_usage_the_cost_and_max_tokens(make_repo) -> None:
    repo = make_repo("calc")
    thinking = Reply("Reading.", [ToolCall("toolu_1", "read_file", {"path": "calc/ops.py"})], thinking=ONE, usage=(100, 3_000),
                     usage_extra={"output_tokens_details": {"thinking_tokens": 2_400}}, usage_late=True)
    with AnthropicServer([thinking, Reply("never asked")]) as server:
        lines = edit(repo, server, "--max-tokens", "2000", "Why does add fail?", ok=False)
    finish = lines[-1]
    # the provider counts the thinking in output_tokens; cog spends the budget on it and prices it as output
    assert finish["status"] == "budget_exceeded" and finish["budget"] == {"kind": "tokens", "limit": 2000, "used": 3100}
    assert finish["usage"]["outputTokens"] == 3_000 and finish["usage"]["totalTokens"] == 3_100 and finish["usage"]["reasoningTokens"] == 2_400
    from cogcli.settings.prices import cost_usd, price_of

    assert finish["usage"]["costUsd"] == pytest.approx(cost_usd(price_of(MODEL), input_tokens=100, output_tokens=3_000))
    # the response's call is not run, and no further request is made
    assert [line["errorCode"] for line in lines if line["type"] == "tool-result"] == ["BUDGET_EXCEEDED"] and len(server.requests) == 1
    # the terminal's last line says which part of the output was reasoning
    from cogcli.render.summary import usage_words
    from cogcli.wire.events import Usage

    words = usage_words(Usage.model_validate(finish["usage"]), MODEL)
    assert words is not None and "+ 3,000 out (2,400 reasoning) = 3,100 tokens" in words


def test_only_reasoning_a_client_sends_back_takes_room_in_the_context_estimate() -> None:
    from cogcli.compaction import estimate_message

    said = Message(role="assistant", content="add returns a - b.")
    long = "the model thought at length " * 200
    signed = Reasoning(format="anthropic", kind="thinking", text=long, signature="EqQBsig==")
    assert estimate_message(said.model_copy(update={"reasoning": [signed]})) > estimate_message(said) + 1000
    # a Chat Completions server's reasoning_content is never sent back, nor a block cog altered
    for unsent in (Reasoning(format="openai-chat", kind="reasoning_content", text=long), signed.model_copy(update={"altered": True})):
        assert not unsent.sent_back and estimate_message(said.model_copy(update={"reasoning": [unsent]})) == estimate_message(said)
