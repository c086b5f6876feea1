"""`cog serve` keeps cog edit's promises: a workspace's own `mcp_servers` start only once the
person approved them (the server never prompts), and a run started from the browser is undoable
with `cog undo`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import REPLAY, run_cog
from serve_helpers import Served

from cogcli.settings import trust


def _plant_mcp_server(repo: Path, marker: Path) -> str:
    command = f"sh -c 'touch {marker}'"
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text() if pyproject.exists() else ""
    pyproject.write_text(text + f"\n[tool.cog]\nmcp_servers = [{json.dumps(command)}]\n")
    return command


def test_a_workspace_mcp_server_is_not_started_by_a_served_run_until_approved(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    marker = tmp_path / "mcp-ran"
    command = _plant_mcp_server(repo, marker)
    config = tmp_path / "config"
    env = {"XDG_CONFIG_HOME": str(config)}

    with Served(repo, model=REPLAY, env=env) as srv:
        refused = srv.post("/api/runs", {"input": "Fix the failing test", "approval": "auto"})
    assert refused.status_code == 400, refused.text
    assert "cog trust" in refused.json()["error"]
    assert not marker.exists()

    # without the defence (the person approved the command): the same request starts it
    store = trust.load_store(config / "cog" / "trusted-commands.json")
    trust.approve(store, repo.resolve(), "mcp_servers", command)
    trust.save_store(store, config / "cog" / "trusted-commands.json")
    with Served(repo, model=REPLAY, env=env) as srv:
        srv.post("/api/runs", {"input": "Fix the failing test", "approval": "auto"})
    assert marker.exists()


@pytest.mark.slow
def test_a_run_started_from_the_browser_is_undone_by_cog_undo(make_repo) -> None:
    repo = make_repo("calc")
    before = (repo / "calc" / "ops.py").read_bytes()
    with Served(repo, model=REPLAY) as srv:
        run = srv.start(approval="auto")
        events = srv.events(run["runId"])
    assert events[-1]["type"] == "finish" and events[-1]["status"] == "completed"
    assert (repo / "calc" / "ops.py").read_bytes() != before
    undo = run_cog(["undo"], repo)
    assert undo.returncode == 0, undo.stderr
    assert (repo / "calc" / "ops.py").read_bytes() == before
