"""`/jobs` over ACP (issue 50: background commands shown in every front end): the editor is offered
the command, a prompt `/jobs` lists the session's background commands without a model turn, and
`/jobs kill ID` ends one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.helpers import text_block

from test_acp import Agent, Editor, write_cassette

pytestmark = pytest.mark.anyio

START = {"toolCalls": [{"id": "c1", "name": "run_command", "arguments": {"command": "echo serving; exec sleep 300", "background": True}}]}


async def test_jobs_lists_the_sessions_background_commands_and_kills_one(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo("calc")
    cassette = write_cassette(tmp_path / "jobs.jsonl", [START, {"text": "The server runs."}])
    editor = Editor()
    async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("start the server")])
        said = len(editor.text())
        listed = await conn.prompt(session_id=session.session_id, prompt=[text_block("/jobs")])
        running = editor.text()[said:]
        said = len(editor.text())
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/jobs kill job_1")])
        killed = editor.text()[said:]
    offered = [c.name for u in editor.of("available_commands_update") for c in u.available_commands]
    assert "jobs" in offered
    assert listed.stop_reason == "end_turn"
    assert "job_1" in running and "running" in running and "echo serving; exec sleep 300" in running and "1 running" in running
    assert killed.startswith("job_1 killed: echo serving")
