"""The OpenAI-compatible client over real HTTP against a loopback server speaking Chat Completions SSE."""

from __future__ import annotations

import json
import logging

import pytest
from model_servers import Cut, Drop, Fail, OpenAIServer, Raw, Reply, ToolCall, collect, unused_port

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
from cogcli.models.sse import RetryPolicy

KEY = "sk-test-0123456789abcdef"
FAST = RetryPolicy(retries=2, base_delay=0.0)
TOOLS = [
    ToolSpec(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec(name="run_tests", description="Run the tests", parameters={"type": "object", "properties": {}}),
]
HISTORY = [Message(role="system", content="You are cog."), Message(role="user", content="Fix the failing test")]


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def model_for(server: OpenAIServer, retry: RetryPolicy = FAST):
    return get_model("openai:gpt-test", base_url=server.base_url, api_key=KEY, retry=retry)


@pytest.mark.anyio
async def test_text_and_interleaved_tool_call_fragments_become_ordered_events() -> None:
    calls = [ToolCall("call_a", "read_file", {"path": "calc/ops.py"}), ToolCall("call_b", "run_tests", {"paths": ["tests"]})]
    with OpenAIServer([Reply("Looking at the code.", calls, usage=(321, 45), chunk=4, interleave=True)]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Looking at the code."
    assert sum(isinstance(e, TextDelta) for e in events) > 1  # streamed, not buffered
    starts = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(s.id, s.name) for s in starts] == [("call_a", "read_file"), ("call_b", "run_tests")]
    deltas = [e for e in events if isinstance(e, ToolCallArgsDelta)]
    assert [d.id for d in deltas][:4] == ["call_a", "call_b", "call_a", "call_b"]  # interleaved as sent
    finished = {e.id: e for e in events if isinstance(e, ToolCallFinished)}
    for call in calls:
        text = "".join(d.text for d in deltas if d.id == call.id)
        assert finished[call.id].arguments_text == text
        assert json.loads(text) == call.arguments
    # per call: start before its deltas, deltas before its end
    for call in calls:
        positions = [i for i, e in enumerate(events) if getattr(e, "id", None) == call.id]
        kinds = [events[i].type for i in positions]
        assert kinds[0] == "tool-call-start" and kinds[-1] == "tool-call-end"
        assert set(kinds[1:-1]) == {"tool-call-delta"}
    assert events[-2:] == [UsageReport(input_tokens=321, output_tokens=45), TurnFinished(stop_reason="tool_calls")]


@pytest.mark.anyio
async def test_request_body_converts_history_and_tools_and_sends_the_key_only_as_a_header() -> None:
    history = [
        *HISTORY,
        Message(role="assistant", content="Reading.", tool_calls=[ToolCallRequest(id="c1", name="read_file", arguments={"path": "a.py"})]),
        Message(role="tool", tool_call_id="c1", content="print('hi')"),
        Message(role="assistant", tool_calls=[ToolCallRequest(id="c2", name="read_file", arguments="not json")]),
        Message(role="tool", tool_call_id="c2", content="error: bad arguments"),
    ]
    with OpenAIServer([Reply("ok")]) as srv:
        model = model_for(srv)
        await collect(model, history, TOOLS)
        await model.aclose()
    (req,) = srv.requests
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    body = req.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are cog."},
        {"role": "user", "content": "Fix the failing test"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "error: bad arguments"},
    ]
    assert body["tools"] == [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in TOOLS
    ]
    assert KEY not in json.dumps(body)


@pytest.mark.anyio
async def test_no_tools_means_no_tools_field() -> None:
    with OpenAIServer([Reply("plain")]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, [])
        await model.aclose()
    assert "tools" not in srv.requests[0].body
    assert events[-1] == TurnFinished(stop_reason="stop")


@pytest.mark.anyio
async def test_429_with_retry_after_is_retried_then_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with OpenAIServer([Fail(429, f"slow down {KEY}", retry_after="0"), Reply("done")]) as srv:
        model = model_for(srv, RetryPolicy(retries=1, base_delay=30.0))  # Retry-After: 0 wins over the 30 s backoff
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 2
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "done"
    assert "429" in caplog.text and "retry 1 of 1" in caplog.text
    assert KEY not in caplog.text


@pytest.mark.anyio
async def test_two_500s_then_ok() -> None:
    with OpenAIServer([Fail(500), Fail(502), Reply("third time")]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 3
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "third time"
    # a retried turn yields its events once
    assert sum(isinstance(e, TurnFinished) for e in events) == 1


@pytest.mark.anyio
async def test_persistent_500_gives_up_after_bounded_retries_without_leaking_the_key() -> None:
    with OpenAIServer([Fail(500, f"upstream rejected key {KEY}")] * 5) as srv:
        model = model_for(srv)
        with pytest.raises(ModelError) as info:
            await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 3  # first try + 2 retries
    err = info.value
    assert err.code == ErrorCode.MODEL_STREAM_ERROR
    assert "HTTP 500" in err.message and "gave up after 3 attempts" in err.message
    assert KEY not in err.message and "[redacted]" in err.message


@pytest.mark.anyio
async def test_connection_refused_is_a_model_error_after_retries() -> None:
    model = get_model("openai:gpt-test", base_url=f"http://127.0.0.1:{unused_port()}/v1", api_key=KEY, retry=FAST)
    model.connect_hint = None  # as for a remote API, which may be down for a while
    with pytest.raises(ModelError) as info:
        await collect(model, HISTORY, TOOLS)
    await model.aclose()
    assert info.value.code == ErrorCode.MODEL_STREAM_ERROR
    assert "cannot connect" in info.value.message and "gave up after 3 attempts" in info.value.message
    assert KEY not in str(info.value)
    # a server on this machine (issue 49): nothing listening is a configuration error saying how to start it
    local = get_model("openai:gpt-test", base_url=f"http://127.0.0.1:{unused_port()}/v1", api_key=KEY, retry=FAST)
    with pytest.raises(ModelError) as info:
        await collect(local, HISTORY, TOOLS)
    await local.aclose()
    assert info.value.code == ErrorCode.MODEL_CONFIG_ERROR and "Is the model server at http://127.0.0.1:" in info.value.message


@pytest.mark.anyio
async def test_cut_mid_stream_after_events_is_not_retried() -> None:
    reply = Reply("A long answer that is cut off", [ToolCall("c1", "read_file", {"path": "x"})])
    with OpenAIServer([Cut(reply, after=4), Reply("never asked for")]) as srv:
        model = model_for(srv)
        seen = []
        with pytest.raises(ModelError) as info:
            async for event in model.stream(HISTORY, TOOLS):
                seen.append(event)
        await model.aclose()
    assert info.value.code == ErrorCode.MODEL_STREAM_ERROR
    assert "mid-turn" in info.value.message
    assert seen and all(isinstance(e, TextDelta) for e in seen)  # the run saw part of a turn...
    assert len(srv.requests) == 1  # ...so it is never replayed behind its back


@pytest.mark.anyio
async def test_cut_or_drop_before_any_event_is_retried() -> None:
    with OpenAIServer([Cut(Reply("x"), after=1), Drop(), Reply("recovered")]) as srv:
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 3
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "recovered"


@pytest.mark.anyio
async def test_stream_that_ends_cleanly_without_finishing_is_an_error() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "half"}, "finish_reason": None}]}
    with OpenAIServer([Raw.sse([(None, chunk)])]) as srv:
        model = model_for(srv, RetryPolicy(retries=0))
        with pytest.raises(ModelError, match="ended before the turn finished"):
            await collect(model, HISTORY, TOOLS)
        await model.aclose()


@pytest.mark.anyio
async def test_401_is_a_config_flavoured_model_error_not_retried() -> None:
    with OpenAIServer([Fail(401, f"Incorrect API key provided: {KEY}")] * 3) as srv:
        model = model_for(srv)
        with pytest.raises(ModelError) as info:
            await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 1
    assert info.value.code == ErrorCode.MODEL_CONFIG_ERROR
    assert "OPENAI_API_KEY" in info.value.message and KEY not in info.value.message


@pytest.mark.anyio
async def test_compat_server_without_ids_and_whole_arguments_in_one_chunk() -> None:
    """Some OpenAI-compatible servers (older Ollama, llama.cpp) send a call in one chunk, without an id."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "function": {"name": "run_tests", "arguments": '{"keyword": "add"}'}}]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    with OpenAIServer([Raw.sse([(None, c) for c in chunks])]) as srv:  # no usage chunk, no [DONE]
        model = model_for(srv)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    start, delta, end, turn_end = events
    assert isinstance(start, ToolCallStarted) and start.name == "run_tests" and start.id
    assert delta == ToolCallArgsDelta(id=start.id, text='{"keyword": "add"}')
    assert end == ToolCallFinished(id=start.id, name="run_tests", arguments_text='{"keyword": "add"}')
    assert turn_end == TurnFinished(stop_reason="tool_calls")


@pytest.mark.anyio
async def test_ollama_uses_the_same_client_and_sends_no_key() -> None:
    with OpenAIServer([Reply("hi from llama")]) as srv:
        model = get_model("ollama:llama3.1", base_url=srv.base_url, retry=FAST)
        events = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert model.name == "ollama:llama3.1"
    assert "authorization" not in srv.requests[0].headers
    assert srv.requests[0].body["model"] == "llama3.1"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hi from llama"


@pytest.mark.anyio
async def test_one_client_streams_several_turns_on_one_model() -> None:
    with OpenAIServer([Reply("one"), Reply("two")]) as srv:
        model = model_for(srv)
        first = await collect(model, HISTORY, TOOLS)
        second = await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert [e.text for e in first if isinstance(e, TextDelta)] == ["one"]
    assert [e.text for e in second if isinstance(e, TextDelta)] == ["two"]
    assert KEY not in repr(model)


@pytest.mark.anyio
async def test_400_is_not_retried_and_names_the_model() -> None:
    with OpenAIServer([Fail(400, "messages: tool_call_id c9 has no matching call")] * 2) as srv:
        model = model_for(srv)
        with pytest.raises(ModelError) as info:
            await collect(model, HISTORY, TOOLS)
        await model.aclose()
    assert len(srv.requests) == 1
    assert info.value.code == ErrorCode.MODEL_STREAM_ERROR
    assert info.value.message.startswith("openai:gpt-test: HTTP 400") and "tool_call_id c9" in info.value.message
