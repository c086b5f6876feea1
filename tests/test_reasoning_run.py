"""``--reasoning`` end to end: ``cog edit --json`` against loopback Anthropic and OpenAI-compatible
servers — the reasoning events in order, the thread keeps the blocks, ``--thread`` sends them
back (Anthropic), a recorded run replays the same events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import json_lines, run_cog
from model_servers import AnthropicServer, OpenAIServer, RedactedThinking, Reply, Thinking, ToolCall

from cogcli.models import Reasoning
from cogcli.threads.store import AssistantEntry, ThreadStore

FIX = "Fix the failing test"
READ = ToolCall("toolu_1", "read_file", {"path": "calc/ops.py"})
FIRST = (Thinking("add subtracts? Read ops.py first.", signature="EqQBsigONE=="), RedactedThinking("EmwKencrypted=="))
SECOND = (Thinking("It returns a - b: say so.", signature="EqQBsigTWO=="),)


def reasoning_shape(lines: list[dict[str, Any]]) -> list[str]:
    """The run's model-written event types, each run of deltas as one."""
    out: list[str] = []
    for line in lines:
        kind = line["type"]
        if kind in ("reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-end", "tool-call-start", "tool-call-end"):
            if not (out and out[-1] == kind == "reasoning-delta"):
                out.append(kind)
    return out


def stored_reasoning(repo: Path, thread_id: str) -> list[list[Reasoning] | None]:
    """Each assistant turn's blocks as the thread keeps them, without cog's own ``duration_ms``
    (checked to be there: how long each block streamed)."""
    with ThreadStore(repo / ".cog" / "threads.db") as store:
        kept = [e.entry.reasoning for e in store.entries(thread_id) if isinstance(e.entry, AssistantEntry)]
    assert all(isinstance(b.duration_ms, int) and b.duration_ms >= 0 for blocks in kept for b in blocks or [])
    return [[b.model_copy(update={"duration_ms": None}) for b in blocks] if blocks else blocks for blocks in kept]


def test_anthropic_reasoning_high_streams_keeps_and_sends_back_the_thinking(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    cassette = tmp_path / "thinking.jsonl"
    script = [Reply("Reading.", [READ], thinking=FIRST), Reply("add returns a - b.", thinking=SECOND), Reply("Still a - b.", thinking=SECOND)]
    with AnthropicServer(script) as server:
        env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url}
        out = run_cog(["edit", "--json", "--reasoning", "high", "--record", str(cassette), "--model", "anthropic:claude-sonnet-4-5", FIX], repo, env=env)
        assert out.returncode == 0, out.stderr
        lines = json_lines(out.stdout)
        thread = lines[-1]["threadId"]
        again = run_cog(["edit", "--json", "--thread", thread, "--model", "anthropic:claude-sonnet-4-5", "And sub?"], repo,
                        env={**env, "COG_REASONING": "high"})
        assert again.returncode == 0, again.stderr
    assert reasoning_shape(lines) == [
        "reasoning-start", "reasoning-delta", "reasoning-end", "reasoning-start", "reasoning-end",  # thinking, then redacted
        "text-start", "text-end", "tool-call-start", "tool-call-end",
        "reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-end",
    ]
    shown = "".join(line["delta"] for line in lines if line["type"] == "reasoning-delta")
    assert shown == FIRST[0].text + SECOND[0].text
    # the thread keeps each block as it came, signature and data included
    kept = stored_reasoning(repo, thread)
    assert kept[0] == [Reasoning(format="anthropic", kind="thinking", text=FIRST[0].text, signature=FIRST[0].signature),
                       Reasoning(format="anthropic", kind="redacted_thinking", data=FIRST[1].data)]
    assert kept[1][0].signature == SECOND[0].signature
    with ThreadStore(repo / ".cog" / "threads.db") as store:  # a stored thread redraws its reasoning
        redrawn = [e.to_wire() for e in store.thread_events(thread)]
    assert "".join(e["delta"] for e in redrawn if e["type"] == "reasoning-delta").startswith(shown)
    assert all(e.get("signature") is None for e in redrawn)
    live_ends = [line for line in lines if line["type"] == "reasoning-end"]
    assert all(isinstance(e["durationMs"], int) for e in live_ends)  # how long each block streamed, live and redrawn
    assert [e["durationMs"] for e in redrawn if e["type"] == "reasoning-end"][: len(live_ends)] == [e["durationMs"] for e in live_ends]
    # the run's second request and the --thread run's request both send the tool turn's thinking back, first
    for request in (server.requests[1], server.requests[2]):
        assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
        tool_turn = request.body["messages"][1]["content"]
        assert tool_turn[:2] == [{"type": "thinking", "thinking": FIRST[0].text, "signature": FIRST[0].signature},
                                 {"type": "redacted_thinking", "data": FIRST[1].data}]
    # the recorded run replays the same reasoning events
    replayed = run_cog(["edit", "--json", "--model", f"replay:{cassette}", FIX], make_repo("calc", dest="again"))
    assert replayed.returncode == 0, replayed.stderr
    lines_again = json_lines(replayed.stdout)
    assert reasoning_shape(lines_again) == reasoning_shape(lines)
    assert "".join(line["delta"] for line in lines_again if line["type"] == "reasoning-delta") == shown
    turns = [json.loads(line) for line in cassette.read_text().splitlines()[1:]]
    assert turns[0]["reasoning"][0] == {"format": "anthropic", "kind": "thinking", "text": FIRST[0].text, "signature": FIRST[0].signature}


def test_openai_compatible_reasoning_content_is_shown_kept_and_effort_sent(make_repo) -> None:
    repo = make_repo("calc")
    script = [Reply("Reading.", [ToolCall("call_1", "read_file", {"path": "calc/ops.py"})], reasoning="Read ops.py."), Reply("a - b.", reasoning="Done.")]
    with OpenAIServer(script) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "COG_REASONING": "low"}
        out = run_cog(["edit", "--json", "--model", "openai:deepseek-reasoner", FIX], repo, env=env)
    assert out.returncode == 0, out.stderr
    lines = json_lines(out.stdout)
    assert reasoning_shape(lines)[:3] == ["reasoning-start", "reasoning-delta", "reasoning-end"]
    assert "".join(line["delta"] for line in lines if line["type"] == "reasoning-delta") == "Read ops.py.Done."
    assert all(r.body["reasoning_effort"] == "low" for r in server.requests)
    assert "Read ops.py." not in json.dumps(server.requests[1].body)  # shown and kept, never sent back
    kept = stored_reasoning(repo, lines[-1]["threadId"])
    assert kept[0] == [Reasoning(format="openai-chat", kind="reasoning_content", text="Read ops.py.")]
