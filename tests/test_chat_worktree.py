"""`cog chat --worktree` on a real terminal (a pty driven by pexpect) against a loopback model
server: the chat runs in a new worktree, its edit lands there and not in the work tree, and when
the person leaves its changes are committed on the worktree's branch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_helpers import repo_with
from conftest import GIT_ENV
from model_servers import OpenAIServer, Reply, ToolCall
from test_chat import APPROVAL, PROMPT, answer, chat, leave, send, server_env


@pytest.mark.slow
def test_a_chat_in_a_worktree_edits_there_and_commits_on_its_branch_when_left(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "first"], check=True, env={**GIT_ENV, "PATH": "/usr/bin:/bin"})
    edit = ToolCall("e1", "edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"})
    with OpenAIServer([Reply("", [edit]), Reply("x is two now.")]) as server:
        env = {**server_env(server), **GIT_ENV}
        with chat(repo, env, "--worktree-name", "talk") as child:
            child.expect(r"worktree talk: .*\.cog/worktrees/talk \(branch cog/talk\)")
            child.expect(PROMPT)
            send(child, "make it two")
            child.expect(APPROVAL)
            answer(child, "y")
            child.expect(r"Done · 2 steps · 1 file changed")
            child.expect(PROMPT)
            assert leave(child) == 0
            assert "committed" in (child.before or "")
    where = repo / ".cog" / "worktrees" / "talk"
    assert (where / "a.py").read_text() == "x = 2\n" and (repo / "a.py").read_text() == "x = 1\n"
    shown = subprocess.run(["git", "-C", str(repo), "show", "--name-only", "--format=%s", "cog/talk"], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["cog", "chat", "in", "worktree", "talk", "a.py"]
