"""Prompt caching (issue 27) at the model clients: Anthropic's breakpoints, OpenAI's stable prefix
and prompt_cache_key, the cache counts each stream reports, and what they cost — over real HTTP
against loopback servers that bill like the providers (:mod:`cache_servers`)."""

from __future__ import annotations

import json

import anyio
import pytest
from cache_servers import AnthropicCacheServer, OpenAICacheServer, anthropic_blocks
from model_servers import AnthropicServer, OpenAIServer, Reply, ToolCall, collect

from cogcli.compaction import ContextBudget
from cogcli.models import Message, ToolCallRequest, ToolSpec, UsageReport, get_model
from cogcli.models.anthropic import MAX_BREAKPOINTS, AnthropicModel, place_breakpoints
from cogcli.models.base import PROMPT_CACHE_KEY
from cogcli.models.sse import RetryPolicy, json_body

FAST = RetryPolicy(retries=0)
#: tool specs as long as real ones (cog's own come to a few thousand tokens)
TOOLS = [
    ToolSpec(name=f"tool_{i}", description=f"Tool number {i}. " + "It does a useful thing carefully. " * 30,
             parameters={"type": "object", "properties": {"path": {"type": "string", "description": "a path " * 10}}})
    for i in range(6)
]
SYSTEM = Message(role="system", content="You are cog, a coding agent. " + "Follow the rules of the house. " * 60)
TASK = Message(role="user", content="Fix the failing test in calc/")


def turn(i: int, calls: int = 1, size: int = 3000) -> list[Message]:
    """One step of a run: the assistant's calls and their results."""
    requests = [ToolCallRequest(id=f"c{i}_{k}", name="tool_0", arguments={"path": f"src/m{i}_{k}.py"}) for k in range(calls)]
    out = [Message(role="assistant", content=f"Step {i}.", tool_calls=requests)]
    out += [Message(role="tool", tool_call_id=r.id, name="tool_0", content=f"{i}{k} " * (size // 3)) for k, r in enumerate(requests)]
    return out


def history(steps: int, calls: int = 1, size: int = 3000) -> list[Message]:
    out = [SYSTEM, TASK]
    for i in range(steps):
        out += turn(i, calls, size)
    return out


def marks(body: dict) -> list[str]:
    """Where the body's breakpoints are: "tools", "system" or "messages[i]"."""
    found = [("tools" if "input_schema" in t else "?") for t in body.get("tools", []) if "cache_control" in t]
    if isinstance(body.get("system"), list):
        found += ["system" for b in body["system"] if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        found += [f"messages[{i}]" for b in m["content"] if "cache_control" in b]
    return found


def anthropic(model: str = "claude-sonnet-4-5", **kwargs) -> AnthropicModel:
    return AnthropicModel(model, base_url="http://127.0.0.1:9", **kwargs)


# --- Anthropic: where the breakpoints go -----------------------------------------------------


def test_breakpoints_on_the_last_tool_the_system_prompt_and_the_two_newest_ends() -> None:
    body = anthropic().request_body(history(3), TOOLS)
    assert marks(body) == ["tools", "system", "messages[4]", "messages[6]"]
    assert "cache_control" in body["tools"][-1] and all("cache_control" not in t for t in body["tools"][:-1])
    assert body["system"] == [{"type": "text", "text": SYSTEM.content, "cache_control": {"type": "ephemeral"}}]
    # the sliding ones: the end of this history, and where the previous request's ended (its last results)
    last = body["messages"][-1]["content"]
    assert last[-1]["cache_control"] == {"type": "ephemeral"} and all("cache_control" not in b for b in last[:-1])
    assert body["messages"][-2]["role"] == "assistant"


def test_never_more_than_four_breakpoints_also_in_long_tool_heavy_histories() -> None:
    for steps, calls in ((1, 1), (5, 3), (40, 12), (200, 2)):
        body = anthropic().request_body(history(steps, calls, size=300), TOOLS)
        assert len(marks(body)) <= MAX_BREAKPOINTS
        assert len([b for b, mark in anthropic_blocks(body) if mark]) == len(marks(body))


def test_no_breakpoint_on_a_prefix_under_the_models_minimum() -> None:
    short = [Message(role="system", content="Be brief."), Message(role="user", content="Hi")]
    tool = [ToolSpec(name="t", description="d", parameters={"type": "object"})]
    assert marks(anthropic().request_body(short, tool)) == []
    # a prefix of ~1,500 tokens: cached for Sonnet (1,024), not for Haiku (2,048)
    mid = [Message(role="system", content="rule " * 1000), Message(role="user", content="Hi")]
    sonnet, haiku = anthropic().request_body(mid, tool), anthropic("claude-haiku-4-5").request_body(mid, tool)
    assert marks(sonnet) == ["system", "messages[0]"] and marks(haiku) == []
    # only the tools are short: the system prompt and the history still get theirs
    assert marks(anthropic().request_body([mid[0], TASK, *turn(0), *turn(1)], tool)) == ["system", "messages[2]", "messages[4]"]
    # tools and system together are short: only the history
    assert marks(anthropic().request_body(history(2), tool)) == ["messages[2]", "messages[4]"]


def test_one_hour_ttl_is_a_setting_and_caching_can_be_off() -> None:
    body = anthropic(cache_ttl="1h").request_body(history(2), TOOLS)
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert all(b.get("cache_control", {"ttl": "1h"})["ttl"] == "1h" for m in body["messages"] for b in m["content"])
    assert marks(anthropic(cache=False).request_body(history(2), TOOLS)) == []
    assert marks(anthropic().request_body(history(2), [])) == []  # a one-off request (a summary): no write it never reads
    with pytest.raises(ValueError, match="5m, 1h"):
        anthropic(cache_ttl="2h")


def test_place_breakpoints_says_where_they_went() -> None:
    body = {"tools": [{"name": "a", "description": "x" * 5000, "input_schema": {}}], "system": "s" * 10,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]}
    assert place_breakpoints(body, minimum=1024) == [("messages", 0), ("system", 0), ("tools", 0)]


# --- Anthropic: over HTTP, billed by the cache rules -------------------------------------------


def run_turns(model, server, steps: int, calls: int = 1) -> list[UsageReport]:
    """A run's requests: each step's history extends the last one by a turn."""
    reports = []

    async def go() -> None:
        h = [SYSTEM, TASK]
        for i in range(steps):
            events = await collect(model, h, TOOLS)
            reports.extend(e for e in events if isinstance(e, UsageReport))
            h = h + turn(i, calls)
        await model.aclose()

    anyio.run(go)
    return reports


def test_anthropic_reads_the_cache_from_the_second_request_and_reports_reads_writes_and_cost() -> None:
    steps = 6
    with AnthropicCacheServer([Reply("ok", [ToolCall("c", "tool_0", {"path": "a"})]) for _ in range(steps)]) as srv:
        model = get_model("anthropic:claude-sonnet-4-5", base_url=srv.base_url, api_key="k", retry=FAST)
        reports = run_turns(model, srv, steps)
    assert [r.input_tokens for r in reports] == [b.total for b in srv.bills]
    assert [r.cached_input_tokens for r in reports] == [b.read for b in srv.bills]
    assert [r.cache_write_tokens for r in reports] == [b.written for b in srv.bills]
    assert reports[0].cached_input_tokens == 0 and reports[0].cache_write_tokens > 1000
    for before, now in zip(reports, reports[1:]):  # each request reads all the one before it wrote
        assert now.cached_input_tokens >= before.input_tokens - 50
        assert now.cache_write_tokens < 1500  # only the step just added is written
    # claude-sonnet-4-5: $3 input, $0.30 cache read, $3.75 cache write, $15 output per million
    r = reports[-1]
    plain = r.input_tokens - r.cached_input_tokens - r.cache_write_tokens
    expected = (plain * 3 + r.cached_input_tokens * 0.3 + r.cache_write_tokens * 3.75 + r.output_tokens * 15) / 1e6
    assert r.cost_usd == pytest.approx(expected)


def test_a_long_tool_heavy_turn_still_reads_the_cache_next_time() -> None:
    """A step of 15 calls adds 31 blocks, more than the 20 Anthropic looks back: the breakpoint
    at the end of the previous history is read exactly."""
    with AnthropicCacheServer([Reply("ok") for _ in range(4)]) as srv:
        model = get_model("anthropic:claude-sonnet-4-5", base_url=srv.base_url, api_key="k", retry=FAST)
        reports = run_turns(model, srv, 4, calls=15)
    for before, now in zip(srv.bills, srv.bills[1:]):
        assert now.read == before.total  # everything sent before is read back


def test_the_simulated_lookback_is_20_blocks() -> None:
    """Without the breakpoint at the previous end, a 31-block turn is past the lookback: the
    request reads only what a breakpoint within 20 blocks finds (the system prompt's prefix)."""
    import httpx

    model = anthropic()
    first = model.request_body([SYSTEM, TASK], TOOLS)
    second = model.request_body([SYSTEM, TASK, *turn(0, calls=15, size=300)], TOOLS)
    del second["messages"][0]["content"][-1]["cache_control"]  # only the end of the history stays marked
    with AnthropicCacheServer([Reply("a"), Reply("b")]) as srv:
        for body in (first, second):
            httpx.post(srv.base_url + "/v1/messages", content=json_body(body), headers={"content-type": "application/json"})
    assert srv.bills[1].read < srv.bills[0].total  # the task's breakpoint was not found
    assert srv.bills[1].read > 0  # the system prompt's was (an exact hit)


def test_a_fifth_breakpoint_is_refused_as_the_api_does() -> None:
    body = anthropic().request_body(history(3), TOOLS)
    body["messages"][0]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    import httpx

    with AnthropicCacheServer([Reply("ok")]) as srv:
        answer = httpx.post(srv.base_url + "/v1/messages", content=json_body(body), headers={"content-type": "application/json"})
    assert answer.status_code == 400 and "maximum of 4 blocks" in answer.text


@pytest.mark.parametrize("late", [False, True])
def test_anthropic_usage_from_message_start_or_message_delta(late: bool) -> None:
    extra = {"cache_creation_input_tokens": 300, "cache_read_input_tokens": 1200}
    with AnthropicServer([Reply("hi", usage=(40, 9), usage_extra=extra, usage_late=late)]) as srv:
        model = get_model("anthropic:claude-haiku-4-5-20251001", base_url=srv.base_url, api_key="k", retry=FAST)
        events = anyio.run(lambda: collect(model, [TASK], []))
    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert (report.input_tokens, report.cached_input_tokens, report.cache_write_tokens, report.output_tokens) == (1540, 1200, 300, 9)
    assert report.cost_usd == pytest.approx((40 * 1.0 + 1200 * 0.1 + 300 * 1.25 + 9 * 5.0) / 1e6)


def test_one_hour_writes_are_priced_at_twice_the_input() -> None:
    extra = {"cache_creation_input_tokens": 1000, "cache_read_input_tokens": 0,
             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1000}}
    with AnthropicServer([Reply("hi", usage=(0, 0), usage_extra=extra)]) as srv:
        model = get_model("anthropic:claude-sonnet-4-5", base_url=srv.base_url, api_key="k", retry=FAST, cache_ttl="1h")
        events = anyio.run(lambda: collect(model, [TASK], []))
    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert report.cost_usd == pytest.approx(1000 * 6.0 / 1e6)


# --- OpenAI and compatible servers --------------------------------------------------------------


def test_openai_prefix_is_byte_identical_between_requests_tools_first() -> None:
    steps = 5
    with OpenAICacheServer([Reply("ok") for _ in range(steps)]) as srv:
        model = get_model("openai:gpt-4o", base_url=srv.base_url, api_key="k", retry=FAST)
        reports = run_turns(model, srv, steps)
        bodies = [r.body for r in srv.requests]
    assert list(bodies[0])[:3] == ["model", "tools", "messages"]
    for before, now in zip(bodies, bodies[1:]):
        sent = json_body({"model": before["model"], "tools": before["tools"], "messages": before["messages"]})[:-2]  # without "]}"
        assert json_body(now).startswith(sent)  # the request before is a byte-identical prefix of this one
        assert now["messages"][: len(before["messages"])] == before["messages"]
    # OpenAI's rules: cached from the second request on, in 128-token steps past 1,024
    assert reports[0].cached_input_tokens == 0
    assert all(r.cached_input_tokens >= 1024 and (r.cached_input_tokens - 1024) % 128 == 0 for r in reports[1:])
    share = sum(r.cached_input_tokens for r in reports[1:]) / sum(r.input_tokens for r in reports[1:])
    assert share > 0.75
    assert all(r.cache_write_tokens is None for r in reports)  # OpenAI reports no writes


@pytest.mark.parametrize("late", [False, True])
def test_openai_cached_tokens_from_the_usage_chunk_or_the_finishing_chunk(late: bool) -> None:
    extra = {"prompt_tokens_details": {"cached_tokens": 1152, "audio_tokens": 0}}
    with OpenAIServer([Reply("hi", usage=(2000, 10), usage_extra=extra, usage_late=late)]) as srv:
        model = get_model("openai:gpt-4o-mini-2024-07-18", base_url=srv.base_url, api_key="k", retry=FAST)
        events = anyio.run(lambda: collect(model, [TASK], []))
    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert (report.input_tokens, report.cached_input_tokens, report.output_tokens) == (2000, 1152, 10)
    assert report.cost_usd == pytest.approx((848 * 0.15 + 1152 * 0.075 + 10 * 0.6) / 1e6)


def test_deepseek_cache_hit_tokens_count_as_cached() -> None:
    with OpenAIServer([Reply("hi", usage=(500, 5), usage_extra={"prompt_cache_hit_tokens": 384, "prompt_cache_miss_tokens": 116})]) as srv:
        model = get_model("openai:deepseek-chat", base_url=srv.base_url, api_key="k", retry=FAST)
        events = anyio.run(lambda: collect(model, [TASK], []))
    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert report.cached_input_tokens == 384 and report.cost_usd is None  # not in the table: unknown


def with_key(model, messages, tools):
    async def go():
        token = PROMPT_CACHE_KEY.set("thr_abc123")
        try:
            return await collect(model, messages, tools)
        finally:
            PROMPT_CACHE_KEY.reset(token)

    return anyio.run(go)


def test_prompt_cache_key_is_the_thread_id_where_it_is_wanted() -> None:
    with OpenAIServer([Reply("a"), Reply("b"), Reply("c")]) as srv:
        default = get_model("openai:gpt-4o", base_url=srv.base_url, retry=FAST)
        wanted = get_model("openai:gpt-4o", base_url=srv.base_url, retry=FAST, prompt_cache_key=True)
        with_key(default, [TASK], [])
        with_key(wanted, [TASK], [])
        anyio.run(lambda: collect(wanted, [TASK], []))  # outside a run: no key
    bodies = [r.body for r in srv.requests]
    assert "prompt_cache_key" not in bodies[0]  # another server than api.openai.com: not by default
    assert bodies[1]["prompt_cache_key"] == "thr_abc123"
    assert "prompt_cache_key" not in bodies[2]
    assert get_model("openai:gpt-4o", api_key="k").prompt_cache_key is True  # api.openai.com documents it


def test_a_server_that_refuses_unknown_fields_is_asked_again_without_the_key() -> None:
    with OpenAICacheServer([Reply("one"), Reply("two")], strict=True) as srv:
        model = get_model("openai:local-model", base_url=srv.base_url, retry=FAST, prompt_cache_key=True)
        first = with_key(model, [TASK], [])
        second = with_key(model, [TASK], [])
    assert "".join(e.text for e in first if e.type == "text-delta") == "one"
    assert "".join(e.text for e in second if e.type == "text-delta") == "two"
    assert srv.refused == 1 and model.prompt_cache_key is False  # asked once, never again
    assert ["prompt_cache_key" in r.body for r in srv.requests] == [True, False, False]


# --- compaction keeps the cached prefix ---------------------------------------------------------


@pytest.mark.parametrize("spec", ["anthropic:claude-sonnet-4-5", "openai:gpt-4o"])
def test_a_compaction_leaves_tools_system_and_task_byte_identical(spec: str) -> None:
    model = get_model(spec, base_url="http://127.0.0.1:9", api_key="k")
    h = history(30, size=6000)
    budget = ContextBudget(window=60_000, specs=TOOLS)
    compacted = anyio.run(lambda: budget.before_request(h))
    assert budget.compactions == 1 and len(json_body(model.request_body(compacted, TOOLS))) < len(json_body(model.request_body(h, TOOLS))) * 0.7
    before, after = model.request_body(h, TOOLS), model.request_body(compacted, TOOLS)
    assert json.dumps(after["tools"]) == json.dumps(before["tools"])
    if spec.startswith("anthropic"):
        assert json.dumps(after["system"]) == json.dumps(before["system"])
        assert json.dumps(after["messages"][0]["content"][0]) == json.dumps(before["messages"][0]["content"][0])
    else:
        assert json.dumps(after["messages"][:2]) == json.dumps(before["messages"][:2])
    # on the wire: the body up to the end of the task is the same bytes
    head = json_body(before).split(TASK.content.encode())[0]
    assert json_body(after).startswith(head)


def test_a_summary_keeps_the_task_and_the_cache_reads_it_after() -> None:
    """Many small steps: stubs cannot free enough, the model summarizes; the system prompt, the
    tools and the task stay, so the request after the compaction still reads them from the cache."""
    h = [SYSTEM, TASK]
    for i in range(150):
        h += turn(i, size=60)

    async def summarize(messages: list[Message]) -> str:
        return "Read the modules; nothing found yet."

    budget = ContextBudget(window=8_000, specs=TOOLS)
    compacted = anyio.run(lambda: budget.before_request(h, summarize=summarize))
    assert budget.compactions == 1
    assert compacted[0] is SYSTEM and compacted[1] is TASK and "nothing found yet" in compacted[2].content
    with AnthropicCacheServer([Reply("ok"), Reply("ok")]) as srv:
        model = get_model("anthropic:claude-sonnet-4-5", base_url=srv.base_url, api_key="k", retry=FAST)

        async def go() -> None:
            await collect(model, h[:4], TOOLS)
            await collect(model, compacted, TOOLS)
            await model.aclose()

        anyio.run(go)
    system_end = srv.bills[0].written  # the first request wrote tools + system + the first step
    assert srv.bills[1].read > 0 and srv.bills[1].read <= system_end


def test_a_compaction_that_frees_little_is_not_made() -> None:
    # a history just over the threshold whose only droppable results are small: not worth a full-price request
    h = [SYSTEM, Message(role="user", content="x" * 22_000)]
    for i in range(3):
        h += turn(i, size=150)
    budget = ContextBudget(window=8_000)
    out = anyio.run(lambda: budget.before_request(h))
    assert out is h and budget.compactions == 0 and budget.skipped == 1
