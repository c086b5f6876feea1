"""A later session's ``/jobs`` (chat and ACP share :func:`cogcli.session.background.jobs_reply`)
lists the jobs kept earlier in its workspace and ``/jobs kill PID`` ends one, with ``cog jobs kill``'s
checks: a recorded pid whose start time matches, kept in this workspace (issue 50's leftover).

Real kept jobs: a session's ``run_command(background=true)`` (sandbox off, to stay fast), kept with
``/jobs keep``, the session closed; then a second session of the same repository."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from run_tests_helpers import alive, wait_until_dead
from test_kept_jobs import _repo, _Session, _until

from cogcli.contract.invoke import invoke_tool
from cogcli.session.background import jobs_reply
from workspace_tools.shell import kept


class _Later:
    """A chat session before its first run: no tools yet, only its workspace root."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run_tools(self) -> list[Any]:
        return []


async def _kept_job(repo: Path, command: str) -> kept.KeptJob:
    """Start ``command`` in the background in a session of ``repo``, keep it, close the session."""
    from workspace_tools import workspace_tools

    tools = workspace_tools(repo, sandbox="off", only=["run_command"])
    run = tools[0]
    try:
        await invoke_tool(run, {"command": command, "background": True})
        assert jobs_reply(_Session(tools), "keep job_1").startswith("job_1 kept (pid ")
    finally:
        run.close()
    [record] = [r for r in kept.kept_jobs() if r.command == command]
    return record


@pytest.mark.anyio
async def test_a_later_session_lists_the_workspaces_kept_jobs_and_kills_one(tmp_path: Path, person_state_home: Path) -> None:
    repo = _repo(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    mine = await _kept_job(repo, "exec sleep 301")
    elsewhere = await _kept_job(other, "exec sleep 302")
    try:
        assert mine.running and elsewhere.running
        later = _Later(repo)
        listed = jobs_reply(later, "")
        assert "No background commands in this session" in listed
        assert f"{mine.id}  running  exec sleep 301" in listed and f"log {mine.log}" in listed, listed
        assert "exec sleep 302" not in listed, "a job kept in another workspace is listed here"
        # /jobs kill PID ends only a job kept in this workspace
        refused = jobs_reply(later, f"kill {elsewhere.id}")
        assert f"no job kept in this workspace with pid {elsewhere.id}" in refused and "cog jobs kill PID" in refused
        assert alive(elsewhere.pid)
        killed = jobs_reply(later, f"kill {mine.id}")
        assert killed.startswith(f"killed {mine.id}: exec sleep 301 (its log stays at {mine.log})"), killed
        assert wait_until_dead([mine.pid]) == []
        assert "exec sleep 301" not in jobs_reply(later, "")
        assert "no job kept in this workspace" in jobs_reply(later, f"kill {mine.id}")
    finally:
        for record in (mine, elsewhere):
            if alive(record.pid):
                os.killpg(record.pid, signal.SIGKILL)


def test_kill_pid_refuses_a_record_whose_pid_now_names_another_process(tmp_path: Path, person_state_home: Path) -> None:
    """A record is a file in the person's state folder; its pid may since name another process (or a
    forged record may name one): its start time differs, so the record reads as ended and nothing is signalled."""
    repo = _repo(tmp_path)
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        ticks = kept.start_ticks(victim.pid)
        assert ticks is not None
        record = kept.KeptJob(id=str(victim.pid), pid=victim.pid, start_ticks=ticks + 1, command="exec sleep 303",
                              log=str(tmp_path / "x.log"), workspace=str(repo), job="job_1", started=1.0)
        kept.save(record)
        later = _Later(repo)
        assert f"{victim.pid}  ended  exec sleep 303" in jobs_reply(_Later(repo), "")
        kept.save(record)  # listing forgot it (ended); the kill is refused as well
        reply = jobs_reply(later, f"kill {victim.pid}")
        assert "had ended already" in reply, reply
        assert victim.poll() is None, "a process that is not the kept job was killed"
        # the same record with the real start time is the job: then it is ended (the check is what held)
        kept.save(record.model_copy(update={"start_ticks": ticks}))
        assert jobs_reply(later, f"kill {victim.pid}").startswith(f"killed {victim.pid}")
        assert _until(lambda: victim.poll() is not None)
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait()


@pytest.mark.anyio
async def test_the_same_sessions_kept_job_is_listed_once_and_killed_by_pid(tmp_path: Path, person_state_home: Path) -> None:
    from workspace_tools import workspace_tools

    repo = _repo(tmp_path)
    tools = workspace_tools(repo, sandbox="off", only=["run_command"])
    session = _Session(tools)
    try:
        await invoke_tool(tools[0], {"command": "exec sleep 304", "background": True})
        jobs_reply(session, "keep job_1")
        [record] = kept.kept_jobs()
        listed = jobs_reply(session, "")
        assert listed.count("exec sleep 304") == 1 and "Kept by earlier sessions" not in listed, listed
        assert jobs_reply(session, f"kill {record.id}").startswith(f"job_1 (pid {record.id}) killed: exec sleep 304")
        assert wait_until_dead([record.pid]) == [] and kept.kept_jobs() == []
    finally:
        tools[0].close()


@pytest.mark.anyio
async def test_acp_jobs_lists_and_kills_a_job_kept_by_an_earlier_session(make_repo: Any, tmp_path: Path, person_state_home: Path) -> None:
    """ACP's ``/jobs`` is the same reply: a real ``cog acp`` session, no run yet, sees the kept job and ends it."""
    from acp.helpers import text_block
    from test_acp import Agent, Editor, write_cassette

    repo = make_repo("calc")
    record = await _kept_job(repo, "exec sleep 308")
    try:
        editor = Editor()
        cassette = write_cassette(tmp_path / "none.jsonl", [{"text": "unused"}])
        async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("/jobs")])
            listed = editor.text()
            await conn.prompt(session_id=session.session_id, prompt=[text_block(f"/jobs kill {record.id}")])
            killed = editor.text()[len(listed):]
        assert f"{record.id}  running  exec sleep 308" in listed and "Kept by earlier sessions in this workspace" in listed, listed
        assert killed.startswith(f"killed {record.id}: exec sleep 308"), killed
        assert wait_until_dead([record.pid]) == []
    finally:
        if alive(record.pid):
            os.killpg(record.pid, signal.SIGKILL)


def test_a_later_cog_chat_lists_the_job_an_earlier_chat_kept_and_kills_it(tmp_path: Path, person_state_home: Path) -> None:
    """Two real `cog chat`s on a pty, one after the other, in one repository."""
    import re

    from cli_helpers import repo_with
    from model_servers import OpenAIServer, Reply, ToolCall
    from test_chat import APPROVAL, PROMPT, answer, chat, leave, send, server_env

    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    start = ToolCall("c1", "run_command", {"command": "echo serving; exec sleep 309", "background": True})
    with OpenAIServer([Reply("", [start]), Reply("The server runs.")]) as server, chat(repo, server_env(server)) as child:
        child.expect(PROMPT)
        send(child, "start the server")
        child.expect(APPROVAL)
        answer(child, "y")
        child.expect("The server runs.")
        child.expect(PROMPT)
        send(child, "/jobs keep job_1")
        child.expect(r"job_1 kept \(pid (\d+)\)")
        pid = int(child.match.group(1))
        child.expect(PROMPT)
        assert leave(child) == 0
    try:
        assert alive(pid), "the kept job died with the first chat"
        with OpenAIServer([Reply("unused")]) as server, chat(repo, server_env(server)) as child:
            child.expect(PROMPT)
            send(child, "/jobs")
            child.expect("No background commands in this session")
            child.expect(r"Kept by earlier sessions in this workspace")
            child.expect(re.escape(f"{pid}  running  echo serving; exec sleep 309"))
            child.expect(r"log \S+job_1-\S+\.log")
            send(child, f"/jobs kill {pid}")
            child.expect(re.escape(f"killed {pid}: echo serving; exec sleep 309"))
            child.expect(PROMPT)
            assert leave(child) == 0
        assert wait_until_dead([pid]) == []
    finally:
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
