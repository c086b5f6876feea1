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


def test_the_status_line_counts_the_background_commands_running(tmp_path: Path) -> None:
    """On a terminal that answers where its cursor is, the line below the prompt ends with the
    background commands running, and stops saying so once none is."""
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    start = ToolCall("c1", "run_command", {"command": "exec sleep 300", "background": True})
    with OpenAIServer([Reply("", [start]), Reply("started")]) as server:
        env = server_env(server, NO_COLOR="1")
        del env["PROMPT_TOOLKIT_NO_CPR"]
        with chat(repo, env) as child:
            child.expect(r"\x1b\[6n")
            child.send("\x1b[3;1R")
            child.expect(r"0 in, 0 out")
            send(child, "start it")
            child.expect(APPROVAL)
            answer(child, "y")
            child.expect("started")
            child.expect(r"\x1b\[6n")
            child.send("\x1b[12;1R")
            child.expect(r"out, \$[\d.]+ · 1 in background \(/jobs\)")
            send(child, "/jobs kill job_1")
            child.expect("job_1 killed")
            child.expect(r"\x1b\[6n")
            child.send("\x1b[14;1R")
            child.expect(r"out, \$[\d.]+")  # the status line drawn again after the kill
            send(child, "/thread")
            child.expect("this session: ")
            assert "in background" not in child.before
            child.expect(r"\x1b\[6n")  # the next prompt asks where the cursor is: answered before leaving
            child.send("\x1b[20;1R")
            child.expect(r"out, \$[\d.]+")
            assert leave(child) == 0
