"""The model's reasoning above the clients: the turn's ``reasoning-*`` events (redacted like its
text), the thread and the history it gives back, compaction never parting a thinking block from
its tool use, the renderers, ACP, the setting."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest
from render_helpers import render_events

from cogcli.compaction import ContextBudget, drop_results
from cogcli.contract.context import AbortSignal
from cogcli.loop.turn import stream_turn
from cogcli.models.base import REASONING_LEVELS, Message, Reasoning, ToolCallRequest
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.threads.entries import AssistantEntry, kept_reasoning
from cogcli.threads.history import build_history
from cogcli.threads.store import StoredEntry
from cogcli.wire.emitter import EventEmitter
from cogcli.wire.events import (
    FinishEvent,
    ReasoningDeltaEvent,
    ReasoningEndEvent,
    ReasoningStartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    events_json_schema,
    parse_event,
)

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
THOUGHT = Reasoning(format="anthropic", kind="thinking", text="Read ops.py first.", signature="sig==")
SECRET_THOUGHT = Reasoning(format="anthropic", kind="thinking", text=f"the token is {GITHUB} so", signature="sig2==")
REDACTED = Reasoning(format="anthropic", kind="redacted_thinking", data="EmwKencrypted==")


def run_turn(*turns: Turn) -> tuple[list, object]:
    emitted: list = []
    emitter = EventEmitter(emitted.append)
    model = ScriptedModel(list(turns))
    turn = anyio.run(lambda: stream_turn(model, [Message(role="user", content="go")], [], emit=emitter.emit, signal=AbortSignal()))
    return emitted, turn


def test_reasoning_streams_as_its_own_block_before_the_text_and_is_kept_whole() -> None:
    emitted, turn = run_turn(Turn("Reading.", [Call("c1", "read_file", {"path": "a"})], reasoning=[THOUGHT, REDACTED]))
    kinds = [e.type for e in emitted]
    first_text = kinds.index("text-start")
    runs = [k for i, k in enumerate(kinds[:first_text]) if not (i and k == kinds[i - 1] == "reasoning-delta")]
    assert runs == ["reasoning-start", "reasoning-delta", "reasoning-end", "reasoning-start", "reasoning-end"]
    assert "".join(e.delta for e in emitted if isinstance(e, ReasoningDeltaEvent)) == THOUGHT.text
    starts = [e.id for e in emitted if isinstance(e, ReasoningStartEvent)]
    assert len(set(starts)) == 2 and [e.id for e in emitted if isinstance(e, ReasoningEndEvent)] == starts
    assert turn.reasoning == [THOUGHT, REDACTED] and turn.text == "Reading."


def test_a_credential_in_the_reasoning_is_redacted_on_the_wire_like_text() -> None:
    emitted, turn = run_turn(Turn("ok", reasoning=[SECRET_THOUGHT]))
    shown = "".join(e.delta for e in emitted if isinstance(e, ReasoningDeltaEvent))
    assert GITHUB not in shown and "the token is" in shown and shown.endswith(" so")
    # the held-back rest comes out as a reasoning delta, before the block's end
    kinds = [e.type for e in emitted]
    assert kinds.index("reasoning-end") < kinds.index("text-start")
    assert turn.reasoning == [SECRET_THOUGHT]  # the model's history keeps it verbatim (its signature must hold)


def test_the_thread_keeps_blocks_as_they_came_and_marks_one_it_had_to_redact() -> None:
    kept = kept_reasoning([THOUGHT, SECRET_THOUGHT, REDACTED])
    assert kept is not None and kept[0] is THOUGHT and kept[2] is REDACTED
    assert GITHUB not in kept[1].text and kept[1].altered is True and kept[1].signature == "sig2=="
    assert kept_reasoning([]) is None


def test_history_gives_the_reasoning_back_and_old_entries_without_it_still_load() -> None:
    call = ToolCallRequest(id="c1", name="read_file", arguments={"path": "a"})
    new = AssistantEntry(content="Reading.", tool_calls=[call], reasoning=[THOUGHT, REDACTED])
    old = StoredEntry.model_validate({"seq": 2, "created_at": "2026-01-01T00:00:00Z",
                                      "entry": {"kind": "assistant", "content": "Hi", "tool_calls": []}})
    stored = [StoredEntry(seq=1, created_at="2026-12-01T00:00:00Z", entry=new), old]
    history = build_history("sys", stored)
    assert history[1].reasoning == [THOUGHT, REDACTED] and history[3].reasoning == []
    assert old.entry.reasoning is None
    dumped = new.model_dump(mode="json", exclude_none=True)
    assert dumped["reasoning"][0] == {"format": "anthropic", "kind": "thinking", "text": THOUGHT.text, "signature": "sig=="}
    assert "reasoning" not in AssistantEntry(content="x").model_dump(mode="json", exclude_none=True)
    from cogcli.threads.atif import trajectory

    steps = trajectory("thr_1", stored)["steps"]
    assert steps[0]["reasoning_content"] == THOUGHT.text and "reasoning_content" not in steps[1]


def thinking_history(n_turns: int, size: int = 3000) -> list[Message]:
    out = [Message(role="system", content="sys"), Message(role="user", content="Fix it")]
    for i in range(n_turns):
        thought = Reasoning(format="anthropic", kind="thinking", text=f"thought {i} " * 30, signature=f"sig{i}")
        call = ToolCallRequest(id=f"c{i}", name="write_file", arguments={"path": f"m{i}.py", "content": "x" * 2000})
        out.append(Message(role="assistant", content=f"step {i}", tool_calls=[call], reasoning=[thought]))
        out.append(Message(role="tool", tool_call_id=f"c{i}", name="write_file", content=str(i) * size))
    return out


def test_compaction_never_parts_or_alters_a_kept_turns_thinking() -> None:
    h = thinking_history(12)
    originals = {m.tool_calls[0].id: m.reasoning for m in h if m.role == "assistant"}
    stubbed, dropped, _ = drop_results(h, need=10**9)
    assert dropped  # results stubbed, arguments shortened ...
    for m in stubbed:  # ... and every assistant turn keeps its thinking exactly
        if m.role == "assistant":
            assert m.reasoning == originals[m.tool_calls[0].id]

    async def summarize(messages: list[Message]) -> str:
        return "earlier work"

    out = anyio.run(lambda: ContextBudget(window=6_000).before_request(h, summarize=summarize))
    assert len(out) < len(h)
    for i, m in enumerate(out):
        if m.role == "assistant":  # whole turns dropped, never a turn without its thinking or its results
            assert m.reasoning == originals[m.tool_calls[0].id]
            assert out[i + 1].role == "tool" and out[i + 1].tool_call_id == m.tool_calls[0].id
    assert ContextBudget(window=100_000).estimate(h) > ContextBudget(window=100_000).estimate([m.model_copy(update={"reasoning": []}) for m in h])


def wire(*events):
    out = []
    for seq, e in enumerate(events):
        e.seq, e.timestamp = seq, "2026-12-06T00:00:00.000Z"
        out.append(e)
    return out


def test_the_terminal_draws_a_dimmed_thinking_row_and_other_renderers_take_the_events() -> None:
    events = wire(
        ReasoningStartEvent(id="r1"), ReasoningDeltaEvent(id="r1", delta="Read ops.py\nthen fix"), ReasoningEndEvent(id="r1"),
        ReasoningStartEvent(id="r2"), ReasoningEndEvent(id="r2"),  # an encrypted block: nothing to draw
        TextStartEvent(id="t1"), TextDeltaEvent(id="t1", delta="Done."), TextEndEvent(id="t1"),
        FinishEvent(status="completed", steps=1, message_id="msg_1", thread_id="thr_1"),
    )
    out = io.StringIO()
    render_events(events, out)
    assert out.getvalue().splitlines()[:4] == ["thinking…", "  Read ops.py", "  then fix", "Done."]
    from cogcli.render.text import TextRenderer

    tty = io.StringIO()
    renderer = TextRenderer(tty, tty=True, color=True)
    for e in events[:3]:
        renderer.handle(e)
    assert tty.getvalue().startswith("\x1b[2mthinking…\x1b[0m\n\x1b[2m  Read ops.py\x1b[0m")
    from cogcli.render.github import GithubRenderer

    GithubRenderer(io.StringIO()).handle(events[1])  # other renderers ignore them safely
    assert parse_event(events[1].to_wire()).delta == "Read ops.py\nthen fix"
    kinds = str(events_json_schema())
    assert all(k in kinds for k in ("reasoning-start", "reasoning-delta", "reasoning-end"))


def test_acp_sends_reasoning_as_agent_thought_chunks() -> None:
    from acp import schema as acp_schema

    from cogcli.acp.mapping import EventMapper

    mapper = EventMapper(Path("/work/repo"), lambda name: None)
    [update] = mapper.updates(ReasoningDeltaEvent(id="r1", delta="thinking about it"))
    assert isinstance(update, acp_schema.AgentThoughtChunk) and update.content.text == "thinking about it"
    assert mapper.updates(ReasoningStartEvent(id="r1")) == [] and mapper.updates(ReasoningEndEvent(id="r1")) == []


def test_the_setting_has_the_models_levels_and_refuses_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.contract.errors import ConfigError
    from cogcli.settings.load import load_settings
    from cogcli.settings.options import BY_NAME
    from cogcli.settings.options import REASONING_LEVELS as SETTING_LEVELS

    assert REASONING_LEVELS == SETTING_LEVELS == BY_NAME["reasoning"].choices
    assert BY_NAME["reasoning"].env == "COG_REASONING" and "--reasoning" in BY_NAME["reasoning"].flags
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("COG_REASONING", "medium")
    assert load_settings(tmp_path).reasoning == "medium"
    monkeypatch.setenv("COG_REASONING", "max")
    with pytest.raises(ConfigError, match="COG_REASONING"):
        load_settings(tmp_path)
