"""OpenAI's Responses API client against a loopback server whose events are the ``openai`` SDK's
own stream event types and which checks every request body against the SDK's
``ResponseCreateParamsStreaming`` (:mod:`responses_server`): text, function calls, reasoning kept
and sent back verbatim, the native ``apply_patch`` tool, usage, failures and retries."""

from __future__ import annotations

import json

import pytest
from model_servers import Cut, Fail, Raw, RecordedRequest, ToolCall, collect, merged
from responses_server import Answer, ResponsesServer, check_request, served_types

from cogcli.contract.errors import ContextLengthError, ModelError
from cogcli.models import (
    Message,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
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
from cogcli.models.base import PROMPT_CACHE_KEY
from cogcli.models.sse import RetryPolicy

READ = ToolSpec(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})
PATCH = ToolSpec(name="apply_patch", description="Apply a patch", parameters={"type": "object", "properties": {"patch": {"type": "string"}}})
HISTORY = [Message(role="system", content="You are cog."), Message(role="user", content="Fix the failing test")]
UPDATE = {"type": "update_file", "path": "calc/ops.py", "diff": "@@ def add(a: int, b: int) -> int:\n     \"\"\"Return the sum of a and b.\"\"\"\n-    return a - b\n+    return a + b\n"}


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COG_OPENAI_API"):
        monkeypatch.delenv(var, raising=False)


def model_for(server: ResponsesServer, name: str = "gpt-5.2", *, reasoning: str | None = None, retries: int = 0, **kw):
    return get_model(f"openai:{name}", base_url=server.base_url, api_key="sk-test", api="responses",
                     retry=RetryPolicy(retries=retries, base_delay=0), reasoning=reasoning, **kw)


def test_the_request_check_is_the_sdks_and_refuses_a_key_it_does_not_know() -> None:
    body = {"model": "gpt-5.2", "input": [{"role": "user", "content": "hi"}], "stream": True, "store": False}
    assert check_request(body) is None
    assert "does not know" in (check_request({**body, "input": [{"role": "user", "content": "hi", "name": "x"}]}) or "")
    assert check_request({**body, "input": [{"type": "function_call", "call_id": "c"}]}) is not None  # name and arguments missing


@pytest.mark.anyio
async def test_text_and_a_function_call_stream_as_they_come_with_usage() -> None:
    call = ToolCall("call_1", "read_file", {"path": "calc/ops.py"})
    answer = Answer("Reading it.", [call], usage=(900, 40), cached_tokens=768, chunk=4)
    with ResponsesServer([answer]) as srv:
        events = await collect(model_for(srv, "gpt-4.1"), HISTORY, [READ])
    assert served_types(srv)[:2] == ["response.created", "response.in_progress"]
    assert "response.function_call_arguments.delta" in served_types(srv) and served_types(srv)[-1] == "response.completed"
    assert merged(events) == [
        TextDelta(text="Reading it."),
        ToolCallStarted(id="call_1", name="read_file"),
        ToolCallArgsDelta(id="call_1", text=call.text),
        ToolCallFinished(id="call_1", name="read_file", arguments_text=call.text),
        UsageReport(input_tokens=900, output_tokens=40, cached_input_tokens=768, cost_usd=events[-2].cost_usd),
        TurnFinished(stop_reason="tool_calls"),
    ]
    assert events[-2].cost_usd is not None  # gpt-4.1 has a known price
    body = srv.requests[0].body
    assert (body["store"], body["stream"], body["instructions"]) == (False, True, "You are cog.")
    assert body["input"] == [{"role": "user", "content": "Fix the failing test"}]
    assert body["tools"] == [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": READ.parameters, "strict": False}]
    assert "reasoning" not in body and "include" not in body  # gpt-4.1 does not reason; nothing asked


@pytest.mark.anyio
async def test_the_calls_and_their_results_go_back_as_function_call_items_with_the_thread_key() -> None:
    calls = [ToolCallRequest(id="call_1", name="read_file", arguments={"path": "a.py"})]
    history = [*HISTORY, Message(role="assistant", content="Reading.", tool_calls=calls),
               Message(role="tool", tool_call_id="call_1", name="read_file", content="print(1)")]
    token = PROMPT_CACHE_KEY.set("thread-7")
    try:
        with ResponsesServer([Answer("Done.")]) as srv:
            await collect(model_for(srv, "gpt-4.1", prompt_cache_key=True), history, [READ])
    finally:
        PROMPT_CACHE_KEY.reset(token)
    body = srv.requests[0].body
    assert body["input"][1:] == [
        {"type": "message", "role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": '{"path": "a.py"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "print(1)"},
    ]
    assert body["prompt_cache_key"] == "thread-7"


@pytest.mark.anyio
async def test_reasoning_high_shows_the_summary_and_sends_the_encrypted_item_back_verbatim() -> None:
    call = ToolCall("call_1", "read_file", {"path": "calc/ops.py"})
    first = Answer("", [call], summary=["Add subtracts.", "Read ops.py first."], encrypted="gAAAA-first==", reasoning_tokens=320, usage=(50, 400))
    with ResponsesServer([first, Answer("It returns a - b.")]) as srv:
        model = model_for(srv, reasoning="high")
        events = await collect(model, HISTORY, [READ])
        shown = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
        blocks = [e.block for e in events if isinstance(e, ReasoningFinished)]
        history = [*HISTORY, Message(role="assistant", tool_calls=[ToolCallRequest(id="call_1", name="read_file", arguments={"path": "calc/ops.py"})],
                                     reasoning=blocks),
                   Message(role="tool", tool_call_id="call_1", name="read_file", content="def add(a, b): return a - b")]
        await collect(model, history, [READ])
    assert shown == "Add subtracts.\n\nRead ops.py first."
    assert blocks == [Reasoning(format="openai-responses", kind="reasoning", id="rs_1_0", text=shown, data="gAAAA-first==",
                                summary=["Add subtracts.", "Read ops.py first."])]
    usage = next(e for e in events if isinstance(e, UsageReport))
    assert (usage.output_tokens, usage.reasoning_tokens) == (400, 320)  # reasoning tokens are output tokens
    for request in srv.requests:
        assert request.body["reasoning"] == {"effort": "high", "summary": "auto"}
        assert request.body["include"] == ["reasoning.encrypted_content"]
    assert srv.requests[1].body["input"][1] == {  # first in its turn, as it came (the server checked the encrypted content)
        "type": "reasoning", "id": "rs_1_0", "encrypted_content": "gAAAA-first==",
        "summary": [{"type": "summary_text", "text": "Add subtracts."}, {"type": "summary_text", "text": "Read ops.py first."}],
    }
    assert srv.requests[1].body["input"][2]["type"] == "function_call"


@pytest.mark.anyio
async def test_reasoning_that_cannot_go_back_is_left_out_and_a_reasoning_model_keeps_its_items_with_reasoning_off() -> None:
    altered = Reasoning(format="openai-responses", kind="reasoning", id="rs_x", text="[redacted]", data="gAAAA-x", altered=True)
    plain = Reasoning(format="openai-responses", kind="reasoning", id="rs_y", text="no data")  # no encrypted_content
    other = Reasoning(format="anthropic", kind="thinking", text="t", signature="s")
    history = [*HISTORY, Message(role="assistant", content="Hi.", reasoning=[altered, plain, other]), Message(role="user", content="Go on")]
    with ResponsesServer([Answer("ok", encrypted="gAAAA-z")]) as srv:
        events = await collect(model_for(srv, "gpt-5"), history, [READ])
    body = srv.requests[0].body
    assert [i.get("type", "message") for i in body["input"]] == ["message", "message", "message"]
    assert "reasoning" not in body and body["include"] == ["reasoning.encrypted_content"]  # gpt-5 reasons anyway: keep its items
    assert [e.block.data for e in events if isinstance(e, ReasoningFinished)] == ["gAAAA-z"]


@pytest.mark.anyio
async def test_a_model_that_knows_apply_patch_gets_the_native_tool_and_its_calls_become_cogs_apply_patch() -> None:
    answer = Answer("Fixing.", patches=[("call_p1", UPDATE)])
    with ResponsesServer([answer, Answer("Done.")]) as srv:
        model = model_for(srv, "gpt-5.2")
        events = await collect(model, HISTORY, [READ, PATCH])
        finished = [e for e in events if isinstance(e, ToolCallFinished)]
        assert [(e.id, e.name) for e in events if isinstance(e, ToolCallStarted)] == [("call_p1", "apply_patch")]
        assert [json.loads(e.arguments_text) for e in finished] == [{"operation": UPDATE}]
        assert events[-1] == TurnFinished(stop_reason="tool_calls")
        calls = [ToolCallRequest(id="call_p1", name="apply_patch", arguments={"operation": UPDATE})]
        history = [*HISTORY, Message(role="assistant", content="Fixing.", tool_calls=calls),
                   Message(role="tool", tool_call_id="call_p1", name="apply_patch", content="Error: the patch was not applied: hunk 1 not found")]
        await collect(model, history, [READ, PATCH])
    first, second = srv.requests[0].body, srv.requests[1].body
    assert first["tools"][1] == {"type": "apply_patch"}
    assert second["input"][2:] == [
        {"type": "apply_patch_call", "call_id": "call_p1", "status": "completed", "operation": UPDATE},
        {"type": "apply_patch_call_output", "call_id": "call_p1", "status": "failed", "output": "Error: the patch was not applied: hunk 1 not found"},
    ]


@pytest.mark.anyio
async def test_a_model_that_does_not_know_apply_patch_gets_cogs_function() -> None:
    with ResponsesServer([Answer("ok")]) as srv:
        await collect(model_for(srv, "gpt-4.1"), HISTORY, [PATCH])
    assert srv.requests[0].body["tools"][0]["type"] == "function" and srv.requests[0].body["tools"][0]["name"] == "apply_patch"


@pytest.mark.anyio
async def test_a_response_cut_at_the_output_limit_ends_with_length() -> None:
    with ResponsesServer([Answer("Half an ans", incomplete="max_output_tokens")]) as srv:
        events = await collect(model_for(srv, "gpt-4.1"), HISTORY, [READ])
    assert served_types(srv)[-1] == "response.incomplete"
    assert events[-1] == TurnFinished(stop_reason="length")


def _failed(code: str, message: str) -> Raw:
    response = {"id": "resp_f", "object": "response", "created_at": 1, "model": "gpt-5.2", "status": "failed", "output": [],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": {"code": code, "message": message}}
    return Raw.sse([("response.created", {"type": "response.created", "sequence_number": 0, "response": {**response, "status": "in_progress", "error": None}}),
                    ("response.failed", {"type": "response.failed", "sequence_number": 1, "response": response})])


@pytest.mark.anyio
async def test_a_failed_response_is_retried_when_a_retry_may_cure_it() -> None:
    with ResponsesServer([_failed("server_error", "The server had an error"), Fail(429, retry_after="0"), Answer("ok")]) as srv:
        events = await collect(model_for(srv, "gpt-4.1", retries=3), HISTORY, [READ])
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["ok"] and len(srv.requests) == 3


@pytest.mark.anyio
async def test_an_error_event_that_no_retry_cures_ends_the_turn_naming_it() -> None:
    error = Raw.sse([("error", {"type": "error", "sequence_number": 0, "code": "invalid_prompt", "message": "Invalid prompt: refused", "param": None})])
    with ResponsesServer([error]) as srv:
        with pytest.raises(ModelError, match="invalid_prompt: Invalid prompt: refused"):
            await collect(model_for(srv, "gpt-4.1", retries=3), HISTORY, [READ])
    assert len(srv.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["http", "stream"])
async def test_the_context_window_error_is_a_context_length_error(where: str) -> None:
    message = "Your input exceeds the context window of this model. Please adjust your input and try again."
    step = (Fail(400, body={"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}})
            if where == "http" else _failed("context_length_exceeded", message))
    with ResponsesServer([step]) as srv:
        with pytest.raises(ContextLengthError):
            await collect(model_for(srv, "gpt-4.1", retries=2), HISTORY, [READ])
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_a_stream_cut_before_the_response_completed_is_tried_again() -> None:
    with ResponsesServer([Cut(Answer("Hello"), after=2), Answer("Hello")]) as srv:
        events = await collect(model_for(srv, "gpt-4.1", retries=1), HISTORY, [READ])
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello" and len(srv.requests) == 2


def test_the_server_refuses_reasoning_it_did_not_stream_and_outputs_without_their_call() -> None:
    srv = ResponsesServer()
    srv.reasoning_items["rs_1"] = "enc"
    base = {"model": "gpt-5.2", "stream": True, "store": False}
    forged = {**base, "input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "other"}]}
    assert "could not be verified" in srv.refusal(forged).message
    orphan = {**base, "input": [{"type": "apply_patch_call_output", "call_id": "c9", "status": "completed"}]}
    assert "No tool call found" in srv.refusal(orphan).message
    events = ResponsesServer().render(Answer("x", summary=["s"]), RecordedRequest("POST", "/v1/responses", {}, {**base, "include": ["reasoning.encrypted_content"]}))
    assert events and all(block.startswith("event: response.") for block in events)


def test_the_last_line_says_the_reasoning_part_of_the_output() -> None:
    from cogcli.loop.turn import usage_of
    from cogcli.render.summary import usage_words

    report = UsageReport(input_tokens=5000, output_tokens=392, cached_input_tokens=4000, reasoning_tokens=300, cost_usd=0.0123)
    usage = usage_of(report) + usage_of(report.model_copy(update={"reasoning_tokens": None}))
    assert usage.reasoning_tokens == 300
    assert usage_words(usage, "openai:gpt-5.2").endswith(" for 10,000 in (8,000 cache read) + 784 out (300 reasoning) = 10,784 tokens")


def test_a_credential_in_a_summary_part_is_redacted_in_the_thread_and_that_item_not_sent_back() -> None:
    from cogcli.models.responses_items import to_input
    from cogcli.threads.entries import kept_reasoning

    key = "sk-proj-" + "Q7x" * 16
    block = Reasoning(format="openai-responses", kind="reasoning", id="rs_1", text=f"Use {key}.", data="gAAAA-1", summary=[f"Use {key}."])
    [kept] = kept_reasoning([block]) or []
    assert key not in kept.model_dump_json() and kept.altered and kept.data == "gAAAA-1"
    _, items = to_input([Message(role="assistant", content="ok", reasoning=[kept])], native_apply_patch=False)
    assert [i["type"] for i in items] == ["message"]


@pytest.mark.anyio
async def test_a_session_over_responses_fixes_with_the_native_call_sends_it_back_and_compacts(make_repo) -> None:
    from cogcli.session import Session
    from cogcli.settings.load import load_settings

    repo = make_repo("calc")
    script = [Answer("", patches=[("call_p1", UPDATE)], summary=["Patch add."]), Answer("Fixed.", summary=["Done."]),
              Answer("The person asked to fix add; it was patched."), Answer("Nothing left.")]
    with ResponsesServer(script) as srv:
        from cli_helpers import REPLAY

        session = Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False)
        await session.model.aclose()
        session.model = model_for(srv, reasoning="high")

        async def approve(approvals: list) -> dict:
            return {a.tool_call_id: True for a in approvals}

        async with session:
            result = await session.run("fix add", approve=approve)
            compacted = await session.compact(result.thread_id)
            await session.run("anything left?", thread=result.thread_id, approve=approve)
    assert result.tool_calls[0].error is None and "return a + b" in (repo / "calc" / "ops.py").read_text()
    assert compacted is not None
    second = srv.requests[1].body["input"]  # the run's next request: the call and its output, the reasoning first
    assert [i.get("type", "message") for i in second] == ["message", "reasoning", "apply_patch_call", "apply_patch_call_output"]
    summary_request = srv.requests[2].body
    assert "tools" not in summary_request and "apply_patch" in summary_request["input"][0]["content"]  # a transcript, nothing to call
    after = srv.requests[3].body["input"]  # the summary stands for all before it: no reasoning or output left without its call
    assert [i.get("type", "message") for i in after] == ["message", "message"]
    assert after[0]["content"].startswith("[Summary of the earlier work") and after[1]["content"] == "anything left?"
