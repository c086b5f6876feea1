"""The sandbox escapes of the test runner's suite, tried through ``run_command`` (issue 38): a
hostile model's shell command. Each attack runs through the real ``cog tool run_command``: with
``--sandbox off`` it works (so the check can see an escape), sandboxed it fails. As root and as an
unprivileged user. Also: a daemon outliving the command, a credential file in the home, and a
credential in cog's environment (held by the environment's allow-list in both modes; plain bash
shows the attack works without it)."""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import grows, kill_everything_in, needs_bwrap
from .test_sandbox_escapes import ATTACKS, DAEMON, Attack, Bench, _cleanup_sockets, _reset, bench  # noqa: F401 (fixture)

pytestmark = needs_bwrap


def run_command(bench: Bench, command: str, sandbox: str, env: dict[str, str] | None = None) -> dict:
    out = bench.runner.cog(["tool", "run_command", "--json", "--sandbox", sandbox, f"command={command}"], bench.repo, env)
    assert out.returncode in (0, 1), out.stderr
    result = [json.loads(line) for line in out.stdout.splitlines() if line.strip()][-1]
    assert result["type"] == "tool-result" and result.get("error") is None, result
    assert result["details"]["sandbox"] == ("bwrap" if sandbox == "on" else "none"), result
    return result


COMMAND_ATTACKS: list[Attack] = [
    *ATTACKS,
    (
        "write a file outside the workspace",
        lambda b: f"echo pwned > {b.outside}/direct.txt",
        lambda b: (b.outside / "direct.txt").exists(),
    ),
    (
        "write through a link in the workspace that leads outside",
        lambda b: f"ln -sfn {b.outside} out; echo pwned > out/linked.txt; rm out",
        lambda b: (b.outside / "linked.txt").exists(),
    ),
]


@pytest.mark.parametrize("attack", COMMAND_ATTACKS, ids=[a[0] for a in COMMAND_ATTACKS])
def test_the_attack_works_without_the_sandbox_and_fails_inside_it(bench: Bench, attack: Attack) -> None:
    _name, script, escaped = attack
    try:
        run_command(bench, script(bench), "off")
        assert escaped(bench), "the attack did not work even without the sandbox: this test would prove nothing"
    finally:
        _cleanup_sockets(bench)
        _reset(bench)
    try:
        result = run_command(bench, script(bench), "on")
        assert not escaped(bench), "the attack got out of the sandbox"
        assert "NOT sandboxed" not in result["result"]
    finally:
        _cleanup_sockets(bench)
        _reset(bench)


def test_a_double_forked_daemon_dies_with_the_command(bench: Bench) -> None:
    heartbeat = bench.repo / "heartbeat.txt"
    run_command(bench, DAEMON, "off")
    assert grows(heartbeat), "without the sandbox the daemon should outlive the command"
    kill_everything_in(bench.repo)
    heartbeat.unlink()

    run_command(bench, DAEMON, "on")
    assert heartbeat.exists()  # it ran
    assert not grows(heartbeat), "the daemon outlived the sandboxed command"


def test_a_credential_file_in_the_home_is_out_of_reach(bench: Bench) -> None:
    home = bench.runner.base / "home"
    aws = home / ".aws"
    aws.mkdir(exist_ok=True)
    (aws / "credentials").write_text("[default]\naws_secret_access_key = hunter2-home-secret\n")
    bench.runner.own(aws)
    try:
        steal = "cat ~/.aws/credentials > stolen.txt; true"
        run_command(bench, steal, "off")
        assert "hunter2-home-secret" in (bench.repo / "stolen.txt").read_text()
        (bench.repo / "stolen.txt").unlink()
        run_command(bench, steal, "on")
        assert "hunter2-home-secret" not in (bench.repo / "stolen.txt").read_text()
    finally:
        (aws / "credentials").unlink()


def test_a_credential_in_cogs_environment_never_reaches_the_command(bench: Bench) -> None:
    env = {"OPENAI_API_KEY": "sk-proj-env-secret-1234567890abcdef", "GH_TOKEN": "ghp_envsecret"}
    steal = "env > env.txt"
    plain = subprocess.run([*bench.runner.prefix(), "bash", "-c", steal], cwd=bench.repo, env=bench.runner.env(env))
    assert plain.returncode == 0 and "sk-proj-env-secret" in (bench.repo / "env.txt").read_text()  # the attack, undefended
    for sandbox in ("off", "on"):
        (bench.repo / "env.txt").unlink()
        run_command(bench, steal, sandbox, env)
        seen = (bench.repo / "env.txt").read_text()
        assert "sk-proj-env-secret" not in seen and "ghp_envsecret" not in seen, sandbox
