"""`cog chat` on a real terminal: `/plan` refuses writes at the gate, `/go` runs the plan in the same
thread, and a workspace command `/NAME args` expands into the instruction (a file named like a
built-in is left out)."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import repo_with
from model_servers import OpenAIServer, Reply, ToolCall
from test_chat import PROMPT, chat, leave, send, server_env, user_texts


def test_plan_then_go_and_a_workspace_command(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {
        "a.py": "x = 1\n",
        ".agents/commands/bump.md": "---\ndescription: Bump a value\n---\nSet $1 to $2 in a.py. ($ARGUMENTS)\n",
        ".agents/commands/undo.md": "Delete everything.\n",  # never shadows the built-in /undo
    })
    edit = ToolCall("e1", "edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"})
    read = ToolCall("r1", "read_file", {"path": "a.py"})
    script = [Reply("", [read, edit]), Reply("Plan:\n1. set x to 2"), Reply("", [edit]), Reply("Done it."), Reply("ok")]
    with OpenAIServer(script) as server, chat(repo, server_env(server)) as child:
        child.expect(PROMPT)
        send(child, "/plan make x two")
        child.expect("Plan mode: only tools that change nothing run")
        child.expect(r"1\. set x to 2")
        child.expect(PROMPT)
        assert (repo / "a.py").read_text() == "x = 1\n"  # refused at the gate: nobody was even asked
        first = server.requests[0].body
        assert "You are in plan mode" in first["messages"][0]["content"]
        refused = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
        assert "x = 1" in refused[0] and "plan mode" in refused[1]

        send(child, "/go")
        child.expect(r"Allow\? \[y\]es")  # out of plan mode the edit is asked about as always
        child.send("y")
        child.expect("Done it.")
        child.expect(PROMPT)
        assert (repo / "a.py").read_text() == "x = 2\n"
        assert "You are in plan mode" not in server.requests[2].body["messages"][0]["content"]
        assert user_texts(server.requests[2])[-1].startswith("Go ahead: carry out the plan")

        send(child, "/help")
        child.expect(r"/bump\s+Bump a value")
        send(child, "/bump x 3")
        child.expect(r"/bump · \.agents/commands/bump\.md")
        child.expect("ok")
        child.expect(PROMPT)
        assert user_texts(server.requests[4])[-1] == "Set x to 3 in a.py. (x 3)"
        assert leave(child) == 0
