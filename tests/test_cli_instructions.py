"""cog edit: the instruction from stdin (-) or --file, --last / --thread, and the repository's
AGENTS.md files reaching the model (named in the start event and the first line of the output)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import json_lines, repo_with, run_cog
from model_servers import OpenAIServer, Reply, ToolCall


def edit(repo: Path, server: OpenAIServer, *args: str, input: str | None = None, cwd: Path | None = None, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "XDG_CONFIG_HOME": str(home or repo.parent / "no-config")}
    yes = [] if "--approval" in args else ["--yes"]
    return run_cog(["edit", "--json", *yes, "--model", "openai:gpt-4o-mini", *args], cwd or repo, env=env, input=input)


def messages(server: OpenAIServer, n: int = 0) -> list[dict[str, Any]]:
    return server.requests[n].body["messages"]


def test_the_instruction_from_stdin_longer_than_any_shell_argument(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    task = "Fix the parser.\n\n" + "".join(f"- requirement {i}: keep \"quotes\" and $dollars `as is`\n" for i in range(4000))
    assert len(task) > 200_000  # one argv string may hold at most 128 KiB on Linux
    with OpenAIServer([Reply("done")]) as server:
        out = edit(repo, server, "-", input=task)
    assert out.returncode == 0, out.stderr
    assert messages(server)[-1] == {"role": "user", "content": task.strip("\n")}


def test_the_instruction_from_a_file(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    (tmp_path / "task.md").write_text("\ufeff# Task\n\nRename foo to bar.\n", encoding="utf-8")
    with OpenAIServer([Reply("done")]) as server:
        out = edit(repo, server, "--file", str(tmp_path / "task.md"))
    assert out.returncode == 0, out.stderr
    assert messages(server)[-1]["content"] == "# Task\n\nRename foo to bar."


@pytest.mark.parametrize(
    ("args", "stdin", "says"),
    [
        ([], None, "no instruction given"),
        (["do it", "--file", "task.md"], None, "not both"),
        (["--file", "missing.md"], None, "--file missing.md: no such file"),
        (["--file", "latin1.md"], None, "is not UTF-8 text"),
        (["-"], "  \n\n", "the instruction from stdin is empty"),
        (["-", "--approval", "stdin"], "do it", "pass the instruction with --file PATH"),
        (["--last", "do it"], None, "no thread to continue in this workspace yet"),
        (["--last", "--thread", "thr_x", "do it"], None, "give one"),
    ],
)
def test_bad_instruction_input_is_a_usage_error(tmp_path: Path, args: list[str], stdin: str | None, says: str) -> None:
    repo = repo_with(tmp_path, {"task.md": "do it\n"})
    (repo / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    with OpenAIServer([]) as server:
        out = edit(repo, server, *args, input=stdin)
    assert out.returncode == 2, out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr
    assert server.requests == []
    if out.stdout:  # --json: the stream still says what went wrong, and ends
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        assert [e["type"] for e in lines] == ["error", "finish"] and lines[-1]["status"] == "error"
        assert says in lines[0]["message"]


def test_last_continues_the_most_recent_thread(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([Reply("first answer"), Reply("second answer"), Reply("third")]) as server:
        first = json_lines(edit(repo, server, "first task").stdout)
        second = json_lines(edit(repo, server, "--last", "second task").stdout)
        third = json_lines(edit(repo, server, "--thread", first[0]["threadId"], "third task").stdout)
    assert first[0]["threadId"] == second[0]["threadId"] == third[0]["threadId"]
    contents = [m["content"] for m in messages(server, 1)[1:]]
    assert contents == ["first task", "first answer", "second task"]


def test_a_repositorys_agents_md_reaches_the_model_and_the_start_event_names_it(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {
        "AGENTS.md": "Use tabs, never spaces.\n",
        "pkg/AGENTS.override.md": "In pkg: no new dependencies.\n",
        "pkg/AGENTS.md": "shadowed by the override\n",
        "pkg/core/x.py": "x = 1\n",
    })
    home = tmp_path / "home"
    (home / "cog").mkdir(parents=True)
    (home / "cog" / "AGENTS.md").write_text("Answer in English.\n")
    with OpenAIServer([Reply("done")]) as server:
        out = edit(repo, server, "do it", cwd=repo / "pkg", home=home)
    assert out.returncode == 0, out.stderr
    start = json_lines(out.stdout)[0]
    assert start["instructions"] == [
        {"path": str(home / "cog" / "AGENTS.md"), "size": 19},
        {"path": "AGENTS.md", "size": 24},
        {"path": "pkg/AGENTS.override.md", "size": 29},
    ]
    system = messages(server)[0]["content"]
    assert system.index("Answer in English.") < system.index("Use tabs, never spaces.") < system.index("In pkg: no new dependencies.")
    assert "shadowed by the override" not in system
    # the text output's first line says which files were loaded
    with OpenAIServer([Reply("done")]) as server:
        text = run_cog(["edit", "--yes", "--model", "openai:gpt-4o-mini", "do it"], repo,
                       env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert text.stdout.splitlines()[0] == "Instructions  AGENTS.md (24 B)"


def test_no_instructions_and_a_zero_budget_read_none(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"AGENTS.md": "House rule XYZ.\n"})
    with OpenAIServer([Reply("done"), Reply("done")]) as server:
        plain = json_lines(edit(repo, server, "--no-instructions", "do it").stdout)
        (repo / "pyproject.toml").write_text("[tool.cog]\ninstruction_budget = 0\n")
        budget0 = json_lines(edit(repo, server, "do it").stdout)
    assert "instructions" not in plain[0] and "instructions" not in budget0[0]
    assert all("House rule XYZ" not in r.body["messages"][0]["content"] for r in server.requests)


def test_configured_names_and_a_bad_name(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"CLAUDE.md": "Claude's rules.\n", "pyproject.toml": '[tool.cog]\ninstruction_files = ["CLAUDE.md"]\n'})
    with OpenAIServer([Reply("done")]) as server:
        start = json_lines(edit(repo, server, "do it").stdout)[0]
    assert start["instructions"] == [{"path": "CLAUDE.md", "size": 16}]
    (repo / "pyproject.toml").write_text('[tool.cog]\ninstruction_files = ["../../etc/passwd"]\n')
    with OpenAIServer([]) as server:
        out = edit(repo, server, "do it")
    assert out.returncode == 2 and "instruction_files" in out.stderr and "is not a file name" in out.stderr


def test_a_subdirectory_agents_md_is_told_once_when_a_tool_first_reads_there(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"AGENTS.md": "root\n", "svc/AGENTS.md": "svc: log with structlog\n", "svc/a.py": "a = 1\n", "svc/b.py": "b = 2\n"})
    turns = [
        Reply("", [ToolCall("c1", "read_file", {"path": "svc/a.py"})]),
        Reply("", [ToolCall("c2", "read_file", {"path": "svc/b.py"})]),
        Reply("done"),
    ]
    with OpenAIServer(turns) as server:
        out = edit(repo, server, "look at svc")
    assert out.returncode == 0, out.stderr
    first, second = (m["content"] for m in messages(server, 2) if m["role"] == "tool")
    assert "svc: log with structlog" in first and "svc/AGENTS.md" in first
    assert "structlog" not in second
    assert "structlog" not in messages(server, 0)[0]["content"]  # not loaded at the start (cwd is the root)


def test_the_context_window_in_the_start_event(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x\n"})
    with OpenAIServer([Reply("done"), Reply("done"), Reply("done")], served_model="local-coder", context_length=16_384) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
        reported = json_lines(run_cog(["edit", "--json", "--model", "openai:local-coder", "go"], repo, env=env).stdout)
        table = json_lines(run_cog(["edit", "--json", "--model", "openai:gpt-4o", "go"], repo, env=env).stdout)
        flag = json_lines(run_cog(["edit", "--json", "--model", "openai:local-coder", "--context-window", "9000", "go"], repo, env=env).stdout)
    assert [r[0]["contextWindow"] for r in (reported, table, flag)] == [16_384, 128_000, 9000]
    assert [r[-1]["contextWindow"] for r in (reported, table, flag)] == [16_384, 128_000, 9000]
