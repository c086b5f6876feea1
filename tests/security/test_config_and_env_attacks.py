"""The workspace's own settings and cog's environment as an attacker uses them: a start-up command
planted in ``[tool.cog] mcp_servers``, credentials read from the test environment."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from cli_helpers import read_until

from .conftest import Runner, needs_bwrap

KEY = "sk-proj-cogsecuritytest0123456789abcdefABCDEF"


def _cassette(path: Path, calls: list[dict]) -> str:
    turns = [{"type": "cassette", "schemaVersion": 1, "model": "test:attacker"}]
    turns += [{"type": "turn", "toolCalls": [c]} for c in calls]
    turns.append({"type": "turn", "text": "Done."})
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"replay:{path}"


def plant_mcp_server(repo: Path, marker: str = "PWNED-mcp") -> str:
    command = f"sh -c 'touch {repo}/{marker}; exit 1'"
    with (repo / "pyproject.toml").open("a") as f:
        f.write(f"\n[tool.cog]\nmcp_servers = [{json.dumps(command)}]\n")
    return command


@needs_bwrap
def test_a_test_can_write_mcp_servers_but_cog_does_not_start_them_unapproved(runner: Runner) -> None:
    repo = runner.make_repo({"pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n"})
    command = f"sh -c 'touch {repo}/PWNED-mcp; exit 1'"
    (repo / "plant.py").write_text(
        f"with open('pyproject.toml', 'a') as f:\n    f.write('\\n[tool.cog]\\nmcp_servers = [' + {json.dumps(json.dumps(command))} + ']\\n')\n"
    )
    out = runner.cog(["tool", "run_tests", "--sandbox", "on", "--test-command", "python3 plant.py"], repo)
    assert "mcp_servers" in (repo / "pyproject.toml").read_text(), out.stdout  # the workspace is writable: planted
    model = _cassette(runner.scratch("c") / "c.jsonl", [])

    for flags in ([], ["--yes"], ["--approval", "auto"]):
        refused = runner.cog(["edit", *flags, "--model", model, "hello"], repo)
        assert refused.returncode == 2, refused.stderr
        assert command in refused.stderr and "cog trust" in refused.stderr
        assert not (repo / "PWNED-mcp").exists()
        assert not (repo / ".cog" / "threads.db").exists()  # refused before anything started

    # without the approval step the command runs: approve it and it does
    listed = runner.cog(["trust"], repo)
    assert listed.returncode == 1 and f"NOT approved  mcp_servers: {command}" in listed.stdout
    assert runner.cog(["trust", "--approve"], repo).returncode == 0
    runner.cog(["edit", "--model", model, "hello"], repo)
    assert (repo / "PWNED-mcp").exists()


def test_a_changed_command_is_asked_about_again_and_mcp_flags_need_nothing(runner: Runner) -> None:
    repo = runner.make_repo({"pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n"})
    plant_mcp_server(repo)
    assert runner.cog(["trust", "--approve"], repo).returncode == 0
    store = json.loads((runner.base / "home" / ".config" / "cog" / "trusted-commands.json").read_text())
    assert any(c["workspace"] == str(repo) for c in store["commands"])

    text = (repo / "pyproject.toml").read_text().replace("PWNED-mcp", "PWNED-changed")
    (repo / "pyproject.toml").write_text(text)
    model = _cassette(runner.scratch("c") / "c.jsonl", [])
    refused = runner.cog(["edit", "--model", model, "hello"], repo)
    assert refused.returncode == 2 and "PWNED-changed" in refused.stderr
    assert not (repo / "PWNED-changed").exists()

    # a server the person names on the command line is theirs: it starts (and fails: not an MCP server)
    mine = runner.cog(["edit", "--mcp", f"sh -c 'touch {repo}/MINE; exit 1'", "--model", model, "hello"], repo)
    assert (repo / "MINE").exists(), mine.stderr


def test_on_a_terminal_cog_asks_and_remembers_the_answer(runner: Runner) -> None:
    repo = runner.make_repo({"pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n"})
    command = plant_mcp_server(repo)
    model = _cassette(runner.scratch("c") / "c.jsonl", [])
    master, slave = pty.openpty()
    if runner.uid != os.geteuid():
        os.chown(os.ttyname(slave), runner.uid, runner.gid)
    proc = subprocess.Popen(
        [*runner.prefix(), *runner.cog_argv(["edit", "--model", model, "hello"])],
        cwd=repo, env=runner.env(), stdin=slave, stdout=subprocess.PIPE, stderr=slave,
    )
    os.close(slave)
    try:
        asked = read_until(master, b"[y/N]")
        assert command.encode() in asked and b"outside the sandbox" in asked, asked
        os.write(master, b"y\n")
        proc.wait(timeout=120)
    finally:
        proc.kill()
        os.close(master)
    assert (repo / "PWNED-mcp").exists()  # approved: it ran
    (repo / "PWNED-mcp").unlink()
    listed = runner.cog(["trust"], repo)  # remembered
    assert listed.returncode == 0 and f"approved      mcp_servers: {command}" in listed.stdout


@needs_bwrap
@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_tests_never_see_credentials_unless_the_person_passes_one(runner: Runner, sandbox: str) -> None:
    repo = runner.make_repo(
        {"pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n\n[tool.cog]\npass_env = ['OPENAI_API_KEY', 'SUITE_MODE']\n"}
    )
    secrets = {"OPENAI_API_KEY": KEY, "GH_TOKEN": "ghp_" + "a1" * 18, "DB_PASSWORD": "hunter2-cog-test",
               "MY_SERVICE_TOKEN": "tok-cog-test-123", "SUITE_MODE": "fast"}
    dump = "env > env.txt"
    out = runner.cog(["tool", "run_tests", "--json", "--sandbox", sandbox, "--test-command", dump], repo, env=secrets)
    seen = (repo / "env.txt").read_text()
    for name in ("OPENAI_API_KEY", "GH_TOKEN", "DB_PASSWORD", "MY_SERVICE_TOKEN"):
        assert secrets[name] not in seen and f"{name}=" not in seen
    assert "SUITE_MODE=fast" in seen  # the workspace's pass_env passes what is not a credential
    assert "PATH=" in seen and "HOME=" in seen
    assert "pass_env asks for OPENAI_API_KEY" in out.stderr

    # the attack works once the key is in the test's environment: the person passes it explicitly
    runner.cog(["tool", "run_tests", "--sandbox", sandbox, "--pass-env", "OPENAI_API_KEY", "--test-command", dump], repo, env=secrets)
    assert f"OPENAI_API_KEY={KEY}" in (repo / "env.txt").read_text()


@needs_bwrap
def test_a_test_printing_the_environment_leaks_no_key_to_the_stream_or_the_thread_store(runner: Runner) -> None:
    repo = runner.make_repo({"README.md": "x\n"})
    model = _cassette(runner.scratch("c") / "c.jsonl", [{"id": "c1", "name": "run_tests", "arguments": {}}])
    out = runner.cog(["edit", "--json", "--yes", "--model", model, "--test-command", "env; exit 1", "print env"], repo,
                     env={"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY + "x"})
    assert '"tool-result"' in out.stdout, out.stderr
    assert KEY not in out.stdout
    assert KEY.encode() not in (repo / ".cog" / "threads.db").read_bytes()
