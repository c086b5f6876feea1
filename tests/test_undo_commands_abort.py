"""Issue 52: a command that did not end by itself — its run aborted (Ctrl-C in `cog edit`, Stop in
Studio), its call past its timeout — still has what it changed recorded, so `cog undo` takes it
back: the recording runs in the call's `finally`, shielded from the cancellation, as the setuid
sweep does. Without it the aborted tests fail (undo finds nothing: `NothingToUndo`). And chat's and
ACP's /undo and /rewind say, like `cog undo`, that what a command did outside is not undone."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_helpers import repo_with
from test_undo import snapshot

from cogcli.contract.context import AbortSignal
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.session import Session
from cogcli.settings.load import load_settings


def _session(settings: Any, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch) -> Session:
    import cogcli.session.session as session_module

    monkeypatch.setattr(session_module, "make_model", lambda settings, record=None: model)
    return Session.open(dataclasses.replace(settings, model="scripted:test"))


async def _yes(approvals: list[Any]) -> dict[str, bool]:
    return {a.tool_call_id: True for a in approvals}


async def _abort_once(repo: Path, name: str, signal: AbortSignal) -> None:
    """Ctrl-C as soon as the command wrote ``name`` (it then sleeps on)."""
    with anyio.fail_after(30):
        while not (repo / name).exists():
            await anyio.sleep(0.05)
    await anyio.sleep(0.2)
    signal.abort("interrupted")


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["run_command", "run_tests"])
async def test_a_command_aborted_mid_way_is_recorded_and_undo_takes_its_file_back(tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"a.txt": "one\n"})
    command = "printf 'two\\n' > a.txt; echo made > made.txt; sleep 30"
    call = Call("c1", "run_command", {"command": command}) if tool == "run_command" else Call("c1", "run_tests", {})
    model = ScriptedModel([Turn("", [call]), Turn("done")])
    settings = load_settings(repo, sandbox="off", test_command=command)
    before = snapshot(repo)
    signal = AbortSignal()
    async with _session(settings, model, monkeypatch) as session:
        with anyio.fail_after(25):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_abort_once, repo, "made.txt", signal)
                await session.run("run it", approve=_yes, signal=signal)
        assert (repo / "made.txt").exists() and (repo / "a.txt").read_text() == "two\n"
        plan = session.undo()
        assert sorted(f.path for f in plan.files) == ["a.txt", "made.txt"] and all(f.by_command for f in plan.files)
    assert snapshot(repo) == before


@pytest.mark.anyio
async def test_a_command_past_its_timeout_is_recorded_and_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"a.txt": "one\n"})
    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": "echo made > made.txt; sleep 30", "timeout": 1})]), Turn("done")])
    before = snapshot(repo)
    async with _session(load_settings(repo, sandbox="off"), model, monkeypatch) as session:
        with anyio.fail_after(25):
            await session.run("run it", approve=_yes)
        assert (repo / "made.txt").exists()
        plan = session.undo()
        assert [f.path for f in plan.files] == ["made.txt"]
    assert snapshot(repo) == before


@pytest.mark.anyio
@pytest.mark.parametrize("typed", ["/undo", "/rewind 1", "/rewind 1 code"])
async def test_chat_and_acp_undo_and_rewind_say_what_is_outside_the_workspace_is_not_undone(typed: str, tmp_path: Path,
                                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """cog chat's /undo and /rewind and ACP's (one reply: cogcli.threads.rewind.slash_reply) say, as
    cog undo does, that a command's effects outside the workspace are not undone."""
    from cogcli.threads.rewind import slash_reply

    repo = repo_with(tmp_path, {"a.txt": "one\n"})
    model = ScriptedModel([Turn("", [Call("c1", "run_command", {"command": "echo made > made.txt"})]), Turn("done")])
    before = snapshot(repo)
    async with _session(load_settings(repo, sandbox="off"), model, monkeypatch) as session:
        result = await session.run("run it", approve=_yes)
        said = slash_reply(session, result.thread_id, typed)
    assert said is not None and "walked back run 1" in said, said
    assert "what the runs' commands did outside it (the network, a database, other folders) is not undone" in said, said
    assert snapshot(repo) == before
