"""Issue 39 over ACP, with the SDK's own client: a prompt of `/undo` walks the session's thread back
run by run (no model turn), `/rewind` lists the runs, and the next turn's model is told what was
undone. (They are advertised in `available_commands_update` beside /plan and /go.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.helpers import text_block
from test_acp import Agent, Editor, write_cassette

from cogcli.threads.history import build_history
from cogcli.threads.store import default_store

pytestmark = pytest.mark.anyio

OPS = Path("calc") / "ops.py"


def _edit(i: int, old: str, new: str) -> dict:
    return {"toolCalls": [{"id": f"e{i}", "name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": old, "new_text": new}}]}


async def test_undo_as_a_prompt_walks_the_session_back_run_by_run(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    start = (repo / OPS).read_text()
    turns = [_edit(1, "return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub"), {"text": "Fixed add."},
             _edit(2, '"""Return a minus b."""', '"""Return a minus b (checked)."""'), {"text": "Documented sub."},
             {"text": "Nothing else."}]
    cassette = write_cassette(tmp_path / "runs.jsonl", turns)
    editor = Editor()
    async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        sid = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        nothing = await conn.prompt(session_id=sid, prompt=[text_block("/undo")])
        assert nothing.stop_reason == "end_turn" and "nothing to undo: no run in this conversation yet" in editor.text()
        await conn.prompt(session_id=sid, prompt=[text_block("Fix add")])
        fixed = (repo / OPS).read_text()
        await conn.prompt(session_id=sid, prompt=[text_block("Document sub")])
        assert "(checked)" in (repo / OPS).read_text()

        editor.updates.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("/undo")])
        assert "walked back run 2 (Document sub)" in editor.text() and (repo / OPS).read_text() == fixed
        editor.updates.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("/undo")])
        assert "walked back run 1 (Fix add)" in editor.text() and (repo / OPS).read_text() == start
        editor.updates.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("/rewind")])
        assert "1  Fix add  [files undone]" in editor.text() and "2  Document sub  [files undone]" in editor.text()
        editor.updates.clear()
        done = await conn.prompt(session_id=sid, prompt=[text_block("Anything left?")])
        assert done.stop_reason == "end_turn" and "Nothing else." in editor.text()
    # what the last turn's model read: both undone runs told plainly, before the new instruction
    with default_store(repo) as store:
        read = [m.content for m in build_history("", store.entries(sid)) if m.role == "user"]
    assert read[-1] == "Anything left?"
    assert read[-3].startswith('[cog] The person undid the run for "Document sub"') and read[-2].startswith('[cog] The person undid the run for "Fix add"')
