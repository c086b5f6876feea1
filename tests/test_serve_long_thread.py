"""Studio with a long thread (issue 53) in a real headless Chromium: a stored thread of 2,000 calls
draws every row (in chunks the browser lays out only near the screen, drawn a slice a frame), its
text stays text, a new live row appears under them, and the bottom of the page is reachable.
Not timed: benchmarks/studio_rows.py measures the frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import browser, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served

from cogcli.models.base import ToolCallRequest
from cogcli.threads.entries import AssistantEntry, ModelToolResult, RunEndEntry, ToolResultEntry, ToolResultMetadata, UserEntry
from cogcli.threads.store import default_store

ROWS = 2000
HOSTILE = '<img src=x onerror="window.pwned = 1">'


def long_thread(repo: Path, rows: int = ROWS) -> str:
    """A thread of ``rows`` read_file calls written to the workspace's real store (as a run records
    them: an assistant turn, then the call's result with its presentation)."""
    entries: list[Any] = [UserEntry(content="Read everything", message_id="msg_long")]
    for i in range(rows):
        path = f"src/{HOSTILE if i == 7 else f'f{i}.py'}"
        entries.append(AssistantEntry(content=f"Step {i}.", tool_calls=[ToolCallRequest(id=f"c{i}", name="read_file", arguments={"path": path})]))
        entries.append(ToolResultEntry(
            tool_results=[ModelToolResult(call_id=f"c{i}", name="read_file", content=f"line {i}\n")],
            metadata=ToolResultMetadata(content=f"line {i}\n", arguments={"path": path}, duration_ms=2,
                                        presentation={"label": "Read file", "icon": "file", "detail": path}),
        ))
    entries.append(RunEndEntry(status="completed", steps=rows, message_id="msg_long"))
    with default_store(repo) as store:
        info = store.create_thread(title="Read everything")
        store.append(info.id, entries, status="completed")
    return info.id


def test_a_2000_row_thread_draws_every_row_and_a_new_row_appears(make_repo, browser: Any) -> None:
    repo = make_repo("calc")
    thread = long_thread(repo)
    with Served(repo) as srv:
        browser.get(f"{srv.base}/threads/{thread}?token={srv.token}")
        wait_for(browser, lambda d: d.execute_script(
            "return !!window.cogView && !window.cogView.drawing && !!document.getElementById('newrun')"), timeout=180)
        drawn = browser.execute_script("""
            const rows = [...document.querySelectorAll('section.call')];
            return { rows: rows.length, labelled: rows.filter((r) => r.querySelector('.label').textContent === 'Read file').length,
                     ok: rows.filter((r) => r.dataset.status === 'ok').length,
                     chunks: document.querySelectorAll('#steps > .steps.chunk').length,
                     hostile: document.querySelector('section.call[data-call-id="c7"] .detail').textContent,
                     last: rows[rows.length - 1].dataset.callId, finish: document.querySelectorAll('[data-block=finish]').length };""")
        assert drawn["rows"] == ROWS and drawn["labelled"] == ROWS and drawn["ok"] == ROWS  # every row drawn, with its result
        assert drawn["last"] == f"c{ROWS - 1}" and drawn["finish"] == 1
        assert drawn["chunks"] > 10  # in chunks, each skipped by layout while off screen
        assert drawn["hostile"] == f"src/{HOSTILE}"  # shown as text
        assert browser.execute_script("return window.pwned") is None

        # a new live row goes under the last one and is drawn
        browser.execute_script("""
            const view = window.cogView;
            view.live = true;
            view.handle({type: 'tool-call-start', id: 'new1', toolName: 'read_file', presentation: {label: 'Read file', icon: 'file', detail: 'src/new.py'}});
            view.handle({type: 'tool-call-end', id: 'new1', toolName: 'read_file', arguments: {path: 'src/new.py'}});""")
        wait_for(browser, lambda d: d.execute_script(
            "const r = document.querySelector('section.call[data-call-id=\"new1\"]'); return !!r && r.querySelector('.detail').textContent === 'src/new.py'"))
        order = browser.execute_script("return [...document.querySelectorAll('section.call')].slice(-2).map((r) => r.dataset.callId)")
        assert order == [f"c{ROWS - 1}", "new1"]

        # the bottom of the page is reachable and shows the last rows
        browser.execute_script("document.querySelector('section.call[data-call-id=\"new1\"]').scrollIntoView({block: 'center'})")
        wait_for(browser, lambda d: d.execute_script("""
            const r = document.querySelector('section.call[data-call-id="new1"]').getBoundingClientRect();
            return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight;"""))


def test_a_thread_of_150_calls_is_drawn_as_a_short_one_once_all_of_it_is_in(make_repo, browser: Any) -> None:
    """The events come a part at a time (cogcli/server/thread_stream.py); a thread at the line, here
    with a text before each call so that it comes in two parts, waits for all of them and is drawn
    as before: one list, no chunks, every row and text in order, the form under them."""
    from cogcli.server import thread_stream

    repo = make_repo("calc")
    entries: list[Any] = [UserEntry(content="Read a few", message_id="msg_few")]
    for i in range(150):
        entries.append(AssistantEntry(content=f"Looking at {i}."))
        entries.append(AssistantEntry(content="", tool_calls=[ToolCallRequest(id=f"c{i}", name="read_file", arguments={"path": f"f{i}.py"})]))
        entries.append(ToolResultEntry(tool_results=[ModelToolResult(call_id=f"c{i}", name="read_file", content="x\n")],
                                       metadata=ToolResultMetadata(content="x\n", presentation={"label": "Read file", "icon": "file", "detail": f"f{i}.py"})))
    entries.append(RunEndEntry(status="completed", steps=150, message_id="msg_few"))
    assert thread_stream.FIRST_PART < len(entries) < thread_stream.FIRST_PART + thread_stream.PART  # two parts
    with default_store(repo) as store:
        thread = store.create_thread(title="Read a few").id
        store.append(thread, entries, status="completed")
    with Served(repo) as srv:
        browser.get(f"{srv.base}/threads/{thread}?token={srv.token}")
        wait_for(browser, lambda d: d.execute_script("return !!document.getElementById('newrun')"), timeout=120)
        drawn = browser.execute_script("""
            const rows = [...document.querySelectorAll('section.call')];
            return { direct: document.querySelectorAll('#steps > section.call').length, rows: rows.length,
                     chunks: document.querySelectorAll('.steps.chunk').length, long: document.body.classList.contains('long-thread'),
                     drawing: !!window.cogView.drawing, last: rows.pop().dataset.callId,
                     texts: document.getElementById('steps').textContent.split('Looking at').length - 1 };""")
    assert drawn == {"direct": 150, "rows": 150, "chunks": 0, "long": False, "drawing": False, "last": "c149", "texts": 150}
