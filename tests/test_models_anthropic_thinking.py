"""Extended thinking on the Anthropic client (``--reasoning``), checked against the official
``anthropic`` SDK's own types: the stream the loopback server sends parses as the SDK's stream
events, and the request cog sends after a tool call validates as the SDK's request params and
carries the thinking blocks verbatim, first in the assistant message."""

from __future__ import annotations

import json
import pytest
from model_servers import AnthropicServer, RecordedRequest, RedactedThinking, Reply, Thinking, ToolCall, collect
from pydantic import TypeAdapter

from cogcli.models import Message, Reasoning, ReasoningDelta, ReasoningFinished, ToolCallRequest, ToolSpec, UsageReport, get_model
from cogcli.models.anthropic_thinking import INTERLEAVED_THINKING_BETA, THINKING_BUDGETS
from cogcli.models.sse import RetryPolicy

anthropic_types = pytest.importorskip("anthropic.types")
from anthropic.types import message_create_params  # noqa: E402

KEY = "sk-ant-test-0123456789abcdef"
TOOLS = [ToolSpec(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})]
HISTORY = [Message(role="system", content="You are cog."), Message(role="user", content="Fix the failing test")]
THOUGHTS = (Thinking("The test fails; read ops.py first.", signature="EqQBCkYIARgCKkAsig+one=="), RedactedThinking("EmwKAhgBEgyencrypted=="))


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def model_for(server: AnthropicServer, reasoning: str | None = "high", name: str = "claude-sonnet-4-5"):
    return get_model(f"anthropic:{name}", base_url=server.base_url, api_key=KEY, retry=RetryPolicy(retries=0), reasoning=reasoning)


def test_the_loopback_stream_parses_as_the_sdks_stream_events() -> None:
    server = AnthropicServer()
    reply = Reply("Reading it.", [ToolCall("toolu_1", "read_file", {"path": "ops.py"})], thinking=THOUGHTS)
    blocks = server.render(reply, RecordedRequest("POST", "/v1/messages", {}, {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 2048}}))
    adapter = TypeAdapter(anthropic_types.RawMessageStreamEvent)
    data = [json.loads(b.split("data: ", 1)[1]) for b in blocks]
    # every event but ping (which the SDK skips before parsing) is one of the SDK's stream events
    parsed = [adapter.validate_python(d) for d in data if d["type"] != "ping"]
    kinds = {type(e).__name__ for e in parsed}
    assert {"RawMessageStartEvent", "RawContentBlockStartEvent", "RawContentBlockDeltaEvent", "RawMessageDeltaEvent", "RawMessageStopEvent"} <= kinds
    deltas = [type(e.delta).__name__ for e in parsed if type(e).__name__ == "RawContentBlockDeltaEvent"]
    assert "ThinkingDelta" in deltas and "SignatureDelta" in deltas
    starts = [type(e.content_block).__name__ for e in parsed if type(e).__name__ == "RawContentBlockStartEvent"]
    assert starts == ["ThinkingBlock", "RedactedThinkingBlock", "TextBlock", "ToolUseBlock"]


@pytest.mark.anyio
async def test_thinking_streams_as_reasoning_and_is_kept_whole() -> None:
    reply = Reply("Reading it.", [ToolCall("toolu_1", "read_file", {"path": "ops.py"})], thinking=THOUGHTS, usage=(40, 300), chunk=4)
    with AnthropicServer([reply]) as srv:
        events = await collect(model_for(srv), HISTORY, TOOLS)
    shown = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert shown == THOUGHTS[0].text
    finished = [e.block for e in events if isinstance(e, ReasoningFinished)]
    assert finished == [
        Reasoning(format="anthropic", kind="thinking", text=THOUGHTS[0].text, signature=THOUGHTS[0].signature),
        Reasoning(format="anthropic", kind="redacted_thinking", data=THOUGHTS[1].data),
    ]
    # the thinking comes before the answer, and its tokens are output tokens
    assert [e.type for e in events].index("reasoning-end") < [e.type for e in events].index("text-delta")
    assert [e for e in events if isinstance(e, UsageReport)][0].output_tokens == 300
    body = srv.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGETS["high"]}
    assert body["max_tokens"] == 8192 + THINKING_BUDGETS["high"] and "temperature" not in body and "tool_choice" not in body
    assert srv.requests[0].headers["anthropic-beta"] == INTERLEAVED_THINKING_BETA


@pytest.mark.anyio
async def test_the_second_request_sends_the_thinking_back_verbatim_first_and_validates_as_sdk_params() -> None:
    call = ToolCall("toolu_1", "read_file", {"path": "ops.py"})
    with AnthropicServer([Reply("Reading it.", [call], thinking=THOUGHTS), Reply("Done.")]) as srv:
        model = model_for(srv)
        first = await collect(model, HISTORY, TOOLS)
        reasoning = [e.block for e in first if isinstance(e, ReasoningFinished)]
        history = [
            *HISTORY,
            Message(role="assistant", content="Reading it.", tool_calls=[ToolCallRequest(id="toolu_1", name="read_file", arguments={"path": "ops.py"})], reasoning=reasoning),
            Message(role="tool", tool_call_id="toolu_1", name="read_file", content="def add(a, b): return a - b"),
        ]
        second = await collect(model, history, TOOLS)
    assert [e.type for e in second][-1] == "turn-end"  # the server took it (it answers 400 otherwise)
    body = srv.requests[1].body
    params = TypeAdapter(message_create_params.MessageCreateParamsStreaming).validate_python(body)
    assert params["thinking"]["type"] == "enabled"
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == [
        {"type": "thinking", "thinking": THOUGHTS[0].text, "signature": THOUGHTS[0].signature},
        {"type": "redacted_thinking", "data": THOUGHTS[1].data},
    ]
    assert [b["type"] for b in assistant["content"]] == ["thinking", "redacted_thinking", "text", "tool_use"]
    for block in assistant["content"][:2]:  # each block is one of the SDK's own param shapes
        shape = anthropic_types.ThinkingBlockParam if block["type"] == "thinking" else anthropic_types.RedactedThinkingBlockParam
        assert TypeAdapter(shape).validate_python(block) == block


@pytest.mark.anyio
async def test_thinking_left_out_or_altered_is_refused_like_the_api_does() -> None:
    call = ToolCall("toolu_1", "read_file", {"path": "ops.py"})
    with AnthropicServer([Reply("Reading it.", [call], thinking=THOUGHTS[:1]), Reply("Done.")]) as srv:
        model = model_for(srv)
        first = await collect(model, HISTORY, TOOLS)
        block = next(e.block for e in first if isinstance(e, ReasoningFinished))
        calls = [ToolCallRequest(id="toolu_1", name="read_file", arguments={"path": "ops.py"})]
        result = Message(role="tool", tool_call_id="toolu_1", name="read_file", content="x")
        changed = block.model_copy(update={"text": block.text + " "})
        from cogcli.contract.errors import ModelError

        with pytest.raises(ModelError, match="Expected `thinking`"):
            await collect(model, [*HISTORY, Message(role="assistant", tool_calls=calls, reasoning=[changed]), result], TOOLS)
        # a block cog marked altered (a credential redacted in a stored thread) is never sent back
        with pytest.raises(ModelError):
            await collect(model, [*HISTORY, Message(role="assistant", tool_calls=calls, reasoning=[block.model_copy(update={"altered": True})]), result], TOOLS)
        assert [b["type"] for b in srv.requests[-1].body["messages"][1]["content"]] == ["tool_use"]
        sent_back = await collect(model, [*HISTORY, Message(role="assistant", tool_calls=calls, reasoning=[block]), result], TOOLS)
    assert sent_back[-1].type == "turn-end"


@pytest.mark.anyio
async def test_reasoning_off_asks_for_no_thinking_and_sends_none_back() -> None:
    block = Reasoning(format="anthropic", kind="thinking", text="old", signature="sig")
    other = Reasoning(format="openai-chat", kind="reasoning_content", text="not ours")
    history = [*HISTORY, Message(role="assistant", content="Hi", reasoning=[block, other]), Message(role="user", content="Again")]
    with AnthropicServer([Reply("ok"), Reply("ok")]) as srv:
        await collect(model_for(srv, reasoning="off"), history, TOOLS)
        await collect(model_for(srv, reasoning="low", name="claude-3-7-sonnet-latest"), history, TOOLS)
    off, low = srv.requests[0], srv.requests[1]
    assert "thinking" not in off.body and off.body["max_tokens"] == 8192 and "anthropic-beta" not in off.headers
    assert off.body["messages"][1]["content"] == [{"type": "text", "text": "Hi"}]
    # Claude 3.7 thinks without the interleaved beta; another provider's reasoning is never sent
    assert low.body["thinking"]["budget_tokens"] == THINKING_BUDGETS["low"] >= 1024 and "anthropic-beta" not in low.headers
    assert low.body["messages"][1]["content"][0] == {"type": "thinking", "thinking": "old", "signature": "sig"}
    assert len(low.body["messages"][1]["content"]) == 2


def test_a_bad_level_is_a_configuration_error() -> None:
    from cogcli.contract.errors import ConfigError

    with pytest.raises(ConfigError, match="reasoning must be"):
        get_model("anthropic:claude-x", base_url="http://127.0.0.1:1", api_key=KEY, reasoning="max")


@pytest.mark.anyio
async def test_an_earlier_turn_without_thinking_is_fine_only_the_turn_going_on_needs_it() -> None:
    calls = [ToolCallRequest(id="toolu_0", name="read_file", arguments={"path": "a"})]
    earlier = [Message(role="assistant", tool_calls=calls), Message(role="tool", tool_call_id="toolu_0", name="read_file", content="x"),
               Message(role="assistant", content="Read it.")]
    with AnthropicServer([Reply("ok")]) as srv:  # (a thread made with --reasoning off, continued with it on)
        events = await collect(model_for(srv), [*HISTORY, *earlier, Message(role="user", content="Now fix it")], TOOLS)
    assert events[-1].type == "turn-end" and srv.requests[0].body["messages"][1]["content"][0]["type"] == "tool_use"


@pytest.mark.parametrize(("name", "adaptive"), [
    ("claude-opus-4-6", True), ("claude-sonnet-4-6", True), ("claude-opus-4-7", True), ("claude-opus-5", True),
    ("claude-sonnet-5-1", True), ("claude-mythos-preview", True), ("claude-fable-5", True), ("anthropic.claude-opus-4-6-v1", True),
    ("claude-sonnet-4-5", False), ("claude-sonnet-4-5-20250929", False), ("claude-opus-4-1-20250805", False),
    ("claude-opus-4-20250514", False), ("claude-3-7-sonnet-latest", False), ("claude-haiku-4-5", False), ("gpt-5", False),
])
def test_which_models_take_adaptive_thinking(name: str, adaptive: bool) -> None:
    from cogcli.models.anthropic_thinking import adaptive_thinking

    assert adaptive_thinking(name) is adaptive


@pytest.mark.anyio
@pytest.mark.parametrize("level", ["low", "medium", "high"])
async def test_a_model_that_takes_adaptive_thinking_gets_it_with_the_level_as_effort(level: str) -> None:
    call = ToolCall("toolu_1", "read_file", {"path": "ops.py"})
    with AnthropicServer([Reply("Reading it.", [call], thinking=THOUGHTS[:1]), Reply("Done.")]) as srv:
        model = model_for(srv, reasoning=level, name="claude-opus-4-6")
        first = await collect(model, HISTORY, TOOLS)
        reasoning = [e.block for e in first if isinstance(e, ReasoningFinished)]
        calls = [ToolCallRequest(id="toolu_1", name="read_file", arguments={"path": "ops.py"})]
        history = [*HISTORY, Message(role="assistant", content="Reading it.", tool_calls=calls, reasoning=reasoning),
                   Message(role="tool", tool_call_id="toolu_1", name="read_file", content="x")]
        second = await collect(model, history, TOOLS)
    assert "".join(e.text for e in first if isinstance(e, ReasoningDelta)) == THOUGHTS[0].text
    assert second[-1].type == "turn-end"  # the thinking went back, verbatim, as with a budget
    for request in srv.requests:
        body = request.body
        params = TypeAdapter(message_create_params.MessageCreateParamsStreaming).validate_python(body)  # the SDK's own request shape
        assert params["thinking"] == {"type": "adaptive", "display": "summarized"} and "budget_tokens" not in body["thinking"]
        assert body["output_config"] == {"effort": level}
        # room for the thinking all the same; no temperature, no tool_choice; adaptive interleaves without the beta
        assert body["max_tokens"] == 8192 + THINKING_BUDGETS[level] and "temperature" not in body and "tool_choice" not in body
        assert "anthropic-beta" not in request.headers
    assert srv.requests[1].body["messages"][1]["content"][0] == {"type": "thinking", "thinking": THOUGHTS[0].text, "signature": THOUGHTS[0].signature}


def test_with_thinking_tool_choice_is_at_most_auto_as_the_api_requires() -> None:
    from cogcli.models.anthropic_thinking import thinking_params

    for sent, kept in [({"type": "any"}, {"type": "auto"}), ({"type": "tool", "name": "read_file"}, {"type": "auto"}),
                       ({"type": "none"}, {"type": "none"}), ({"type": "auto"}, {"type": "auto"})]:
        for effort in (None, "medium"):
            body = {"model": "claude-opus-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}],
                    "tools": [{"name": "read_file", "description": "Read", "input_schema": TOOLS[0].parameters}],
                    "tool_choice": dict(sent), "temperature": 0.2, "stream": True}
            thinking_params(body, 2048, effort=effort)
            assert body["tool_choice"] == kept and "temperature" not in body
            TypeAdapter(message_create_params.MessageCreateParamsStreaming).validate_python(body)


@pytest.mark.anyio
async def test_the_thinking_part_of_the_output_tokens_is_reported() -> None:
    details = {"output_tokens_details": {"thinking_tokens": 240}}
    reply = Reply("ok", thinking=THOUGHTS[:1], usage=(40, 300), usage_extra=details, usage_late=True)
    server = AnthropicServer()
    blocks = server.render(reply, RecordedRequest("POST", "/v1/messages", {}, {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 2048}}))
    delta = TypeAdapter(anthropic_types.RawMessageStreamEvent).validate_python(json.loads([b for b in blocks if "message_delta" in b][0].split("data: ", 1)[1]))
    assert delta.usage.output_tokens_details.thinking_tokens == 240  # the SDK's own usage shape
    with AnthropicServer([reply, Reply("ok")]) as srv:
        [usage] = [e for e in await collect(model_for(srv), HISTORY, TOOLS) if isinstance(e, UsageReport)]
        [plain] = [e for e in await collect(model_for(srv), HISTORY, TOOLS) if isinstance(e, UsageReport)]
    assert (usage.output_tokens, usage.reasoning_tokens) == (300, 240) and plain.reasoning_tokens is None
