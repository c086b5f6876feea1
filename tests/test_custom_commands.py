"""Custom commands and skills: found in .agents/ and the person's config folder, expanded in
`cog edit "/NAME args"`, listed and loaded by the model; the workspace's files are hostile text
(no link followed, bounded, names checked, never a built-in's name, never a host cassette)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import cog_env, repo_with, run_cog
from cogcli.agent_tools.load_skill import load_skill_tool
from cogcli.project.custom_commands import builtin_names, command_model, expand_instruction, load_commands, parse_command_line
from cogcli.contract.errors import ConfigError
from cogcli.contract.invoke import invoke_tool
from cogcli.project.skills import load_skills


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_arguments_expand_and_front_matter_gives_description_model_and_hint(tmp_path: Path) -> None:
    _write(tmp_path, {
        ".agents/commands/fix.md": '---\ndescription: "Fix an issue"\nmodel: openai:gpt-4o\nargument-hint: ISSUE [FILE]\n---\nFix issue #$1 in $2.\nAll: $ARGUMENTS\n',
        ".agents/commands/plain.md": "# Tidy up\nTidy the code.\n",
    })
    commands = load_commands(tmp_path, builtin_names(), environ={})
    fix = commands.get("/FIX")
    assert fix is not None and (fix.description, fix.model, fix.hint, fix.source) == ("Fix an issue", "openai:gpt-4o", "ISSUE [FILE]", "workspace")
    assert commands.resolve('/fix 42 "src/a b.py"').instruction == 'Fix issue #42 in src/a b.py.\nAll: 42 "src/a b.py"'
    assert commands.resolve("/fix").instruction == "Fix issue # in .\nAll:"
    plain = commands.resolve("/plain in calc/")
    assert plain.instruction == "# Tidy up\nTidy the code.\n\nin calc/" and plain.command.description == "Tidy up"
    assert parse_command_line("/usr/bin/env is missing") is None and parse_command_line("fix /x") is None


def test_builtins_come_first_and_the_persons_command_wins_over_the_workspaces(tmp_path: Path) -> None:
    home = tmp_path / "config"
    repo = tmp_path / "repo"
    _write(home, {"cog/commands/review.md": "Mine: review.\n", "cog/commands/compact.md": "not a built-in's\n"})
    _write(repo, {
        ".agents/commands/review.md": "Theirs: review.\n", ".agents/commands/undo.md": "rm -rf\n",
        ".agents/commands/plan.md": "x\n", ".agents/commands/bad name.md": "x\n", ".agents/commands/.hidden.md": "x\n",
    })
    commands = load_commands(repo, builtin_names(), environ={"XDG_CONFIG_HOME": str(home)})
    assert sorted(c.name for c in commands) == ["review"]
    assert commands.get("review").body == "Mine: review.\n"
    notes = "\n".join(commands.notes)
    for left in ("undo.md left out: /undo is a built-in", "plan.md left out: /plan is a built-in", "compact.md left out", "bad name.md left out", "review.md left out: /review is ~"):
        assert left in notes.replace(str(home), "~"), notes


@pytest.mark.parametrize("where", ["folder", "file", "agents"])
def test_a_link_in_the_workspaces_agents_folder_is_never_followed(tmp_path: Path, where: str) -> None:
    outside = tmp_path / "outside"
    _write(outside, {"secret.md": "TOKEN=hunter2\n", "commands/steal.md": "TOKEN=hunter2\n"})
    repo = tmp_path / "repo"
    repo.mkdir()
    if where == "file":
        (repo / ".agents/commands").mkdir(parents=True)
        os.symlink(outside / "secret.md", repo / ".agents/commands/steal.md")
    elif where == "folder":
        (repo / ".agents").mkdir()
        os.symlink(outside / "commands", repo / ".agents/commands")
    else:
        os.symlink(outside, repo / ".agents")
    commands = load_commands(repo, builtin_names(), environ={})
    assert len(commands) == 0
    assert any("link" in n for n in commands.notes)


def test_files_are_bounded_and_must_be_text(tmp_path: Path) -> None:
    (tmp_path / ".agents/commands").mkdir(parents=True)
    (tmp_path / ".agents/commands/big.md").write_text("x" * (65 * 1024))
    (tmp_path / ".agents/commands/bin.md").write_bytes(b"\xff\xfe\x00")
    os.mkfifo(tmp_path / ".agents/commands/fifo.md")  # never hangs the read
    commands = load_commands(tmp_path, builtin_names(), environ={})
    assert len(commands) == 0
    assert any("over 64 KiB" in n for n in commands.notes) and any("not UTF-8" in n for n in commands.notes)


def test_a_command_left_out_says_why_when_it_is_called(tmp_path: Path) -> None:
    (tmp_path / ".agents/commands").mkdir(parents=True)
    (tmp_path / ".agents/commands/Big.md").write_text("x" * (65 * 1024))
    with pytest.raises(ConfigError) as raised:
        expand_instruction("/big now", tmp_path)
    assert "unknown command /big" in str(raised.value)
    assert ".agents/commands/Big.md not read: over 64 KiB" in str(raised.value)  # not just "unknown"


def test_a_workspace_commands_model_cannot_pick_a_host_cassette(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COG_MODEL", raising=False)
    _write(tmp_path, {".agents/commands/x.md": "---\nmodel: replay:/etc/passwd\n---\ngo\n", ".agents/commands/y.md": "---\nmodel: replay:c.jsonl\n---\ngo\n"})
    with pytest.raises(ConfigError, match="not in the workspace"):
        expand_instruction("/x", tmp_path)
    assert expand_instruction("/x", tmp_path, flag_model="openai:gpt-4o")[1] is None  # --model wins: nothing read
    assert expand_instruction("/y", tmp_path)[1] == f"replay:{tmp_path.resolve() / 'c.jsonl'}"
    monkeypatch.setenv("COG_MODEL", "openai:gpt-4o")
    assert command_model(load_commands(tmp_path).resolve("/y"), tmp_path, None) is None  # the person's COG_MODEL wins


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_cog_edit_runs_a_command_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {
        "a.py": "x = 1\n",
        ".agents/commands/say.md": "---\nmodel: replay:say.jsonl\n---\nSay $ARGUMENTS.\n",
        "say.jsonl": json.dumps({"type": "cassette", "schemaVersion": 1, "model": "t"}) + "\n" + json.dumps({"type": "turn", "text": "hello"}) + "\n",
    })
    done = run_cog(["edit", "--json", "/say hello world"], repo)
    assert done.returncode == 0, done.stderr
    events = _events(done.stdout)
    assert any(e["type"] == "text-delta" for e in events)
    listed = run_cog(["thread", "list"], repo)
    assert "Say hello world." in listed.stdout  # the thread's title is the expanded instruction
    unknown = run_cog(["edit", "/nosuch thing"], repo, env=cog_env({"COG_MODEL": "replay:say.jsonl"}))
    assert unknown.returncode == 2
    assert "unknown command /nosuch (custom commands: /say" in unknown.stderr


def test_skills_are_listed_to_the_model_and_loaded_by_a_read_only_tool(tmp_path: Path) -> None:
    import anyio

    home = tmp_path / "config"
    repo = tmp_path / "repo"
    _write(home, {"cog/skills/release/SKILL.md": "---\nname: release\ndescription: Cut a release\n---\nBump, tag, push.\n", "cog/skills/release/notes/checklist.md": "- changelog\n"})
    _write(repo, {
        ".agents/skills/db/SKILL.md": "---\ndescription: Migrate the database\n---\nRun alembic. api_key=sk-abcdefghijklmnopqrstuvwxyz0123456789\n",
        ".agents/skills/release/SKILL.md": "---\ndescription: theirs\n---\nPush to prod.\n",
        ".agents/skills/nodesc/SKILL.md": "no front matter\n",
    })
    skills = load_skills(repo, environ={"XDG_CONFIG_HOME": str(home)})
    assert sorted(skills.skills) == ["db", "release"] and skills.get("release").source == "personal"
    section = skills.prompt_section()
    assert "- release (yours): Cut a release" in section and "- db (repository): Migrate the database" in section
    assert any("nodesc/SKILL.md left out" in n for n in skills.notes)
    tool = load_skill_tool(skills)
    assert tool.read_only and tool.kind == "read"
    result = anyio.run(lambda: invoke_tool(tool, {"name": "db"}))
    assert "Run alembic." in result.result and "sk-abcdef" not in result.result  # redacted like any result
    assert result.presentation.label == "Load skill" and result.presentation.detail == "db"
    mine = anyio.run(lambda: invoke_tool(tool, {"name": "release"}))
    assert "notes/checklist.md" in mine.result
    assert anyio.run(lambda: invoke_tool(tool, {"name": "release", "file": "notes/checklist.md"})).result == "- changelog\n"
    escape = anyio.run(lambda: invoke_tool(tool, {"name": "release", "file": "../../../../etc/passwd"}))
    assert escape.error_code == "FILE_NOT_FOUND"
    assert anyio.run(lambda: invoke_tool(tool, {"name": "nope"})).error_code == "INVALID_ARGUMENTS"
