"""The model's reasoning over ACP, with the ACP SDK's own client driving the real ``cog acp``: each
piece of it reaches the editor as an ``agent_thought_chunk`` as it streams, before the answer's
``agent_message_chunk``s, credentials redacted; a session loaded again redraws it the same; the
prompt's usage says how many of the output tokens were thought."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.helpers import text_block
from test_acp import FIX, Agent, Editor, write_cassette

pytestmark = pytest.mark.anyio

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
READ = {"id": "call_1", "name": "read_file", "arguments": {"path": "calc/ops.py"}}
THOUGHT = {"format": "anthropic", "kind": "thinking", "text": "add fails; read ops.py before editing it.", "signature": "EqQBsig1=="}
LEAKY = {"format": "anthropic", "kind": "thinking", "text": f"the README's token {TOKEN} is not needed here", "signature": "EqQBsig2=="}
SEALED = {"format": "anthropic", "kind": "redacted_thinking", "data": "EmwKAhgBEgyencrypted=="}


def drawn(editor: Editor) -> list[tuple[str, str]]:
    """The thought and message chunks in the order the editor got them, runs of one kind joined."""
    out: list[tuple[str, str]] = []
    for _, u in editor.updates:
        if u.session_update in ("agent_thought_chunk", "agent_message_chunk"):
            if out and out[-1][0] == u.session_update:
                out[-1] = (u.session_update, out[-1][1] + u.content.text)
            else:
                out.append((u.session_update, u.content.text))
        elif u.session_update == "tool_call":
            out.append(("tool_call", u.tool_call_id))
    return out


async def test_reasoning_reaches_the_editor_as_thought_chunks_live_and_when_the_session_is_loaded(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    cassette = write_cassette(tmp_path / "thinking.jsonl", [
        {"text": "Reading ops.py.", "toolCalls": [READ], "reasoning": [THOUGHT, SEALED], "usage": {"inputTokens": 90, "outputTokens": 60, "reasoningTokens": 45}},
        {"text": "add subtracts.", "reasoning": [LEAKY], "usage": {"inputTokens": 120, "outputTokens": 30, "reasoningTokens": 20}},
    ])
    editor = Editor()
    async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        response = await conn.prompt(session_id=session_id, prompt=[text_block(FIX)])
    assert response.stop_reason == "end_turn"
    assert response.usage is not None and (response.usage.output_tokens, response.usage.thought_tokens) == (90, 65)
    live = drawn(editor)
    shown_leak = LEAKY["text"].replace(TOKEN, "[REDACTED]")
    assert live == [
        ("agent_thought_chunk", THOUGHT["text"]),  # the encrypted block has no text: nothing to send
        ("agent_message_chunk", "Reading ops.py."),
        ("tool_call", "call_1"),
        ("agent_thought_chunk", shown_leak),
        ("agent_message_chunk", "add subtracts."),
    ], live
    assert len(editor.of("agent_thought_chunk")) > 2  # streamed in pieces, not one chunk a block
    assert TOKEN not in repr(editor.updates)

    again = Editor()
    more = write_cassette(tmp_path / "more.jsonl", [{"text": "Nothing left."}])
    async with Agent(again, repo, "--yes", "--model", f"replay:{more}", stderr=tmp_path / "err2") as conn:
        await conn.load_session(cwd=str(repo), session_id=session_id, mcp_servers=[])
    # the stored thread: the same thoughts in the same places (the thread keeps the redacted text)
    assert drawn(again) == live
