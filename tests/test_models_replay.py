"""Replay cassettes, recording a live (loopback) run, and the demo cassette for fixtures/calc."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from model_servers import AnthropicServer, Cut, OpenAIServer, Reply, ToolCall, collect, merged, replies_from_cassette

from cogcli.contract.errors import ConfigError, ErrorCode, ModelError
from cogcli.models import (
    Message,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolSpec,
    TurnFinished,
    UsageReport,
    get_model,
)
from cogcli.models.record import RecordingModel
from cogcli.models.replay import CassetteHeader, CassetteTurn, ReplayModel, read_cassette
from cogcli.models.sse import RetryPolicy

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "cassettes" / "calc_fix.jsonl"
KEY = "sk-test-0123456789abcdef"
HISTORY = [Message(role="user", content="Fix the failing test")]


def spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, parameters={"type": "object"})


WORKSPACE_TOOLS = [spec("read_file"), spec("edit_file"), spec("run_tests")]


async def play_all(model, tools=WORKSPACE_TOOLS) -> list[list]:
    turns = []
    while True:
        try:
            turns.append(await collect(model, HISTORY, tools))
        except ModelError as exc:
            if exc.code == ErrorCode.CASSETTE_EXHAUSTED:
                return turns
            raise


def write_cassette(path: Path, *turns: CassetteTurn) -> Path:
    path.write_text("".join(line + "\n" for line in [CassetteHeader(model="test:m").to_line(), *(t.to_line() for t in turns)]))
    return path


@pytest.mark.anyio
async def test_replay_is_deterministic_and_streams_in_fragments() -> None:
    first = await play_all(ReplayModel(DEMO))
    second = await play_all(get_model(f"replay:{DEMO}"))
    assert first == second and len(first) == 5

    header, turns = read_cassette(DEMO)
    for events, (_, turn) in zip(first, turns):
        texts = [e.text for e in events if isinstance(e, TextDelta)]
        assert "".join(texts) == turn.text and len(texts) > 1
        for call in turn.tool_calls:
            deltas = [e.text for e in events if isinstance(e, ToolCallArgsDelta) and e.id == call.id]
            (end,) = [e for e in events if isinstance(e, ToolCallFinished) and e.id == call.id]
            assert "".join(deltas) == end.arguments_text and json.loads(end.arguments_text) == call.arguments
            assert end.name == call.name
        assert UsageReport(input_tokens=turn.usage.input_tokens, output_tokens=turn.usage.output_tokens) in events
        assert events[-1] == TurnFinished(stop_reason=turn.stop_reason)


@pytest.mark.anyio
async def test_a_turn_calling_a_tool_the_run_does_not_offer_fails_before_any_event(tmp_path: Path) -> None:
    path = write_cassette(tmp_path / "c.jsonl", CassetteTurn(text="hi", tool_calls=[{"id": "c1", "name": "delete_repo", "arguments": {}}]))
    model = ReplayModel(path)
    seen = []
    with pytest.raises(ModelError) as info:
        async for event in model.stream(HISTORY, WORKSPACE_TOOLS):
            seen.append(event)
    assert seen == []
    assert "'delete_repo'" in info.value.message and "line 2" in info.value.message and str(path) in info.value.message
    assert "read_file" in info.value.message  # says what is offered


@pytest.mark.anyio
async def test_asking_for_more_turns_than_recorded_is_cassette_exhausted(tmp_path: Path) -> None:
    model = ReplayModel(write_cassette(tmp_path / "c.jsonl", CassetteTurn(text="only turn")))
    await collect(model, HISTORY)
    with pytest.raises(ModelError) as info:
        await collect(model, HISTORY)
    assert info.value.code == ErrorCode.CASSETTE_EXHAUSTED
    assert "holds 1 model turn" in info.value.message and "turn 2" in info.value.message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cassette not found"),
        ("", "empty cassette"),
        ('{"type": "turn", "text": "no header"}\n', ":1: a cassette starts with a header"),
        ('{"type": "cassette", "schemaVersion": 1, "model": "m"}\n{not json\n', ":2: not a valid cassette line"),
        ('{"type": "cassette", "schemaVersion": 1, "model": "m"}\n{"type": "turn", "toolCalls": [{"id": "x"}]}\n', ":2: not a valid cassette line"),
        ('{"type": "cassette", "schemaVersion": 99, "model": "m"}\n', "newer than this cog reads"),
    ],
)
def test_bad_cassettes_are_config_errors_naming_file_and_line(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=expected):
        get_model(f"replay:{path}")


def test_unknown_line_types_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"type": "cassette", "schemaVersion": 1, "model": "m"}\n{"type": "note", "x": 1}\n{"type": "turn", "text": "t"}\n')
    assert [t.text for _, t in ReplayModel(path).turns] == ["t"]


def per_call(events: list) -> list:
    """A turn with deltas joined and each call's events side by side. The OpenAI client ends every
    call when the turn ends (the fragments of several calls may interleave) where replay ends each
    call before the next starts, so only the order of ends among calls may differ."""
    calls: dict[str, list] = {}
    rest = []
    for e in merged(events):
        if e.type.startswith("tool-call"):
            calls.setdefault(e.id, []).append(e)
        else:
            rest.append(e)
    return [rest, list(calls.items())]


@pytest.mark.anyio
async def test_record_a_loopback_run_then_replay_gives_the_same_events(tmp_path: Path) -> None:
    replies = [
        Reply("Reading first.", [ToolCall("call_1", "read_file", {"path": "calc/ops.py"})], usage=(100, 10)),
        Reply("", [ToolCall("call_2", "edit_file", {"path": "a", "old_text": "x\n", "new_text": "y \u00e9\n"}),
                    ToolCall("call_3", "run_tests", {})], usage=(200, 20)),
        Reply("All green.", usage=(300, 30)),
    ]
    cassette = tmp_path / "rec" / "run.jsonl"
    for server_cls, name in ((OpenAIServer, "openai:gpt-test"), (AnthropicServer, "anthropic:claude-test")):
        with server_cls(list(replies)) as srv:
            live = RecordingModel(get_model(name, base_url=srv.base_url, api_key=KEY, retry=RetryPolicy(retries=0)), cassette)
            recorded = [await collect(live, HISTORY, WORKSPACE_TOOLS) for _ in replies]
            await live.aclose()
        text = cassette.read_text()
        assert KEY not in text
        header, turns = read_cassette(cassette)
        assert header.model == name and len(turns) == 3

        replayed = await play_all(ReplayModel(cassette))
        assert [per_call(t) for t in replayed] == [per_call(t) for t in recorded]
        if name.startswith("anthropic"):  # blocks are sequential there: the very same order too
            assert [merged(t) for t in replayed] == [merged(t) for t in recorded]


@pytest.mark.anyio
async def test_recording_flushes_each_turn_and_skips_a_failed_one(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    cassette.write_text("stale content from an older run\n")
    with OpenAIServer([Reply("turn one"), Cut(Reply("turn two is cut short"), after=3)]) as srv:
        live = RecordingModel(get_model("openai:m", base_url=srv.base_url, retry=RetryPolicy(retries=0)), cassette)
        await collect(live, HISTORY)
        _, turns = read_cassette(cassette)  # on disk already, before the next turn
        assert [t.text for _, t in turns] == ["turn one"]
        with pytest.raises(ModelError):
            await collect(live, HISTORY)
        await live.aclose()
    _, turns = read_cassette(cassette)
    assert [t.text for _, t in turns] == ["turn one"]


@pytest.mark.anyio
async def test_recording_scrubs_api_keys_from_what_it_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cassette = tmp_path / "run.jsonl"
    with OpenAIServer([Reply(f"my key is {KEY}", [ToolCall("c1", "run_tests", {"keyword": KEY})])]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        live = RecordingModel(get_model("openai:m"), cassette)
        events = await collect(live, HISTORY, WORKSPACE_TOOLS)
        await live.aclose()
    assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the key was in use...
    assert KEY in "".join(e.text for e in events if isinstance(e, TextDelta))  # ...and in the live turn...
    text = cassette.read_text()
    assert KEY not in text and text.count("[redacted]") == 2  # ...but never on disk


# --- the demo cassette ---------------------------------------------------------------------


def test_demo_cassette_is_the_calc_fix() -> None:
    header, turns = read_cassette(DEMO)
    calls = [(c.name, c.arguments) for _, t in turns for c in t.tool_calls]
    assert [name for name, _ in calls] == ["read_file", "run_tests", "edit_file", "run_tests"]
    assert calls[0][1] == {"path": "calc/ops.py"}
    assert turns[0][1].text == "I'll look at the code first."
    assert not turns[-1][1].tool_calls and "a + b" in turns[-1][1].text
    ops = (ROOT / "fixtures" / "calc" / "calc" / "ops.py").read_text()
    edit = calls[2][1]
    assert set(edit) == {"path", "old_text", "new_text"}
    assert ops.count(edit["old_text"]) == 1  # unique: sub() also returns a - b


def run_pytest(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=repo, capture_output=True, text=True, timeout=120,
    )


def test_demo_cassette_edit_fixes_the_failing_test(make_repo) -> None:
    repo = make_repo("calc")
    before = run_pytest(repo)
    assert before.returncode == 1 and "test_add" in before.stdout
    _, turns = read_cassette(DEMO)
    (edit,) = [c.arguments for _, t in turns for c in t.tool_calls if c.name == "edit_file"]
    target = repo / edit["path"]
    target.write_text(target.read_text().replace(edit["old_text"], edit["new_text"]))
    after = run_pytest(repo)
    assert after.returncode == 0, after.stdout
    assert "3 passed" in after.stdout


@pytest.mark.anyio
async def test_demo_cassette_served_over_http_streams_the_same_turns_as_replay() -> None:
    replayed = await play_all(ReplayModel(DEMO))
    with OpenAIServer(replies_from_cassette(DEMO)) as srv:
        model = get_model("openai:gpt-4o", base_url=srv.base_url, retry=RetryPolicy(retries=0))
        live = [await collect(model, HISTORY, WORKSPACE_TOOLS) for _ in replayed]
        await model.aclose()

    def strip(turn):  # the server has its own stop reasons; compare text, calls and usage
        # (the demo cassette predates costs: the live client prices gpt-4o, the replay does not know)
        return [e.model_copy(update={"cost_usd": None}) if e.type == "usage" else e for e in merged(turn) if not isinstance(e, TurnFinished)]

    assert [strip(t) for t in live] == [strip(t) for t in replayed]


def test_a_cassette_that_is_a_fifo_or_huge_is_refused_at_once(tmp_path: Path) -> None:
    """A workspace's cog.toml may name a cassette inside it: something the sandbox could make a
    FIFO (which would hang cog) or grow past any memory."""
    import os

    from cogcli.models.replay import MAX_CASSETTE_BYTES, read_cassette

    os.mkfifo(tmp_path / "fifo.jsonl")
    with pytest.raises(ConfigError, match="not a regular file"):
        read_cassette(tmp_path / "fifo.jsonl")  # returns at once: no writer is waited for
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:
        fh.write(b'{"type": "cassette", "schemaVersion": 1, "model": "x"}\n')
        fh.truncate(MAX_CASSETTE_BYTES + 1)
    with pytest.raises(ConfigError, match="larger than"):
        read_cassette(big)
