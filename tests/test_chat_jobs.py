"""`cog chat`'s `/jobs` on a real terminal (issue 50: background commands listed for the person):
a command the model started in the background is listed with its state and output size, killed by
`/jobs kill ID`, and an unknown id or argument gets a clear line, never a traceback."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import repo_with
from model_servers import OpenAIServer, Reply, ToolCall
from test_chat import APPROVAL, PROMPT, answer, chat, leave, send, server_env


def test_jobs_lists_a_background_command_and_kills_it(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    start = ToolCall("c1", "run_command", {"command": "echo serving; exec sleep 300", "background": True})
    script = [Reply("", [start]), Reply("The server runs.")]
    with OpenAIServer(script) as server, chat(repo, server_env(server)) as child:
        child.expect(PROMPT)
        send(child, "/jobs")
        child.expect("No background commands in this session")
        send(child, "start the server")
        child.expect(APPROVAL)
        answer(child, "y")
        child.expect("The server runs.")
        child.expect(PROMPT)
        send(child, "/jobs")
        child.expect(r"job_1\s+running\s+\d+ s ago\s+8 B\s+echo serving; exec sleep 300")
        child.expect(r"1 running; /jobs kill ID ends one")
        send(child, "/jobs kill job_1")
        child.expect(r"job_1 killed: echo serving")
        send(child, "/jobs")
        child.expect(r"job_1\s+killed")
        child.expect(r"0 running")
        send(child, "/jobs kill job_9")
        child.expect(r"no background command 'job_9' in this session \(known: job_1\)")
        send(child, "/jobs frob")
        child.expect(r"unknown /jobs argument 'frob'")
        child.expect(PROMPT)
        assert leave(child) == 0
