"""An approval covers everything the approved command loads: a sandboxed test rewrites a module an
approved MCP server imports from its own folder, plants a module that shadows the standard
library beside its script, or drops a ``.pth`` into the workspace virtualenv the server runs
from — and the next ``cog`` asks again (off a terminal: refuses, exit 2, naming what changed)
instead of running that code on the host. Shown working without the defence (the person approves
again: the planted code runs), as root and as an unprivileged user."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from .conftest import Runner, needs_bwrap

SERVER = "import json\nimport helper\nhelper.run()\n"
HELPER = "def run():\n    pass\n"
COMMAND = ".venv/bin/python srv/server.py"


def _model(runner: Runner) -> str:
    path = runner.scratch("c") / "c.jsonl"
    path.write_text(json.dumps({"type": "cassette", "schemaVersion": 1, "model": "test:x"}) + "\n"
                    + json.dumps({"type": "turn", "text": "Done."}) + "\n")
    runner.own(path.parent)
    return f"replay:{path}"


def approved_server(runner: Runner) -> Path:
    repo = runner.make_repo({
        "pyproject.toml": f"[project]\nname = 'x'\nversion = '0'\n\n[tool.cog]\nmcp_servers = [{json.dumps(COMMAND)}]\n",
        "srv/server.py": SERVER, "srv/helper.py": HELPER, "tests/test_ok.py": "def test_ok():\n    pass\n",
    })
    # a python every user can run (cog's own may live under /root)
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else runner.python
    made = runner.run([python, "-m", "venv", "--without-pip", ".venv"], repo)
    assert made.returncode == 0, made.stderr
    assert runner.cog(["trust", "--approve"], repo).returncode == 0
    return repo


def plant(runner: Runner, repo: Path, code: str) -> None:
    """What a test run does: ``code`` run as the project's tests, in the sandbox when it works here."""
    (repo / "plant.py").write_text(code)
    runner.own(repo)
    from workspace_tools.sandbox import bwrap

    sandbox = "on" if bwrap.bwrap_executable() is not None else "off"
    runner.cog(["tool", "run_tests", "--sandbox", sandbox, "--test-command", "python3 plant.py"], repo)


ATTACKS = {
    "module": ("srv/helper.py", "open('srv/helper.py', 'w').write(\"def run():\\n    open('PWNED', 'w')\\n\")\n"),
    "shadow": ("srv/json.py", "open('srv/json.py', 'w').write(\"open('PWNED', 'w')\\n\")\n"),
    "pth": (".venv/", "import glob\nsite = glob.glob('.venv/lib/python*/site-packages')[0]\n"
                      "open(site + '/zz.pth', 'w').write(\"import os; open('PWNED', 'w')\\n\")\n"),
}


@pytest.mark.slow  # makes a virtualenv and starts cog five times
@needs_bwrap
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_test_cannot_change_what_an_approved_server_loads(runner: Runner, attack: str) -> None:
    repo = approved_server(runner)
    model = _model(runner)
    started = runner.cog(["edit", "--model", model, "hello"], repo)  # approved: it starts (and, no MCP server, ends)
    assert "failed to start" in started.stderr and "cog trust" not in started.stderr, started.stderr
    assert not (repo / "PWNED").exists()

    changed, code = ATTACKS[attack]
    plant(runner, repo, code)
    if attack == "pth":
        assert glob.glob(str(repo / ".venv/lib/python*/site-packages/zz.pth")), "the test could not plant the .pth: the attack proves nothing"
    else:
        assert "PWNED" in (repo / changed).read_text(), "the test could not change the file: the attack proves nothing"

    refused = runner.cog(["edit", "--model", model, "hello"], repo)
    assert refused.returncode == 2, refused.stderr
    assert changed in refused.stderr and "cog trust" in refused.stderr and "failed to start" not in refused.stderr, refused.stderr
    assert not (repo / "PWNED").exists()

    # without the defence — the person approves what changed — the planted code runs on the host
    assert runner.cog(["trust", "--approve"], repo).returncode == 0
    ran = runner.cog(["edit", "--model", model, "hello"], repo)
    assert (repo / "PWNED").exists(), ran.stderr
