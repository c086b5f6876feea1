"""Reasoning on OpenAI-compatible Chat Completions servers (``--reasoning``): ``reasoning_effort``
in the request, and the ``reasoning_content`` / ``reasoning`` deltas vLLM, DeepSeek and Ollama
stream, checked against the official ``openai`` SDK's ``ChatCompletionChunk`` type."""

from __future__ import annotations

import json

import pytest
from model_servers import OpenAIServer, RecordedRequest, Reply, ToolCall, collect

from cogcli.models import Message, Reasoning, ReasoningDelta, ReasoningFinished, ToolCallRequest, ToolSpec, UsageReport, get_model
from cogcli.models.sse import RetryPolicy

chunk_types = pytest.importorskip("openai.types.chat")

TOOLS = [ToolSpec(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})]
HISTORY = [Message(role="system", content="You are cog."), Message(role="user", content="Fix the failing test")]
THOUGHT = "The test fails on add; ops.py first."


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def model_for(server: OpenAIServer, reasoning: str | None = "medium"):
    return get_model("openai:deepseek-reasoner", base_url=server.base_url, api_key="sk-test", retry=RetryPolicy(retries=0), reasoning=reasoning)


def test_the_loopback_chunks_parse_as_the_sdks_chat_completion_chunks() -> None:
    reply = Reply("Reading it.", [ToolCall("call_1", "read_file", {"path": "ops.py"})], reasoning=THOUGHT)
    blocks = OpenAIServer().render(reply, RecordedRequest("POST", "/v1/chat/completions", {}, {"model": "m", "stream_options": {"include_usage": True}}))
    chunks = [chunk_types.ChatCompletionChunk.model_validate(json.loads(b.removeprefix("data: "))) for b in blocks if "[DONE]" not in b]
    # reasoning_content is no field of the SDK's delta: the SDK keeps it as an extra, as it came
    streamed = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content", "") for c in chunks if c.choices)
    assert streamed == THOUGHT


@pytest.mark.anyio
@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_are_shown_and_kept_whole_and_never_sent_back(key: str) -> None:
    call = ToolCall("call_1", "read_file", {"path": "ops.py"})
    with OpenAIServer([Reply("Reading it.", [call], reasoning=THOUGHT, reasoning_key=key, usage=(30, 250), chunk=4), Reply("Done.")]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == THOUGHT
        blocks = [e.block for e in events if isinstance(e, ReasoningFinished)]
        assert blocks == [Reasoning(format="openai-chat", kind="reasoning_content", text=THOUGHT)]
        types = [e.type for e in events]
        assert types.index("reasoning-end") < types.index("text-delta")
        assert [e for e in events if isinstance(e, UsageReport)][0].output_tokens == 250  # reasoning tokens are completion tokens
        calls = [ToolCallRequest(id="call_1", name="read_file", arguments={"path": "ops.py"})]
        history = [*HISTORY, Message(role="assistant", content="Reading it.", tool_calls=calls, reasoning=blocks),
                   Message(role="tool", tool_call_id="call_1", name="read_file", content="x")]
        await collect(model, history, TOOLS)
    first, second = srv.requests[0].body, srv.requests[1].body
    assert first["reasoning_effort"] == "medium"
    assert "reasoning_content" not in json.dumps(second) and THOUGHT not in json.dumps(second)


@pytest.mark.anyio
async def test_reasoning_off_sends_no_effort_and_still_shows_what_a_server_streams() -> None:
    with OpenAIServer([Reply("ok", reasoning="thinking anyway")]) as srv:
        events = await collect(model_for(srv, reasoning="off"), HISTORY, TOOLS)
    assert "reasoning_effort" not in srv.requests[0].body
    assert [e.block.text for e in events if isinstance(e, ReasoningFinished)] == ["thinking anyway"]


@pytest.mark.anyio
async def test_a_turn_of_reasoning_only_ends_its_block_at_the_end_of_the_stream() -> None:
    with OpenAIServer([Reply("", reasoning="only thoughts")]) as srv:
        events = await collect(model_for(srv), HISTORY, TOOLS)
    assert [e.type for e in events if e.type.startswith("reasoning")][-1] == "reasoning-end"
    assert events[-1].type == "turn-end"


@pytest.mark.anyio
async def test_reasoning_and_content_in_one_chunk_make_one_block_then_the_text() -> None:
    from model_servers import Raw

    def chunk(delta: dict, finish: str | None = None) -> tuple[None, dict]:
        return None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    raw = Raw.sse([chunk({"reasoning_content": "Think. "}), chunk({"reasoning_content": "Done thinking.", "content": "Answer"}),
                   chunk({}, "stop"), (None, "[DONE]")])
    with OpenAIServer([raw]) as srv:
        events = await collect(model_for(srv), HISTORY, TOOLS)
    assert [e.type for e in events] == ["reasoning-delta", "reasoning-delta", "reasoning-end", "text-delta", "turn-end"]
    assert events[2].block.text == "Think. Done thinking."


@pytest.mark.anyio
async def test_the_reasoning_part_of_the_completion_tokens_is_reported() -> None:
    details = {"completion_tokens_details": {"reasoning_tokens": 180}}
    reply = Reply("a - b.", reasoning=THOUGHT, usage=(30, 250), usage_extra=details)
    blocks = OpenAIServer().render(reply, RecordedRequest("POST", "/v1/chat/completions", {}, {"model": "m", "stream_options": {"include_usage": True}}))
    last = chunk_types.ChatCompletionChunk.model_validate(json.loads([b for b in blocks if "[DONE]" not in b][-1].removeprefix("data: ")))
    assert last.usage is not None and last.usage.completion_tokens_details.reasoning_tokens == 180  # the SDK's own usage shape
    with OpenAIServer([reply, Reply("ok", usage=(5, 3))]) as srv:
        [usage] = [e for e in await collect(model_for(srv), HISTORY, TOOLS) if isinstance(e, UsageReport)]
        [plain] = [e for e in await collect(model_for(srv), HISTORY, TOOLS) if isinstance(e, UsageReport)]
    assert (usage.output_tokens, usage.reasoning_tokens) == (250, 180)  # a part of the output, priced with it
    assert plain.reasoning_tokens is None  # not said: not guessed
