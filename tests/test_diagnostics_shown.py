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

pytestmark = pytest.mark.anyio


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
