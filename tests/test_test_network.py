"""Tests and commands that need the network (issue 49). In the sandbox npm, pip and cargo are told
they are offline, so a ``posttest`` running ``npx missing-package`` fails in seconds, not after npm's
70 s of retries; the result says a step needed the network and how to allow it. ``--test-network``
gives the tests the host's network — the person's setting only: the workspace's ``cog.toml`` or
``[tool.cog]`` saying ``test_network = true`` changes nothing."""

from __future__ import annotations

import json
import shutil
import socket
import time
from pathlib import Path

import pytest

from cli_helpers import run_cog
from conftest import init_git_repo
from workspace_tools.sandbox.bwrap import unusable_reason
from workspace_tools.sandbox.environment import OFFLINE_ENV, PassedEnv

needs_bwrap = pytest.mark.skipif(bool(unusable_reason()), reason="bubblewrap cannot make a sandbox here")
needs_npm = pytest.mark.skipif(shutil.which("npx") is None or shutil.which("node") is None, reason="Node.js and npm are not installed")


def make_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return init_git_repo(root)


def result_of(stdout: str) -> dict:
    return [json.loads(line) for line in stdout.splitlines() if '"tool-result"' in line][-1]


def test_the_package_tools_are_told_they_are_offline_only_in_a_sandbox_without_the_network() -> None:
    offline = PassedEnv().child_env({}, True)
    assert {k: offline[k] for k in OFFLINE_ENV} == OFFLINE_ENV
    assert offline["npm_config_offline"] == "true" and offline["PIP_NO_INDEX"] == "1" and offline["CARGO_NET_OFFLINE"] == "true"
    for online in (PassedEnv(network=True).child_env({}, True), PassedEnv().child_env({}, False),
                   PassedEnv().child_env({}, True, network=True)):  # --test-network, --sandbox off, --setup-network
        assert not set(OFFLINE_ENV) & set(online)
    assert PassedEnv().child_env({"PIP_NO_INDEX": "0"}, True)["PIP_NO_INDEX"] == "0"  # a runner's own setting wins


@needs_bwrap
@needs_npm
@pytest.mark.slow
def test_a_posttest_that_needs_the_network_fails_in_seconds_and_says_how_to_allow_it(tmp_path: Path) -> None:
    """npm retried a name that does not resolve for about 70 s inside the sandbox (measured: 72.4 s
    for this project before; 2.5 s after)."""
    repo = make_repo(tmp_path / "repo", {
        "package.json": json.dumps({"name": "netneed", "version": "1.0.0",
                                    "scripts": {"test": "node --test", "posttest": "npx cog-no-such-package-xyz"}}),
        "test/a.test.js": 'const t = require("node:test");\nt.test("a", () => {});\n',
    })
    started = time.monotonic()
    done = run_cog(["tool", "run_tests", "--json"], repo)
    took = time.monotonic() - started
    details = result_of(done.stdout)["details"]
    assert details["sandbox"] == "bwrap" and details["outcome"] == "failed", details
    assert "ENOTCACHED" in details["output_tail"]  # npm was told it is offline: it did not retry
    assert took < 30, took
    note = details["sandbox_note"]
    assert "a step needed the network" in note and "--test-network" in note


@needs_bwrap
@needs_npm
def test_run_command_npx_offline_stops_at_once_and_names_command_network(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    started = time.monotonic()
    done = run_cog(["tool", "run_command", "command=npx -y cog-no-such-package-xyz", "--json"], repo)
    took = time.monotonic() - started
    result = result_of(done.stdout)
    assert result["details"]["exit_code"] != 0 and took < 30, (took, result)
    assert "The command needed the network" in result["result"] and "--command-network" in result["result"]


NETWORK_PROBE = """\
import os
import socket


def test_probe():
    names = sorted(name for _, name in socket.if_nameindex())
    offline = (os.environ.get("npm_config_offline"), os.environ.get("PIP_NO_INDEX"))
    assert (names, offline) == (["lo"], ("true", "1")), (names, offline)
"""


@needs_bwrap
def test_only_the_person_gives_the_tests_the_network_never_the_workspace(tmp_path: Path) -> None:
    """A workspace that writes ``test_network = true`` (cog.toml, [tool.cog]) still runs its tests
    with loopback alone; ``--test-network`` / ``COG_TEST_NETWORK=1`` (the person's) gives them the host's."""
    host_interfaces = sorted(name for _, name in socket.if_nameindex())
    repo = make_repo(tmp_path / "repo", {
        "cog.toml": "test_network = true\n",
        "pyproject.toml": "[project]\nname = 'probe'\nversion = '0'\n[tool.cog]\ntest_network = true\n",
        "tests/test_probe.py": NETWORK_PROBE,
    })
    asked = run_cog(["tool", "run_tests", "--json"], repo)
    details = result_of(asked.stdout)["details"]
    assert (details["sandbox"], details["outcome"], details["passed"]) == ("bwrap", "passed", 1), details
    if host_interfaces == ["lo"]:
        pytest.skip("this host has no interface but loopback: the network given cannot be told from none")
    for given in (["--test-network"], []):
        done = run_cog(["tool", "run_tests", "--json", *given], repo, env={} if given else {"COG_TEST_NETWORK": "1"})
        details = result_of(done.stdout)["details"]
        assert (details["sandbox"], details["outcome"]) == ("bwrap", "failed"), details
        text = details["failures"][0]["text"]
        assert "'lo'" in text and any(f"'{name}'" in text for name in host_interfaces if name != "lo"), text
        assert "(None, None)" in text  # with the network, nobody is told they are offline
