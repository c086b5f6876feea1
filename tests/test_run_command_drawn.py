"""run_command's live output in each front end (issue 38): the terminal draws the last lines
under the row and a log every line once; ACP sends an ``execute`` call with the output tail as a
console block; Studio draws a terminal block in a real headless browser."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from browser_helpers import browser, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette

from cogcli.acp.mapping import EventMapper
from cogcli.wire.events import BaseEvent, ToolCallEndEvent, ToolCallStartEvent, ToolResultEvent, ToolUpdateEvent
from cogcli.render.text import TextRenderer
from workspace_tools.workspace.paths import Workspace
from workspace_tools.shell.run_command import run_command_tool

from test_render_live import FakeTTY, Ticks

PRESENTATION = {"label": "Run", "icon": "terminal", "detail": "make"}


def a_command(lines: list[list[str]]) -> list[BaseEvent]:
    events: list[BaseEvent] = [ToolCallStartEvent(id="c1", tool_name="run_command", presentation=PRESENTATION),
                               ToolCallEndEvent(id="c1", tool_name="run_command", arguments={"command": "make"})]
    first = 1
    for batch in lines:
        events.append(ToolUpdateEvent(tool_call_id="c1", content="\n".join(batch), details={"line": first, "lines": len(batch)},
                                       presentation=PRESENTATION))
        first += len(batch)
    events.append(ToolResultEvent(id="c1", tool_call_id="c1", tool_name="run_command", result="exit code 0", presentation=PRESENTATION,
                                  details={"command": "make", "exit_code": 0, "stdout": "", "stderr": ""}))
    return events


def test_a_terminal_shows_the_last_lines_under_the_row_and_a_log_every_line() -> None:
    events = a_command([[f"cc -c f{i}.c" for i in range(1, 9)], ["ld -o app", "\x1b[31mdone\u202e"]])
    out = FakeTTY()
    renderer = TextRenderer(out, clock=Ticks(), color=True, width=60)
    for e in events:
        renderer.handle(e)
    renderer.close()
    text = out.getvalue()
    block = "\x1b[2m  … Run  make\n  │ cc -c f3.c\n  │ cc -c f4.c\n  │ cc -c f5.c\n  │ cc -c f6.c\n  │ cc -c f7.c\n  │ cc -c f8.c\x1b[0m"
    assert block in text  # the row and the last six lines
    assert "\r\x1b[2K" + "\x1b[1A\x1b[2K" * 6 in text  # erased whole before the next draw
    assert "  │ \\x1b[31mdone\\u202e" in text  # escaped, never interpreted
    assert text.rsplit("\x1b[1A\x1b[2K", 1)[1] == "\x1b[1mRun\x1b[0m  make\n"  # the row alone once the command ended

    log = io.StringIO()
    renderer = TextRenderer(log, tty=False, color=False)
    for e in events:
        renderer.handle(e)
    renderer.close()
    assert [line for line in log.getvalue().splitlines() if line.startswith("  │ ")] == [f"  │ cc -c f{i}.c" for i in range(1, 9)] + ["  │ ld -o app", "  │ \\x1b[31mdone\\u202e"]


def test_acp_draws_an_execute_call_with_its_output_as_a_console(tmp_path: Path) -> None:
    tool = run_command_tool(Workspace(tmp_path), sandbox="off")
    mapper = EventMapper(tmp_path, lambda: [tool])
    updates = [u for e in a_command([["one", "two"], ["three"]]) for u in mapper.updates(e)]
    start = next(u for u in updates if getattr(u, "kind", None))
    assert (start.kind, start.title) == ("execute", "Run · make")
    texts = [u.content[0].content.text for u in updates if getattr(u, "status", None) == "in_progress"]
    assert texts == ["```console\none\ntwo\n```", "```console\none\ntwo\nthree\n```"]  # the whole tail so far, each time


def test_studio_draws_a_running_commands_output_as_a_terminal(make_repo, tmp_path: Path, browser: Any) -> None:
    repo = make_repo("calc")
    model = write_cassette(tmp_path / "hi.jsonl", [{"text": "Hello."}])
    with Served(repo, model=model) as srv:
        run = srv.start("Say hello", approval="auto")
        srv.events(run["runId"])
        browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
        wait_for(browser, lambda d: d.execute_script("return !!window.cogView && document.querySelectorAll('[data-block=finish]').length === 1"))
        shown = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const view = window.cogView;
            view.live = true;
            const p = {label: 'Run', icon: 'terminal', detail: 'make'};
            view.handle({type: 'tool-call-start', id: 'r1', toolName: 'run_command', presentation: p});
            view.handle({type: 'tool-call-end', id: 'r1', toolName: 'run_command', arguments: {command: 'make'}});
            view.handle({type: 'tool-update', toolCallId: 'r1', content: 'cc -c a.c\\ncc -c b.c', details: {line: 1, lines: 2}, presentation: p});
            view.handle({type: 'tool-update', toolCallId: 'r1', content: '<b>ld</b> -o app', details: {line: 3, lines: 1}, presentation: p});
            requestAnimationFrame(() => requestAnimationFrame(() => {
              const term = document.querySelector('section.call[data-call-id="r1"] [data-block=terminal]');
              done({text: term && term.textContent, bold: !!(term && term.querySelector('b'))});
            }));
        """)
    assert shown["text"] == "cc -c a.c\ncc -c b.c\n<b>ld</b> -o app" and not shown["bold"]
