"""The Anthropic client over real HTTP against a loopback server speaking the Messages API stream."""

from __future__ import annotations

import json

import pytest
from model_servers import AnthropicServer, Cut, Fail, Raw, Reply, ToolCall, collect, unused_port

from cogcli.contract.errors import ErrorCode, ModelError
from cogcli.models import (
    Message,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallRequest,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
    UsageReport,
    get_model,
)
from cogcli.models.anthropic import ANTHROPIC_VERSION
from cogcli.models.sse import RetryPolicy

KEY = "sk-ant-test-0123456789abcdef"
FAST = RetryPolicy(retries=2, base_delay=0.0)
TOOLS = [
    ToolSpec(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec(name="run_tests", description="Run the tests", parameters={"type": "object", "properties": {}}),
]
HISTORY = [Message(role="system", content="You are cog."), Message(role="user", content="Fix the failing test")]


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def model_for(server: AnthropicServer, retry: RetryPolicy = FAST):
    return get_model("anthropic:claude-test", base_url=server.base_url, api_key=KEY, retry=retry)


def start_events(*, text: str = "") -> list[tuple[str, dict]]:
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
        "usage": {"input_tokens": 5, "output_tokens": 1}}})]
    if text:
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ]
    return events


@pytest.mark.anyio
async def test_text_and_tool_use_blocks_with_split_input_json() -> None:
    calls = [ToolCall("toolu_1", "read_file", {"path": "calc/ops.py"}), ToolCall("toolu_2", "run_tests", {})]
    with AnthropicServer([Reply("Let me look.", calls, usage=(900, 61), chunk=3)]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()

    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "Let me look." and len(texts) > 1
    assert [(e.id, e.name) for e in events if isinstance(e, ToolCallStarted)] == [("toolu_1", "read_file"), ("toolu_2", "run_tests")]
    for call in calls:
        deltas = [e.text for e in events if isinstance(e, ToolCallArgsDelta) and e.id == call.id]
        (end,) = [e for e in events if isinstance(e, ToolCallFinished) and e.id == call.id]
        assert end.arguments_text == "".join(deltas)
        assert json.loads(end.arguments_text) == call.arguments
    assert len([e for e in events if isinstance(e, ToolCallArgsDelta) and e.id == "toolu_1"]) > 1
    # the first call ends before the second starts (Anthropic's blocks are sequential)
    kinds = [(e.type, getattr(e, "id", None)) for e in events]
    assert kinds.index(("tool-call-end", "toolu_1")) < kinds.index(("tool-call-start", "toolu_2"))
    # message_start's input tokens + message_delta's output tokens
    assert events[-2:] == [UsageReport(input_tokens=900, output_tokens=61), TurnFinished(stop_reason="tool_use")]


@pytest.mark.anyio
async def test_request_body_system_top_level_tool_results_in_one_user_message() -> None:
    history = [
        *HISTORY,
        Message(role="assistant", content="Two reads.", tool_calls=[
            ToolCallRequest(id="t1", name="read_file", arguments={"path": "a.py"}),
            ToolCallRequest(id="t2", name="read_file", arguments='{"path": "b.py"}'),
        ]),
        Message(role="tool", tool_call_id="t1", content="A"),
        Message(role="tool", tool_call_id="t2", content="B"),
        Message(role="user", content="Now fix it."),
    ]
    with AnthropicServer([Reply("ok")]) as srv:
        model = model_for(srv)
        await collect(model, history, TOOLS)
        await model.aclose()
    (req,) = srv.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == KEY
    assert req.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in req.headers
    body = req.body
    assert body["model"] == "claude-test" and body["stream"] is True and body["max_tokens"] > 0
    assert body["system"] == "You are cog."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix the failing test"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Two reads."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}},
            {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "b.py"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
            {"type": "text", "text": "Now fix it."},
        ]},
    ]
    assert body["tools"] == [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in TOOLS]
    assert KEY not in json.dumps(body)


@pytest.mark.anyio
async def test_429_then_529_overloaded_then_success() -> None:
    with AnthropicServer([Fail(429, retry_after="0"), Fail(529, "Overloaded"), Reply("fine")]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 3
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "fine"


@pytest.mark.anyio
async def test_persistent_500_gives_up_without_the_key_in_the_error() -> None:
    with AnthropicServer([Fail(500, f"bad {KEY}")] * 3) as srv:
        model = model_for(srv)
        with pytest.raises(ModelError) as info:
            await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 3
    assert info.value.code == ErrorCode.MODEL_STREAM_ERROR and "HTTP 500" in info.value.message
    assert KEY not in info.value.message


@pytest.mark.anyio
async def test_overloaded_error_event_before_any_output_is_retried() -> None:
    error = ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with AnthropicServer([Raw.sse([*start_events(), error]), Reply("second try")]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 2
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "second try"


@pytest.mark.anyio
async def test_error_event_after_output_ends_the_turn_with_a_model_error() -> None:
    error = ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with AnthropicServer([Raw.sse([*start_events(text="Half an ans"), error]), Reply("not asked")]) as srv:
        model = model_for(srv)
        seen = []
        with pytest.raises(ModelError) as info:
            async for event in model.stream(HISTORY, TOOLS):
                seen.append(event)
        await model.aclose()
    assert seen == [TextDelta(text="Half an ans")]
    assert info.value.code == ErrorCode.MODEL_STREAM_ERROR and "overloaded_error" in info.value.message
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_non_retryable_error_event_fails_at_once() -> None:
    error = ("error", {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}})
    with AnthropicServer([Raw.sse([*start_events(), error]), Reply("not asked")]) as srv:
        model = model_for(srv)
        with pytest.raises(ModelError, match="prompt is too long"):
            await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_cut_mid_stream_is_a_stream_error() -> None:
    reply = Reply("An answer that never ends", [ToolCall("toolu_1", "read_file", {"path": "x"})])
    with AnthropicServer([Cut(reply, after=5), Reply("not asked")]) as srv:
        model = model_for(srv)
        with pytest.raises(ModelError) as info:
            await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert info.value.code == ErrorCode.MODEL_STREAM_ERROR and "mid-turn" in info.value.message
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_stream_without_message_stop_is_an_error() -> None:
    with AnthropicServer([Raw.sse(start_events(text="hello"))]) as srv:
        model = model_for(srv, RetryPolicy(retries=0))
        with pytest.raises(ModelError, match="ended before message_stop"):
            await collect(model, HISTORY, TOOLS)
        await model.aclose()


@pytest.mark.anyio
async def test_connection_refused_is_a_model_error_after_retries() -> None:
    model = get_model("anthropic:claude-test", base_url=f"http://127.0.0.1:{unused_port()}", api_key=KEY, retry=FAST)
    with pytest.raises(ModelError) as info:
        await collect(model, HISTORY, TOOLS)
    await model.aclose()
    assert info.value.code == ErrorCode.MODEL_STREAM_ERROR
    assert "cannot connect" in info.value.message and "gave up after 3 attempts" in info.value.message


@pytest.mark.anyio
async def test_base_url_with_v1_suffix_and_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    with AnthropicServer([Reply("from env")]) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        model = get_model("anthropic:claude-test", retry=FAST)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert srv.requests[0].path == "/v1/messages" and srv.requests[0].headers["x-api-key"] == KEY
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "from env"
    assert KEY not in repr(model)
