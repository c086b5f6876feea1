"""Issue 52 in the other front ends: Studio's API (`POST /api/threads/{id}/undo`) and ACP's `/undo`
walk back what a run's command changed through the same undo path as `cog undo`, and say what is
outside the workspace is not undone."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.helpers import text_block
from serve_helpers import Served, write_cassette
from test_acp import Agent, Editor
from test_acp import write_cassette as acp_cassette

COMMAND = "printf 'changed\\n' > calc/ops.py; echo made > gen.txt; chmod 755 calc/__init__.py"


def _command_turns() -> list[dict]:
    return [{"text": "", "toolCalls": [{"id": "r1", "name": "run_command", "arguments": {"command": COMMAND}}]}, {"text": "Done."}]


def test_studio_undo_puts_back_a_commands_changes_and_marks_them(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    ops = (repo / "calc" / "ops.py").read_text()
    with Served(repo) as srv:
        run = srv.start("run it", model=write_cassette(tmp_path / "c.jsonl", _command_turns()), approval="auto")
        srv.events(run["runId"])
        assert (repo / "gen.txt").exists()
        dry = srv.post(f"/api/threads/{run['threadId']}/undo", {"dryRun": True})
        assert dry.status_code == 200, dry.text
        files = {f["path"]: f for f in dry.json()["files"]}
        assert set(files) == {"calc/ops.py", "gen.txt", "calc/__init__.py"} and all(f["byCommand"] for f in files.values())
        assert any("not undone" in n for n in dry.json()["notes"])
        done = srv.post(f"/api/threads/{run['threadId']}/undo", {})
        assert done.status_code == 200, done.text
    assert (repo / "calc" / "ops.py").read_text() == ops and not (repo / "gen.txt").exists()
    assert (repo / "calc" / "__init__.py").stat().st_mode & 0o777 == 0o644


@pytest.mark.anyio
async def test_acp_undo_puts_back_a_commands_changes(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    ops = (repo / "calc" / "ops.py").read_text()
    cassette = acp_cassette(tmp_path / "runs.jsonl", _command_turns())
    editor = Editor()
    async with Agent(editor, repo, "--yes", "--sandbox", "off", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        sid = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("run it")])
        assert (repo / "gen.txt").exists()
        editor.updates.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("/undo")])
        said = editor.text()
    assert "command changes: calc/__init__.py, calc/ops.py, gen.txt (deleted)" in said and "not undone" in said, said
    assert (repo / "calc" / "ops.py").read_text() == ops and not (repo / "gen.txt").exists()
