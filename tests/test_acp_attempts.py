"""Best-of-N over ACP (issue 50: shown in every front end), with the real ACP SDK client against
`cog acp`: `_meta.cog.attempts` on session/prompt, or `/attempts N …` (advertised), runs the
attempts in real worktrees with the real tests; each attempt's calls are tool calls titled with the
attempt (ids unique across attempts), each permission request names its attempt, the comparison
arrives as the agent's message, the winner is applied to the work tree and the response's `_meta`
carries `cog edit --attempts --json`'s last line. A count out of range is refused clearly."""

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

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real worktrees and real test runs


def _spawn(editor: Editor, repo: Path, cassette: str, err: Any, *flags: str) -> Any:
    argv = cog_argv()
    return acp.spawn_agent_process(editor, argv[0], *argv[1:], "acp", *flags, "--model", f"replay:{cassette}",
                                   env={**cog_env(ci=False), **GIT_ENV}, cwd=repo, transport_kwargs={"stderr": err})


async def test_meta_attempts_runs_best_of_n_asks_per_attempt_and_applies_the_winner(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo("calc")
    before = (repo / "calc" / "ops.py").read_text()
    cassette = write_cassette(tmp_path / "edit.jsonl", [EDIT, {"text": "Fixed add."}])
    editor = Editor()
    with (tmp_path / "err").open("w") as err:
        async with _spawn(editor, repo, cassette, err) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            with pytest.raises(acp.RequestError) as refused:
                await conn.prompt(session_id=session.session_id, prompt=[text_block("Fix add")], cog={"attempts": 9})
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("Fix add")], cog={"attempts": 2})
            applied = (repo / "calc" / "ops.py").read_text()
            said = editor.text()
            await conn.prompt(session_id=session.session_id, prompt=[text_block("/undo")])  # takes the winner back
            undo_said = editor.text()[len(said):]
    assert refused.value.code == -32602 and "attempts takes 2 to 8" in str(refused.value)
    assert response.stop_reason == "end_turn"
    line = response.field_meta["cog"]["attempts"]
    assert line["type"] == "attempts" and line["winner"] == 1 and line["applied"]["files"] == ["calc/ops.py"]
    assert [(r["attempt"], r["passed"], r["failed"]) for r in line["attempts"]] == [(1, 3, 0), (2, 3, 0)]
    assert "return a + b" in applied

    asked = sorted((p.tool_call.tool_call_id, p.tool_call.title) for p in editor.permissions)
    assert [a[0] for a in asked] == ["attempt-1:e1", "attempt-2:e1"]  # one edit each, asked naming the attempt
    assert asked[0][1].startswith("attempt 1: ") and asked[1][1].startswith("attempt 2: ")
    calls = editor.calls()
    assert set(calls) == {"attempt-1:e1", "attempt-2:e1"}  # only tool calls streamed, one per attempt
    assert all(c["status"] == "completed" and c["title"].startswith(f"attempt {k[8]}: Edit file") for k, c in calls.items())
    assert "attempt 1 (cog/try-" in said and "completed: 1 file (+1 -1), 3 passed, 0 failed" in said
    assert "attempt  status" in said and "\n* 1 " in said and "applied attempt 1 (1 file; cog undo takes it back)" in said
    assert "Fixed add." not in said  # the attempts' own words stay in their threads

    assert "calc/ops.py" in undo_said, undo_said
    assert (repo / "calc" / "ops.py").read_text() == before
    branches = subprocess.run(["git", "-C", str(repo), "branch", "--list", "--format=%(refname:short)", "cog/try-*"], capture_output=True, text=True, check=True)
    assert len(branches.stdout.split()) == 2  # the attempts are kept as branches
    assert "Traceback" not in (tmp_path / "err").read_text()


async def test_the_attempts_slash_command_is_offered_and_runs_best_of_n(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo("calc")
    cassette = write_cassette(tmp_path / "edit.jsonl", [EDIT, {"text": "Fixed add."}])
    editor = Editor()
    editor.watch = lambda u: u.session_update == "available_commands_update"
    with (tmp_path / "err").open("w") as err:
        async with _spawn(editor, repo, cassette, err, "--yes") as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            await editor.seen.wait()
            with pytest.raises(acp.RequestError) as bare:
                await conn.prompt(session_id=session.session_id, prompt=[text_block("/attempts 2")])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("/attempts 2 Fix add")])
    offered = {c.name: c for u in editor.of("available_commands_update") for c in u.available_commands}
    assert offered["attempts"].input.root.hint == "N instruction"
    assert "/attempts takes a number and an instruction" in str(bare.value)
    assert response.field_meta["cog"]["attempts"]["applied"]["files"] == ["calc/ops.py"] and not editor.permissions
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()


async def test_cancelling_the_attempts_turn_applies_nothing(make_repo: Any, tmp_path: Path) -> None:
    import anyio

    repo = make_repo("calc")
    before = (repo / "calc" / "ops.py").read_text()
    cassette = write_cassette(tmp_path / "edit.jsonl", [EDIT, {"text": "Fixed add."}])
    editor = Editor("never")  # the first question is never answered: only the cancel ends the turn
    result: list[Any] = []
    with (tmp_path / "err").open("w") as err:
        async with _spawn(editor, repo, cassette, err) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id

            async def turn() -> None:
                result.append(await conn.prompt(session_id=session_id, prompt=[text_block("/attempts 2 Fix add")]))

            async with anyio.create_task_group() as tg:
                tg.start_soon(turn)
                with anyio.fail_after(120):
                    await editor.seen.wait()
                await conn.cancel(session_id=session_id)
    (response,) = result
    assert response.stop_reason == "cancelled"
    line = response.field_meta["cog"]["attempts"]
    assert line["applied"] is None and {r["status"] for r in line["attempts"]} == {"aborted"}
    assert len(editor.permissions) == 1  # the other attempt was never asked: the turn was cancelled first
    assert "interrupted: nothing was applied" in editor.text()
    assert (repo / "calc" / "ops.py").read_text() == before
