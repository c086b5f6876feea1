"""Compaction of the history a model reads: stubs for old results, then a summary; and the
context windows and context-length errors of each provider."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from cogcli.compaction import ContextBudget, describe_call, describer, drop_results, estimate_messages, is_stub, summary_cut
from cogcli.contract.errors import ContextLengthError, ErrorCode
from cogcli.wire.events import CompactionEvent
from cogcli.project.instructions import NOTE_PREFIX
from cogcli.models import get_model
from cogcli.models.base import Message, ToolCallRequest, UsageReport
from cogcli.models.context import context_overflow, known_window, window_from_models
from model_servers import AnthropicServer, Fail, OpenAIServer, Reply, collect
from cogcli.models.sse import RetryPolicy
from cogcli.contract.tool import NoParameters, tool, tool_index
from workspace_tools import workspace_tools


def history(n_turns: int, size: int = 4000) -> list[Message]:
    out = [Message(role="system", content="system prompt"), Message(role="user", content="Fix the bug in src/")]
    for i in range(n_turns):
        call = ToolCallRequest(id=f"c{i}", name="read_file", arguments={"path": f"src/m{i}.py", "offset": 1, "limit": 200})
        out.append(Message(role="assistant", content=f"reading m{i}", tool_calls=[call]))
        out.append(Message(role="tool", tool_call_id=f"c{i}", name="read_file", content=f"{i}" * size))
    return out


#: what the run's stubs say of a call: the workspace tools' own ``recall`` declarations
DESCRIBE = describer(tool_index(workspace_tools(Path(__file__).resolve().parents[1])))


def test_describe_says_what_it_was_and_how_to_get_it_again() -> None:
    assert DESCRIBE("read_file", {"path": "src/a.py", "offset": 1, "limit": 200}) == ("read_file src/a.py, lines 1–200", "read it again if needed")
    assert DESCRIBE("read_file", {"path": "src/a.py", "offset": 40}) == ("read_file src/a.py, from line 40", "read it again if needed")
    assert DESCRIBE("run_tests", {"paths": ["tests/test_a.py"]})[0] == 'run_tests {"paths": ["tests/test_a.py"]}'
    assert DESCRIBE("run_tests", {})[1] == "run the tests again if needed"
    assert DESCRIBE("search_text", {"pattern": "foo"})[0] == 'search_text {"pattern": "foo"}'
    assert DESCRIBE("search_text", {"pattern": "foo", "path": "src", "glob": None}) == ('search_text src {"pattern": "foo"}', "call it again if needed")


def test_a_tool_without_a_recall_declaration_is_described_by_its_short_arguments() -> None:
    """The loop knows no tool by name: an MCP tool or a user's own gets the plain description."""
    what, again = describe_call("write_file", {"path": "a.py", "content": "x = 1\n" * 100, "mode": "w", "force": True})
    assert what == 'write_file a.py {"mode": "w", "force": true}' and again == "call it again if needed"
    assert describe_call("read_file", {"path": "a.py", "offset": 1, "limit": 5})[0] == 'read_file a.py {"offset": 1, "limit": 5}'
    broken = describer({"odd": tool(name="odd", description="d", parameters=NoParameters, execute=lambda: "", recall=lambda a: 1 / 0)})  # type: ignore[arg-type,return-value]
    assert broken("odd", {"path": "x"}) == ("odd x", "call it again if needed")


def test_drop_results_oldest_first_never_the_last_turn_and_same_objects_elsewhere() -> None:
    h = history(5)
    new, dropped, saved = drop_results(h, need=2000, describe=DESCRIBE)
    assert [d.tool_call_id for d in dropped] == ["c0", "c1"]  # oldest first, until enough is saved
    assert new[3].content == "[read_file src/m0.py, lines 1–200: dropped to save context; read it again if needed]"
    assert is_stub(new[3]) and saved >= 2000
    assert new[-1] is h[-1] and new[2] is h[2]  # untouched messages are the same objects
    everything, dropped_all, _ = drop_results(h, need=10**9)
    assert [d.tool_call_id for d in dropped_all] == ["c0", "c1", "c2", "c3"]  # c4, the last turn, kept
    assert everything[-1].content == h[-1].content
    assert h[3].content == "0" * 4000  # the input is not changed


def test_within_a_turn_the_largest_result_goes_first_and_instruction_notes_stay() -> None:
    calls = [ToolCallRequest(id="a", name="read_file", arguments={"path": "small.py"}), ToolCallRequest(id="b", name="read_file", arguments={"path": "big.py"})]
    note = f"{NOTE_PREFIX}pkg/AGENTS.md: they apply to pkg/ …]\nuse tabs"
    h = [
        Message(role="user", content="task"),
        Message(role="assistant", tool_calls=calls),
        Message(role="tool", tool_call_id="a", name="read_file", content="s" * 1000 + "\n\n" + note),
        Message(role="tool", tool_call_id="b", name="read_file", content="b" * 9000),
        Message(role="assistant", content="done?", tool_calls=[ToolCallRequest(id="c", name="run_tests", arguments={})]),
        Message(role="tool", tool_call_id="c", name="run_tests", content="ok"),
    ]
    new, dropped, _ = drop_results(h, need=100)
    assert [d.tool_call_id for d in dropped] == ["b"]
    new, dropped, _ = drop_results(h, need=10**6)
    assert [d.tool_call_id for d in dropped] == ["b", "a"]
    assert new[2].content.startswith("[read_file small.py: dropped") and new[2].content.endswith("use tabs")


def test_summary_cut_keeps_the_last_turn_and_what_fits() -> None:
    h = history(6, size=1000)
    first, cut = summary_cut(h, keep_tokens=10)
    assert (first, cut) == (2, len(h) - 2)  # everything but the system prompt, the task and the last turn
    first, cut = summary_cut(h, keep_tokens=estimate_messages(h[-6:]))
    assert h[cut].role == "assistant" and len(h) - cut == 6


def test_budget_estimates_from_the_report_plus_the_new_text() -> None:
    budget = ContextBudget(window=100_000)
    h = history(2)
    budget.sent(h)
    budget.observe(UsageReport(input_tokens=5000, output_tokens=10))
    assert budget.peak == 5000 and budget.estimate(h) == 5000
    extra = [*h, Message(role="assistant", content="x" * 350)]
    added = budget.estimate(extra) - 5000
    assert 100 <= added <= 400  # the new text only, scaled by what the report taught
    assert budget.estimate(h[:3]) < 5000  # not an extension: the whole estimate, scaled


def test_before_request_compacts_under_the_target_and_emits_one_event() -> None:
    events: list[CompactionEvent] = []
    budget = ContextBudget(window=10_000)
    h = history(12, size=3000)  # ~ 10k+ estimated tokens
    out = anyio.run(lambda: budget.before_request(h, emit=events.append))
    assert len(events) == 1 and events[0].reason == "threshold"
    assert events[0].tokens_before > 8_000 >= 5_000 >= events[0].tokens_after
    assert budget.estimate(out) <= 5_000 and out[-1] is h[-1] and budget.compactions == 1
    assert anyio.run(lambda: budget.before_request(out, emit=events.append)) is out  # under the threshold now: as it is
    assert len(events) == 1


def test_a_summary_replaces_the_oldest_turns_when_stubs_are_not_enough() -> None:
    asked: list[list[Message]] = []

    async def summarize(messages: list[Message]) -> str:
        asked.append(messages)
        return "Read m0..m28; the bug is in m3."

    # many turns of small results: stubs barely help
    h = [Message(role="system", content="sys"), Message(role="user", content="Fix it")]
    for i in range(60):
        h.append(Message(role="assistant", content="thinking " * 40, tool_calls=[ToolCallRequest(id=f"c{i}", name="list_files", arguments={})]))
        h.append(Message(role="tool", tool_call_id=f"c{i}", name="list_files", content="a.py"))
    events: list[CompactionEvent] = []
    budget = ContextBudget(window=6_000)
    out = anyio.run(lambda: budget.before_request(h, summarize=summarize, emit=events.append))
    assert len(asked) == 1 and "Fix it" in asked[0][1].content  # the summarizer reads the task
    assert out[0] is h[0] and out[1] is h[1]  # the system prompt and the task are kept as they were
    assert out[2].role == "user" and "the bug is in m3" in out[2].content and "Fix it" not in out[2].content
    assert out[3].role == "assistant" and out[-1] is h[-1]
    assert events[0].summarized_messages > 0 and budget.estimate(out) <= 3_000


def test_a_failed_summary_falls_back_to_the_list_of_calls() -> None:
    async def broken(messages: list[Message]) -> str:
        raise RuntimeError("model down")

    h = [Message(role="user", content="Fix it")]
    for i in range(40):
        h.append(Message(role="assistant", content="x " * 200, tool_calls=[ToolCallRequest(id=f"c{i}", name="read_file", arguments={"path": f"f{i}.py"})]))
        h.append(Message(role="tool", tool_call_id=f"c{i}", name="read_file", content="ok"))
    out = anyio.run(lambda: ContextBudget(window=4_000).before_request(h, summarize=broken))
    assert out[0] is h[0] and "called read_file f0.py" in out[1].content and len(out) < len(h)


def test_after_overflow_learns_the_window_from_the_error() -> None:
    budget = ContextBudget(window=None)
    h = history(10, size=4000)
    out = anyio.run(lambda: budget.after_overflow(h, limit=8_000, tokens=12_000))
    assert budget.window == 8_000
    assert budget.estimate(out) <= int(8_000 * 0.4) + 50


# --- windows and context-length errors ----------------------------------------------------


def test_known_windows() -> None:
    assert known_window("openai:gpt-4o-mini") == 128_000
    # genai-prices' window first (it gives gpt-4.1 1,000,000; OpenAI's page 1,047,576: the lower, safe)
    from cogcli.settings.price_data import maintained_window

    assert known_window("openai:gpt-4.1-2025-04-14") == maintained_window("openai", "gpt-4.1") is not None
    assert known_window("anthropic:claude-sonnet-4-5") == 200_000
    assert known_window("openai:anthropic/claude-3.5-sonnet") == 200_000  # OpenRouter names
    assert known_window("openai:gpt-4") == 8_192
    assert known_window("openai:my-finetune") is None and known_window("replay:x.jsonl") is None
    # names that used to fall through to a shorter prefix with another window
    assert known_window("openai:gpt-4.5-preview") == 128_000 and known_window("openai:gpt-4-32k") in (32_000, 32_768)  # genai-prices: 32,000
    assert known_window("openai:o1-mini") == 128_000 and known_window("openai:chatgpt-4o-latest") == 128_000
    assert known_window("openai:ft:gpt-4o-mini-2024-07-18:acme::a1b2") == 128_000  # a fine-tune has its base's window


def test_cog_context_window_is_held_to_the_flags_floor(tmp_path, monkeypatch) -> None:
    from cogcli.settings.load import load_settings
    from cogcli.contract.errors import ConfigError

    monkeypatch.setenv("COG_CONTEXT_WINDOW", "100")
    with pytest.raises(ConfigError, match="at least 1024"):
        load_settings(tmp_path)
    monkeypatch.setenv("COG_CONTEXT_WINDOW", "32768")
    assert load_settings(tmp_path).context_window == 32768


def test_window_from_a_servers_model_list() -> None:
    assert window_from_models({"data": [{"id": "qwen", "max_model_len": 32768}]}, "qwen") == 32768  # vLLM
    assert window_from_models({"data": [{"id": "x/y", "context_length": 4096}]}, "x/y") == 4096  # OpenRouter
    assert window_from_models({"data": [{"id": "other", "max_model_len": 1}]}, "qwen") is None


@pytest.mark.parametrize(
    ("status", "body", "limit", "tokens"),
    [
        (400, {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}, 128000, 130532),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"}}, 200000, 208310),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"}}, 200000, 188240),
        (400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).", "type": "BadRequestError", "code": 400}, 4096, 5000),
        (400, {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}, 8192, 9000),
    ],
)
def test_context_length_errors_in_each_providers_words(status, body, limit, tokens) -> None:
    found = context_overflow(status, json.dumps(body).encode())
    assert found is not None and (found.limit, found.tokens) == (limit, tokens)


def test_other_errors_are_not_context_length_errors() -> None:
    assert context_overflow(400, b'{"error": {"message": "Invalid tool_call_id c9", "type": "invalid_request_error"}}') is None
    assert context_overflow(500, b'{"error": {"message": "maximum context length is 3 tokens"}}') is None
    assert context_overflow(429, b"rate limited") is None


@pytest.mark.parametrize("server_class", [OpenAIServer, AnthropicServer])
def test_the_clients_raise_context_length_error_over_http(server_class) -> None:
    with server_class([Reply("never")], token_limit=10) as server:
        spec = "openai:gpt-4o" if server_class is OpenAIServer else "anthropic:claude-sonnet-4-5"
        model = get_model(spec, base_url=server.base_url, api_key="sk-test", retry=RetryPolicy(retries=2, base_delay=0))

        async def go() -> None:
            try:
                await collect(model, [Message(role="user", content="x" * 400)])
            finally:
                await model.aclose()

        with pytest.raises(ContextLengthError) as info:
            anyio.run(go)
    assert info.value.code == ErrorCode.CONTEXT_LENGTH_EXCEEDED
    assert info.value.limit == 10 and info.value.tokens == server.rejected[0]
    assert len(server.requests) == 1  # not retried: the same request would fail the same way


def test_cached_input_tokens_are_reported() -> None:
    from model_servers import Raw

    chunks = [
        ("", {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}),
        ("", {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 64}}}),
        ("", "[DONE]"),
    ]
    with OpenAIServer([Raw.sse([(None, d) for _, d in chunks])]) as server:
        model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")

        async def go() -> list:
            try:
                return await collect(model, [Message(role="user", content="hi")])
            finally:
                await model.aclose()

        events = anyio.run(go)
    usage = next(e for e in events if isinstance(e, UsageReport))
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (100, 5, 64)


def test_a_fail_step_is_not_a_context_error() -> None:
    with OpenAIServer([Fail(400, "bad request: no such model")]) as server:
        model = get_model("openai:gpt-4o", base_url=server.base_url, api_key="sk-test")

        async def go() -> None:
            try:
                await collect(model, [Message(role="user", content="hi")])
            finally:
                await model.aclose()

        with pytest.raises(Exception) as info:
            anyio.run(go)
    assert not isinstance(info.value, ContextLengthError)


def test_long_arguments_of_older_turns_are_shortened_too() -> None:
    content = "print('x')\n" * 3000
    h = [
        Message(role="user", content="write it"),
        Message(role="assistant", tool_calls=[ToolCallRequest(id="w", name="write_file", arguments={"path": "a.py", "content": content})]),
        Message(role="tool", tool_call_id="w", name="write_file", content='{"path": "a.py", "created": true}'),
        Message(role="assistant", content="now test", tool_calls=[ToolCallRequest(id="t", name="run_tests", arguments={})]),
        Message(role="tool", tool_call_id="t", name="run_tests", content="ok"),
    ]
    new, dropped, saved = drop_results(h, need=1000)
    assert new[1].tool_calls[0].arguments == {"path": "a.py", "content": f"[{len(content):,} characters dropped to save context]"}
    assert dropped[0].tool_call_id == "w" and dropped[0].stub.startswith("[arguments of write_file a.py: dropped")
    assert saved > 5000 and h[1].tool_calls[0].arguments["content"] == content
    # the last turn's own arguments are never shortened, and a lone user message is not "summarized"
    alone = [Message(role="user", content="x"), h[1], h[2]]
    out = anyio.run(lambda: ContextBudget(window=2000).before_request(alone))
    assert out == alone


def test_a_second_summary_keeps_the_users_words_the_first_carried() -> None:
    from cogcli.compaction import summary_message

    first = summary_message([Message(role="user", content="Fix the parser"), Message(role="assistant", content="ok")], "read a.py")
    second = summary_message([first, Message(role="assistant", content="x"), Message(role="user", content="Also add a test")], "fixed a.py")
    assert "Fix the parser" in second.content and "Also add a test" in second.content
    assert second.content.index("Fix the parser") < second.content.index("Also add a test") < second.content.index("fixed a.py")
    assert "read a.py" not in second.content  # the old summary itself is folded into the new one by the model


def test_a_summary_keeps_the_subdirectory_instructions_the_replaced_results_carried() -> None:
    """A subdirectory's AGENTS.md is told once, with the first result that touches it; when that
    result is summarized away, the summary carries the note on (and so does a later summary)."""
    from cogcli.compaction import summary_message

    note = f"{NOTE_PREFIX}pkg/AGENTS.md: they apply to pkg/ …]\nuse tabs in pkg/"
    replaced = [
        Message(role="user", content="Fix pkg"),
        Message(role="assistant", tool_calls=[ToolCallRequest(id="a", name="read_file", arguments={"path": "pkg/a.py"})]),
        Message(role="tool", tool_call_id="a", name="read_file", content="x = 1\n\n" + note),
    ]
    first = summary_message(replaced, "read pkg/a.py")
    assert note in first.content and "Fix pkg" in first.content
    again = summary_message([first, Message(role="user", content="and tests")], "more")
    assert again.content.count(note) == 1 and "Fix pkg" in again.content and "and tests" in again.content
    assert "in their words:\nFix pkg\n\nand tests\n\nInstructions for parts of the project" in again.content
