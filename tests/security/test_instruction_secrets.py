"""Instruction files are workspace files (issue 23.9): a repository that names ``.env`` (or a link to
it, or a link out of the workspace) as an instruction file must not get it into the model's system
prompt. The secret-file rules of ``read_file`` decide (built-in names, ``secret_globs``,
``--allow-secret``); the start event and the first line of the output say what was left out and why.

Each attack is shown working where the defence does not stand in its way (the same text in a file
that is no secret, ``--allow-secret``, plain ``cat`` following the link) and failing through cog,
checked at the loopback model server, as root and as an unprivileged user."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from model_servers import OpenAIServer, Reply

from .conftest import Runner

#: a password of no known token shape: redaction does not find it, only the secret-file rule stops it
PASSWORD = "correct-horse-battery-staple-7731"
ENV_FILE = f"DB_HOST=db.internal\nDB_PASSWORD={PASSWORD}\n"


def _edit(runner: Runner, repo: Path, server: OpenAIServer, *flags: str, fmt: str = "--json") -> Any:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    return runner.cog(["edit", *([fmt] if fmt else []), "--yes", "--model", "openai:gpt-4o-mini", *flags, "hello"], repo, env=env)


def _sent(server: OpenAIServer) -> str:
    """Everything the model server received (system prompt, messages, tools)."""
    return json.dumps([r.body for r in server.requests])


def _start(stdout: str) -> dict[str, Any]:
    first = json.loads(stdout.splitlines()[0])
    assert first["type"] == "start", first
    return first


def test_instruction_files_naming_env_do_not_send_it_to_the_model(runner: Runner) -> None:
    repo = runner.make_repo({
        ".env": ENV_FILE,
        "NOTES.md": ENV_FILE,  # the same text in a file that is no secret
        "pyproject.toml": '[tool.cog]\ninstruction_files = [".env"]\n',
    })
    # the channel works: a configured instruction file's text goes into the system prompt as it is
    (repo / "cog.toml").write_text('instruction_files = ["NOTES.md"]\n')
    runner.own(repo)
    with OpenAIServer([Reply("done")]) as server:
        out = _edit(runner, repo, server)
    assert out.returncode == 0, out.stderr
    assert PASSWORD in _sent(server)  # undefended: the loader sends what it reads
    (repo / "cog.toml").unlink()

    # .env named as an instruction file: left out, and the output says so first
    with OpenAIServer([Reply("done")]) as server:
        out = _edit(runner, repo, server)
    assert out.returncode == 0, out.stderr
    assert PASSWORD not in _sent(server) and "DB_HOST" not in _sent(server)
    [left] = _start(out.stdout)["instructions"]
    assert left["path"] == ".env" and left["size"] == len(ENV_FILE)
    assert "looks like a secret" in left["leftOut"] and "--allow-secret .env" in left["leftOut"]
    assert out.stderr.splitlines()[0].startswith("cog: .env not read: it looks like a secret"), out.stderr

    # the text output's first line says it too
    with OpenAIServer([Reply("done")]) as server:
        text = _edit(runner, repo, server, fmt="")
    assert PASSWORD not in _sent(server) and PASSWORD not in text.stdout + text.stderr
    assert text.stdout.splitlines()[0].startswith("Instructions  .env left out: it looks like a secret"), text.stdout

    # the person's --allow-secret lets it through, as it lets read_file read it
    with OpenAIServer([Reply("done")]) as server:
        out = _edit(runner, repo, server, "--allow-secret", ".env")
    assert out.returncode == 0, out.stderr
    assert PASSWORD in _sent(server)
    assert _start(out.stdout)["instructions"] == [{"path": ".env", "size": len(ENV_FILE)}]


def test_a_link_to_a_secret_and_secret_globs_are_left_out_like_read_file_leaves_them(runner: Runner) -> None:
    repo = runner.make_repo({
        ".env": ENV_FILE,
        "deploy.md": f"Deploy with the password {PASSWORD}\n",
        "pyproject.toml": '[tool.cog]\ninstruction_files = ["CLAUDE.md", "deploy.md"]\nsecret_globs = ["deploy.md"]\n',
    })
    os.symlink(".env", repo / "CLAUDE.md")  # an innocent name for the secret file
    runner.own(repo)
    assert PASSWORD in runner.run(["cat", "CLAUDE.md"], repo).stdout  # the link leads to the secret
    with OpenAIServer([Reply("done")]) as server:
        out = _edit(runner, repo, server)
    assert out.returncode == 0, out.stderr
    assert PASSWORD not in _sent(server)
    left = {f["path"]: f["leftOut"] for f in _start(out.stdout)["instructions"]}
    assert set(left) == {"CLAUDE.md", "deploy.md"} and all("looks like a secret" in why for why in left.values())
    # read_file says the same about both
    for path in ("CLAUDE.md", "deploy.md"):
        refused = runner.cog(["tool", "read_file", "--json", f"path={path}"], repo)
        assert "SECRET_FILE" in refused.stdout and PASSWORD not in refused.stdout


def test_a_link_out_of_the_workspace_is_not_followed_and_is_named(runner: Runner) -> None:
    outside = runner.scratch("outside")
    (outside / "notes.txt").write_text(f"the vault password is {PASSWORD}\n")
    runner.own(outside)
    repo = runner.make_repo({"README.md": "x\n", "cog.toml": 'instruction_files = ["NOTES.md"]\n'})
    os.symlink(outside / "notes.txt", repo / "AGENTS.md")
    os.symlink(outside / "notes.txt", repo / "NOTES.md")
    runner.own(repo)
    assert PASSWORD in runner.run(["cat", "AGENTS.md"], repo).stdout  # plain cat follows it
    with OpenAIServer([Reply("done")]) as server:
        out = _edit(runner, repo, server)
    assert out.returncode == 0, out.stderr
    assert PASSWORD not in _sent(server)
    left = {f["path"]: f["leftOut"] for f in _start(out.stdout)["instructions"]}
    assert set(left) == {"AGENTS.md", "NOTES.md"}
    assert all("outside the workspace: not followed" in why for why in left.values())
    assert "cog: AGENTS.md not read: it is a link to" in out.stderr


def test_a_subdirectorys_env_is_not_told_when_a_tool_first_reads_there(runner: Runner) -> None:
    from model_servers import ToolCall

    repo = runner.make_repo({
        "svc/.env": ENV_FILE,
        "svc/app.py": "x = 1\n",
        "cog.toml": 'instruction_files = [".env"]\n',
    })

    def read_svc(*flags: str) -> str:
        with OpenAIServer([Reply("", [ToolCall("r1", "read_file", {"path": "svc/app.py"})]), Reply("done")]) as server:
            out = _edit(runner, repo, server, *flags)
            assert out.returncode == 0, out.stderr
            assert len(server.requests) == 2, out.stdout
            return _sent(server)

    assert PASSWORD in read_svc("--allow-secret", "svc/.env")  # undefended: told with the read's result
    assert PASSWORD not in read_svc()
