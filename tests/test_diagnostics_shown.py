"""A change's new problems shown everywhere: under the edit's row in the terminal, in the tool
call's content for an editor (ACP), on the wire as ``details.diagnostics`` (what Studio and hooks read)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from cogcli.acp.mapping import EventMapper
from cogcli.contract.invoke import invoke_tool
from cogcli.wire.events import ToolCallEndEvent, ToolCallStartEvent, ToolResultEvent
from browser_helpers import browser  # noqa: F401 (fixture)
from conftest import init_git_repo
from render_helpers import event_line, render_events
from workspace_tools import workspace_tools
from workspace_tools.sandbox import bwrap

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="bubblewrap is not usable here")


async def edited(tmp_path: Path) -> tuple[Path, Any]:
    root = tmp_path / "app"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0"\n')
    (root / "app.py").write_text("def main() -> None:\n    print('hi')\n")
    init_git_repo(root)
    tools = {t.name: t for t in workspace_tools(root, diagnostics=True)}
    result = await invoke_tool(tools["edit_file"], {"path": "app.py", "old_text": "    print('hi')", "new_text": "    print(greeting)"},
                               call_id="c1")
    assert result.error is None, result.error
    return root, result


def events(result: Any) -> list[Any]:
    return [ToolCallStartEvent(id="c1", tool_name="edit_file"), ToolCallEndEvent(id="c1", tool_name="edit_file", arguments=result.arguments),
            ToolResultEvent.of(result)]


async def test_the_terminal_draws_the_new_problem_under_the_edit_row(tmp_path: Path) -> None:
    _, result = await edited(tmp_path)
    out = io.StringIO()
    render_events(events(result), out)
    lines = out.getvalue().splitlines()
    row = next(i for i, line in enumerate(lines) if line.lstrip("✓ ").startswith("Edit file"))
    assert "app.py · 1 new error" in lines[row]
    below = [line.strip() for line in lines[row:]]
    assert "1 new error" in below and "app.py:2: F821: Undefined name `greeting`" in below


async def test_an_editor_gets_them_as_the_tool_calls_content_and_the_wire_carries_them(tmp_path: Path) -> None:
    root, result = await edited(tmp_path)
    mapper = EventMapper(root, lambda: [])
    (*_, update) = [u for e in events(result) for u in mapper.updates(e)]
    texts = [item.content.text for item in update.content if getattr(item, "type", "") == "content"]
    assert "1 new error\napp.py:2: F821: Undefined name `greeting`" in texts
    wire = json.loads(event_line(ToolResultEvent.of(result)))
    found = wire["details"]["diagnostics"]  # what Studio draws in the edit's card and a PostToolUse hook receives
    assert [(d["file"], d["line"], d["rule"], d["source"]) for d in found["new"]] == [("app.py", 2, "F821", "ruff")]
    assert found["existing"] == 0 and found["fixed"] == [] and "ruff" in found["sources"]


@pytest.mark.slow  # a cog serve and a Chromium
def test_studio_shows_them_in_the_edits_card(make_repo: Any, tmp_path: Path, browser: Any) -> None:
    from browser_helpers import wait_for
    from serve_helpers import Served, write_cassette

    edit = {"path": "calc/ops.py", "old_text": "    return a * b", "new_text": "    return a * c"}
    model = write_cassette(tmp_path / "edit.jsonl", [{"text": "Editing.", "toolCalls": [{"id": "e1", "name": "edit_file", "arguments": edit}]},
                                                     {"text": "Done."}])
    with Served(make_repo("calc"), model=model) as srv:
        run = srv.start("Change mul", approval="auto")
        srv.events(run["runId"])
        browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
        wait_for(browser, lambda d: d.execute_script("return document.querySelectorAll('[data-block=diagnostics]').length === 1"))
        shown = browser.execute_script("return document.querySelector('[data-block=diagnostics]').innerText")
    assert shown.splitlines() == ["1 new error", "calc/ops.py:13: F821: Undefined name `c`"]


def hidden_ruff(tmp_path: Path) -> Path:
    """A project whose ``.venv/bin/ruff`` links to a folder the sandbox does not show (as a
    ``node_modules`` linked to a checkout elsewhere does): the checker cannot start in it."""
    import sys

    root = tmp_path / "app"
    (root / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0"\n')
    (root / "app" / "main.py").write_text("x = 1\n")
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\nversion = 3.11\n")
    (venv / "bin" / "python").symlink_to(sys.executable)
    elsewhere = tmp_path / "elsewhere"  # under /tmp, outside the workspace: hidden in the sandbox
    elsewhere.mkdir()
    (elsewhere / "ruff").write_text("#!/bin/sh\necho '[]'\n")
    (elsewhere / "ruff").chmod(0o755)
    (venv / "bin" / "ruff").symlink_to(elsewhere / "ruff")
    (root / ".gitignore").write_text(".venv/\n")
    return init_git_repo(root)


@needs_bwrap
async def test_a_checker_that_cannot_start_in_the_sandbox_is_told_once_a_session_and_drawn_once(tmp_path: Path) -> None:
    root = hidden_ruff(tmp_path)
    edits = [{"path": "app/main.py", "old_text": f"x = {n}", "new_text": f"x = {n + 1}"} for n in (1, 2)]

    async def session() -> list[Any]:
        tools = {t.name: t for t in workspace_tools(root, diagnostics=True, sandbox="on")}
        return [await invoke_tool(tools["edit_file"], args, call_id=f"c{n}") for n, args in enumerate(edits)]

    first, second = await session()
    said = first.result["diagnostics"]
    assert said.startswith("diagnostics: ruff not run: could not check (exit 127)") and "cannot start" in said
    assert len(said.splitlines()) == 1
    assert "diagnostics" not in second.result  # once a session, not on every edit
    assert [s["source"] for s in second.details["diagnostics"]["skipped"]] == ["ruff"]  # the details still say it
    out = io.StringIO()
    render_events([e for n, r in enumerate((first, second)) for e in (
        ToolCallStartEvent(id=f"c{n}", tool_name="edit_file"),
        ToolCallEndEvent(id=f"c{n}", tool_name="edit_file", arguments=r.arguments), ToolResultEvent.of(r))], out)
    lines = out.getvalue().splitlines()
    drawn = [i for i, line in enumerate(lines) if "ruff not run: could not check (exit 127)" in line]
    rows = [i for i, line in enumerate(lines) if line.startswith("Edit file")]
    assert len(drawn) == 1 and rows[0] < drawn[0] < rows[1], lines  # under the first edit's row (after its diff), once
    (root / "app" / "main.py").write_text("x = 1\n")
    again, _ = await session()  # a new session: told again
    assert again.result["diagnostics"].startswith("diagnostics: ruff not run")
