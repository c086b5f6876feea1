"""The run loop's context budget, in process over loopback HTTP: a context-length error compacts and
retries once, a second one ends the run with its code, and finish reports peak and window."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from model_servers import OpenAIServer, Reply, ToolCall
from runtime_helpers import big

from cogcli.contract.errors import ErrorCode
from cogcli.wire.events import BaseEvent, CompactionEvent, FinishEvent
from cogcli.threads.store import ThreadStore, ToolResultEntry
from cogcli.models import get_model
from cogcli.models.sse import RetryPolicy
from cogcli.loop.runtime import Agent, Cogitator


def run(server: OpenAIServer, *, window: int | None, max_result_length: int = 20_000) -> tuple[Any, list[BaseEvent], ThreadStore]:
    events: list[BaseEvent] = []
    store = ThreadStore(":memory:")

    async def go() -> Any:
        model = get_model("openai:my-model", base_url=server.base_url, api_key="sk-test", retry=RetryPolicy(retries=0))
        try:
            agent = Agent(name="t", instructions="be brief", model=model, tools=[big], context_window=window, max_result_length=max_result_length)
            return await Cogitator(store).run(agent, input="go", on_event=events.append)
        finally:
            await model.aclose()

    return anyio.run(go), events, store


def reads(n: int, size: int) -> list[Reply]:
    return [Reply("", [ToolCall(f"c{i}", "big", {"size": size})]) for i in range(n)] + [Reply("done")]


def test_an_unknown_window_is_learnt_from_the_first_context_length_error() -> None:
    with OpenAIServer(reads(8, 8000), token_limit=6000) as server:
        result, events, store = run(server, window=None)
    assert result.status == "completed", result.error
    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    assert compactions[0].reason == "context-length-error" and compactions[0].context_window == 6000
    assert len(server.rejected) == 1  # learnt: later requests are compacted before they are sent
    finish = events[-1]
    assert isinstance(finish, FinishEvent) and finish.context_window == 6000 and finish.peak_context_tokens <= 6000
    full = [e.entry for e in store.entries(result.thread_id) if isinstance(e.entry, ToolResultEntry)]
    assert [len(r.tool_results[0].content) for r in full] == [8000] * 8  # memory keeps every full result


def test_a_request_that_still_does_not_fit_ends_the_run_with_the_code() -> None:
    # the last turn alone is over the limit: it is never dropped, so the retry fails too
    with OpenAIServer(reads(1, 30_000), token_limit=5000) as server:
        result, events, _ = run(server, window=None, max_result_length=40_000)
    assert result.status == "error" and result.error_code == ErrorCode.CONTEXT_LENGTH_EXCEEDED
    assert "maximum context length is 5000 tokens" in (result.error or "")
    assert len(server.rejected) == 2  # one retry, not a loop


def test_usage_is_exact_with_cached_input_and_the_peak() -> None:
    from model_servers import Raw

    def turn(text: str, prompt: int, cached: int) -> Raw:
        return Raw.sse([
            (None, {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}),
            (None, {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": cached}}}),
            (None, "[DONE]"),
        ])

    with OpenAIServer([turn("hi", 1200, 1024)]) as server:
        result, events, _ = run(server, window=8000)
    finish = events[-1]
    assert isinstance(finish, FinishEvent)
    assert finish.usage is not None and (finish.usage.input_tokens, finish.usage.output_tokens, finish.usage.cached_input_tokens) == (1200, 3, 1024)
    assert finish.peak_context_tokens == 1200 and finish.context_window == 8000
    wire = finish.to_wire()
    assert wire["usage"]["cachedInputTokens"] == 1024 and wire["peakContextTokens"] == 1200 and wire["contextWindow"] == 8000


@pytest.mark.parametrize("window", [None, 100_000])
def test_a_short_run_is_never_compacted(window: int | None) -> None:
    with OpenAIServer(reads(2, 100)) as server:
        result, events, _ = run(server, window=window)
    assert result.status == "completed"
    assert not [e for e in events if isinstance(e, CompactionEvent)]
    assert "compactions" not in events[-1].to_wire()


def test_the_window_an_openai_compatible_server_reports() -> None:
    from cogcli.models.context import reported_window

    async def ask(server: OpenAIServer, name: str) -> int | None:
        model = get_model(f"openai:{name}", base_url=server.base_url, api_key="sk-test")
        try:
            return await reported_window(model)
        finally:
            await model.aclose()

    with OpenAIServer([], served_model="qwen-coder", context_length=32_768) as server:
        assert anyio.run(ask, server, "qwen-coder") == 32_768
        assert anyio.run(ask, server, "other") is None
    with OpenAIServer([]) as server:  # no model list: nothing reported, nothing taken from the script
        assert anyio.run(ask, server, "qwen-coder") is None and server.requests == []
