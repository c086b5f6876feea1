"""`cog acp` sessions in a git worktree (issue 50: worktrees in every front end): session/new's
`_meta: {"cog": {"worktree": NAME}}` opens the session in a new worktree on its own branch, the
answer's `_meta` says where, the turn's edit lands there and not in the work tree, and is committed
on the branch when the turn ends. A worktree request of the wrong type is refused clearly."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.helpers import text_block

from cli_helpers import cog_argv, cog_env
from conftest import GIT_ENV
from test_acp import EDIT, Editor, write_cassette

pytestmark = pytest.mark.anyio


async def test_a_session_in_a_worktree_edits_there_and_commits_each_turn(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo("calc")
    cassette = write_cassette(tmp_path / "edit.jsonl", [EDIT, {"text": "Fixed add."}])
    editor = Editor()
    argv = cog_argv()
    env = {**cog_env(ci=False), **GIT_ENV}
    with (tmp_path / "err").open("w") as err:
        async with acp.spawn_agent_process(editor, argv[0], *argv[1:], "acp", "--yes", "--model", f"replay:{cassette}", env=env, cwd=repo,
                                           transport_kwargs={"stderr": err}) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            with pytest.raises(acp.RequestError) as refused:
                await conn.new_session(cwd=str(repo), mcp_servers=[], cog={"worktree": 3})
            session = await conn.new_session(cwd=str(repo), mcp_servers=[], cog={"worktree": "fix-add"})
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("Fix add")])
    assert refused.value.code == -32602 and "_meta.cog.worktree must be a name" in str(refused.value)
    where = repo / ".cog" / "worktrees" / "fix-add"
    assert session.field_meta == {"cog": {"worktree": {"name": "fix-add", "path": str(where), "branch": "cog/fix-add"}}}
    assert response.stop_reason == "end_turn"
    assert "return a + b" in (where / "calc" / "ops.py").read_text()
    assert "return a - b" in (repo / "calc" / "ops.py").read_text()  # the work tree is untouched
    shown = subprocess.run(["git", "-C", str(repo), "show", "--name-only", "--format=%s", "cog/fix-add"], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["Fix", "add", "calc/ops.py"]
    assert subprocess.run(["git", "-C", str(where), "status", "--porcelain"], capture_output=True, text=True, check=True).stdout == ""
    assert "Traceback" not in (tmp_path / "err").read_text()
