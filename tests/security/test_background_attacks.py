"""Background commands as an attacker uses them (issue 50, part 2), as root and as an unprivileged user:

1. a background job plants a setuid shell and ends (or is killed): the sweep that follows run_command
   also follows a job — without it (the job started with no sweep) the bits reach the host;
2. the session's shared loopback network is not the host's: a server on the host's loopback is out
   of reach of a background job and of the commands that share its network — with the network the
   person can give (``command_network``) the same probe reaches it, so the probe is a real one.
"""

from __future__ import annotations

import json
import socket
import stat
import sys
from pathlib import Path

import pytest

from .conftest import Runner, needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.slow]

PLANT = "cp /bin/sh ./rtsh && chmod 4755 ./rtsh && echo planted"

#: run as the runner's user: start PLANT as a background job, wait for its end, report the bits
JOB_SCRIPT = """
import json, sys, time
from pathlib import Path
from workspace_tools.shell.jobs import Jobs
from workspace_tools.shell.run_command import _bash, _setup
from workspace_tools.sandbox.environment import PassedEnv
from workspace_tools.sandbox.leftovers import strip_privileges
root, swept = Path.cwd(), sys.argv[2] == "swept"
prefix, env = _setup(root, "on", False, PassedEnv())
jobs = Jobs()
sweep = (lambda since: strip_privileges(root, (), since_ns=since)) if swept else None
job = jobs.start("plant", [*prefix, _bash(), "-c", sys.argv[1]], cwd=root, env=env, sandboxed=True, sweep=sweep)
deadline = time.monotonic() + 30
while job.running and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.2)
mode = (root / "rtsh").stat().st_mode if (root / "rtsh").exists() else 0
print(json.dumps({"setuid": bool(mode & 0o4000), "removed": [r.as_dict()["path"] for r in job.removed]}))
jobs.close()
"""

#: run as the runner's user: a background job and a later command, each probing the host's port
NET_SCRIPT = """
import json, sys, anyio
from workspace_tools import workspace_tools
from cogcli.contract.invoke import invoke_tool
port, network = int(sys.argv[1]), sys.argv[2] == "network"
tools = {t.name: t for t in workspace_tools(".", sandbox="on", command_network=network,
                                            only=["run_command", "command_output"])}
probe = f"python3 -c \\"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('REACHED')\\""
async def main():
    job = await invoke_tool(tools["run_command"], {"command": probe, "background": True})
    out = await invoke_tool(tools["command_output"], {"id": "job_1", "wait_s": 10})
    later = await invoke_tool(tools["run_command"], {"command": probe})
    return {"job": (job.details["output"] + out.details["output"]), "later": later.details["stdout"],
            "shared": job.details["shared_network"]}
print(json.dumps(anyio.run(main)))
tools["run_command"].close()
"""


def _last_json(out: object) -> dict:
    assert out.returncode == 0, out.stderr  # type: ignore[attr-defined]
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[attr-defined]


def test_a_setuid_file_a_background_job_plants_keeps_no_bit(runner: Runner) -> None:
    repo = runner.make_repo({"README.md": "x\n"})
    bare = _last_json(runner.run([runner.python, "-c", JOB_SCRIPT, PLANT, "bare"], repo))
    assert bare["setuid"] is True, "the sandbox alone did not keep the bit: this test would prove nothing"
    (repo / "rtsh").unlink()
    swept = _last_json(runner.run([runner.python, "-c", JOB_SCRIPT, PLANT, "swept"], repo))
    assert swept["setuid"] is False and swept["removed"] == ["rtsh"]
    assert stat.S_IMODE((repo / "rtsh").stat().st_mode) & 0o6000 == 0


def test_the_shared_network_does_not_reach_the_hosts_loopback(runner: Runner) -> None:
    repo = runner.make_repo({"README.md": "x\n"})
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    try:
        opened = _last_json(runner.run([runner.python, "-c", NET_SCRIPT, str(port), "network"], repo))
        closed = _last_json(runner.run([runner.python, "-c", NET_SCRIPT, str(port), "closed"], repo))
    finally:
        server.close()
    assert "REACHED" in opened["job"] and "REACHED" in opened["later"], "the probe cannot reach even with the network"
    assert closed["shared"] is True, "no shared network was made: the test would prove nothing about it"
    assert "REACHED" not in closed["job"] and "REACHED" not in closed["later"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
