"""A named agent whose ``tools:`` names a tool the session does not have is reported when the agents
are loaded at the session's start — a warning naming its file and the tool, with a did-you-mean —
not only when a ``task`` call runs as it and fails (issue 50's gap)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_cog
from serve_helpers import write_cassette

from cogcli.session import Session
from cogcli.settings.load import load_settings
from cli_helpers import REPLAY


def agents(repo: Path) -> None:
    folder = repo / ".agents" / "agents"
    folder.mkdir(parents=True)
    (folder / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews code\ntools: reed_file, search_text, frobnicate\n---\nReview.\n")
    (folder / "fixer.md").write_text("---\nname: fixer\ndescription: Fixes code\ntools: read_file, edit_file, run_tests\n---\nFix.\n")


def test_a_bad_tool_is_a_warning_at_the_sessions_start_naming_the_file_and_a_guess(
        make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo("calc")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    agents(repo)
    notes: list[str] = []
    with Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False, on_note=notes.append):
        pass
    warned = [n for n in notes if n.startswith("warning:")]
    assert warned == [
        "warning: .agents/agents/reviewer.md: its tools name 'reed_file', which is no tool here (did you mean read_file?); "
        "a task run as reviewer fails until it is fixed",
        "warning: .agents/agents/reviewer.md: its tools name 'frobnicate', which is no tool here; a task run as reviewer fails until it is fixed",
    ], notes  # the good agent (fixer) says nothing


def test_cog_edit_says_it_on_stderr_before_any_task_call(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    agents(repo)
    model = write_cassette(tmp_path / "c.jsonl", [{"text": "Nothing to do."}])
    out = run_cog(["edit", "--yes", "--sandbox", "off", "--model", model, "look"], repo, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert out.returncode == 0, out.stderr
    assert "warning: .agents/agents/reviewer.md: its tools name 'reed_file', which is no tool here (did you mean read_file?)" in out.stderr


def test_cog_config_lists_the_agents_with_the_same_warning(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    import json

    repo = make_repo("calc")
    agents(repo)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    out = run_cog(["config"], repo, env=env)
    assert out.returncode == 0, out.stderr
    listed = out.stdout.split("agents (task's agent=NAME; docs/subagents.md):\n", 1)[1].splitlines()
    assert listed[:2] == ["  fixer  .agents/agents/fixer.md  Fixes code", "  reviewer  .agents/agents/reviewer.md  Reviews code"]
    assert any("its tools name 'reed_file', which is no tool here (did you mean read_file?)" in line for line in listed[2:])
    data = json.loads(run_cog(["config", "--json"], repo, env=env).stdout)
    assert [a["name"] for a in data["agents"]] == ["fixer", "reviewer"] and data["agents"][1]["tools"] == ["reed_file", "search_text", "frobnicate"]
    assert len([n for n in data["agent_notes"] if n.startswith("warning: .agents/agents/reviewer.md")]) == 2


def test_cog_config_without_agents_says_none(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    out = run_cog(["config"], make_repo("calc"), env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert out.returncode == 0 and "agents: none (.agents/agents/NAME.md, docs/subagents.md)" in out.stdout
