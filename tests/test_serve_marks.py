"""Studio in a real headless Chromium: an approval card shows what the call would do (the diff of
``approval.preview``, the command of a test run, else the arguments) with Approve / Deny below it;
a running test run's row keeps the call's own detail while its progress line names the test that
just ended; the status mark follows the outcome (failing tests and failed edits are no green
tick); a thread whose last run was undone says so in the list and in ``GET /api/threads``.

The event-driven tests feed a live view the wire events a run sends (``window.cogView.handle``),
exactly as its event stream would; the undo test goes through a real run, ``cog undo`` and the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import browser, screenshot, wait_for  # noqa: F401 (fixture)
from cli_helpers import run_cog
from serve_helpers import Served, write_cassette

DIFF = (
    "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,3 +1,3 @@\n def add(a: int, b: int) -> int:\n"
    '     """Return the sum of a and b."""\n-    return a - b\n+    return a + b  # <script>window.pwned = 1</script> \x1b[2J\n'
)


def live_view(srv: Served, repo: Path, browser: Any) -> None:
    """A page with a view that draws as a live run's (its stream already finished: a quick run)."""
    run = srv.start("Say hello", approval="auto")
    srv.events(run["runId"])
    browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
    wait_for(browser, lambda d: d.execute_script("return !!window.cogView && document.querySelectorAll('[data-block=finish]').length === 1"))
    browser.execute_script("window.cogView.live = true; window.cogView.runId = 'run_x';")


def feed(browser: Any, events: list[dict[str, Any]]) -> None:
    browser.execute_script("for (const ev of arguments[0]) window.cogView.handle(ev); window.cogView.flush();", events)


def row(browser: Any, call_id: str) -> dict[str, Any]:
    return browser.execute_script("""
        const s = document.querySelector('section.call[data-call-id="' + arguments[0] + '"]');
        const card = s.querySelector('[data-block=approval]');
        return {
          label: s.querySelector('.label').textContent, detail: s.querySelector('.detail').textContent,
          status: s.dataset.status || 'running', mark: s.querySelector('.state').textContent,
          markClass: s.querySelector('.state').className, markTitle: s.querySelector('.state').title,
          progress: (s.querySelector('[data-block=progress] .line') || {}).textContent || null,
          card: card ? [...card.children].map((c) => c.className || c.dataset.block || c.tagName) : null,
          preview: card && card.querySelector('[data-block=preview]') ? card.querySelector('[data-block=preview]').innerText : null,
          buttons: card ? [...card.querySelectorAll('button')].map((b) => b.textContent) : [],
        };""", call_id)


def test_approval_cards_show_the_preview_diff_the_command_or_the_arguments_above_the_buttons(make_repo, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    with Served(repo, model=write_cassette(tmp_path / "hi.jsonl", [{"text": "Hello."}])) as srv:
        live_view(srv, repo, browser)
        feed(browser, [
            {"type": "tool-call-start", "id": "e1", "toolName": "edit_file"},
            {"type": "tool-call-end", "id": "e1", "toolName": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}},
            {"type": "tool-call-start", "id": "t1", "toolName": "run_tests"},
            {"type": "tool-call-end", "id": "t1", "toolName": "run_tests", "arguments": {}},
            {"type": "tool-call-start", "id": "m1", "toolName": "deploy"},
            {"type": "tool-call-end", "id": "m1", "toolName": "deploy", "arguments": {"target": "prod\u202e"}},
            {"type": "approval-required", "threadId": "th", "approvals": [
                {"toolCallId": "e1", "toolName": "edit_file", "description": "Edit file · calc/ops.py", "sideEffects": ["writes files"],
                 "arguments": {"path": "calc/ops.py"}, "preview": {"path": "calc/ops.py", "diff": DIFF, "added": 1, "removed": 1}},
                {"toolCallId": "t1", "toolName": "run_tests", "description": "Run tests · all", "sideEffects": ["runs code"],
                 "arguments": {}, "preview": {"command": "python -m pytest -q \x1b[31mred"}},
                {"toolCallId": "m1", "toolName": "deploy", "description": "deploy", "arguments": {"target": "prod\u202e"}},
            ]},
        ])
        screenshot(browser, tmp_path / "screens", "approval-preview")
        edit = row(browser, "e1")
        # what the edit would write, then Approve / Deny below it
        assert edit["card"] == ["what", "preview", "actions"] and edit["buttons"] == ["Approve", "Deny"]
        assert "+1 −1" in edit["preview"] and "calc/ops.py" in edit["preview"]
        card = browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="e1"] [data-block=approval]')
        diff = card.find_element(By.CSS_SELECTOR, "[data-block=diff]")  # the same block as a finished edit
        assert diff.find_element(By.CSS_SELECTOR, "tr.del").text.endswith("return a - b")
        added = diff.find_element(By.CSS_SELECTOR, "tr.add").text
        assert added.endswith("return a + b  # <script>window.pwned = 1</script> \\x1b[2J")  # text, escaped
        assert browser.execute_script("return window.pwned === undefined && document.querySelectorAll('main script').length === 0")
        assert row(browser, "t1")["preview"] == "$ python -m pytest -q \\x1b[31mred"
        other = row(browser, "m1")
        assert other["card"] == ["what", "preview", "actions"] and "Arguments" in other["preview"]
        details = browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="m1"] [data-block=preview] details')
        details.find_element(By.TAG_NAME, "summary").click()
        assert '"target": "prod\\u202e"' in details.find_element(By.TAG_NAME, "pre").text

        # once answered, the card is one line: the finished call shows its own diff
        feed(browser, [{"type": "tool-result", "id": "e1", "toolCallId": "e1", "toolName": "edit_file", "result": {"replacements": 1},
                        "details": {"diff": DIFF, "added": 1, "removed": 1}, "presentation": {"label": "Edit file", "detail": "calc/ops.py"}}])
        assert row(browser, "e1")["preview"] is None and row(browser, "e1")["status"] == "ok"


def test_a_running_test_run_keeps_its_detail_and_marks_follow_the_outcome(make_repo, tmp_path: Path, browser: Any) -> None:
    repo = make_repo("calc")
    with Served(repo, model=write_cassette(tmp_path / "hi.jsonl", [{"text": "Hello."}])) as srv:
        live_view(srv, repo, browser)
        update = {"type": "tool-update", "toolCallId": "t1", "toolName": "run_tests", "content": "tests/test_ops.py::test_add failed",
                  "details": {"passed": 0, "failed": 1, "total_so_far": 1, "collected": 3, "current": "tests/test_ops.py::test_add"},
                  "presentation": {"label": "Run tests", "icon": "flask-conical", "detail": "tests/test_ops.py::test_add"}}
        feed(browser, [
            {"type": "tool-call-start", "id": "t1", "toolName": "run_tests"},
            {"type": "tool-call-end", "id": "t1", "toolName": "run_tests", "arguments": {}},
            {"type": "approval-required", "threadId": "th", "approvals": [
                {"toolCallId": "t1", "toolName": "run_tests", "description": "Run tests · all", "arguments": {}, "preview": {"command": "pytest"}}]},
            {"type": "tool-result", "id": "x", "toolCallId": "x", "toolName": "noop", "result": "ok"},  # another call ends meanwhile
            update,
        ])
        browser.execute_script("window.cogView.calls.get('t1').approval.state = 'approved'; window.cogView.mark(window.cogView.calls.get('t1')); window.cogView.flush();")
        running = row(browser, "t1")
        screenshot(browser, tmp_path / "screens", "test-run-progress")
        assert (running["label"], running["detail"]) == ("Run tests", "all")  # the call's own detail, not the test's id
        assert running["progress"] == "tests/test_ops.py::test_add failed" and running["status"] == "running"

        # auto mode: no approval says the detail; the header still never takes the test's id
        feed(browser, [{"type": "tool-call-start", "id": "t2", "toolName": "run_tests"},
                       {"type": "tool-call-end", "id": "t2", "toolName": "run_tests", "arguments": {"paths": ["tests/test_ops.py"]}},
                       {**update, "toolCallId": "t2"}])
        auto = row(browser, "t2")
        assert (auto["label"], auto["detail"]) == ("Run tests", "paths=[\"tests/test_ops.py\"]")
        assert auto["progress"] == "tests/test_ops.py::test_add failed"

        report = {"passed": 2, "failed": 1, "outcome": "failed", "exit_code": 1,
                  "failures": [{"nodeid": "tests/test_ops.py::test_add", "message": "assert -1 == 5"}]}
        feed(browser, [
            {"type": "tool-result", "id": "t1", "toolCallId": "t1", "toolName": "run_tests", "result": "1 failed", "details": report,
             "presentation": {"label": "Run tests", "icon": "flask-conical", "detail": "all · 1 failed, 2 passed"}},
            {"type": "tool-result", "id": "t2", "toolCallId": "t2", "toolName": "run_tests", "result": "3 passed",
             "details": {"passed": 3, "failed": 0, "outcome": "passed", "exit_code": 0}, "presentation": {"label": "Run tests", "detail": "tests/test_ops.py · 3 passed"}},
            {"type": "tool-call-start", "id": "e1", "toolName": "edit_file"},
            {"type": "tool-call-end", "id": "e1", "toolName": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": "zz", "new_text": "y"}},
            {"type": "tool-result", "id": "e1", "toolCallId": "e1", "toolName": "edit_file", "error": "old_text not found in calc/ops.py",
             "errorCode": "EDIT_NO_MATCH", "presentation": {"label": "Edit file", "detail": "calc/ops.py"}},
            {"type": "tool-call-start", "id": "n1", "toolName": "run_tests"},
            {"type": "tool-result", "id": "n1", "toolCallId": "n1", "toolName": "run_tests", "result": "no tests ran",
             "details": {"passed": 0, "failed": 0, "outcome": "no-tests", "exit_code": 5}},
        ])
        feed(browser, [{"type": "finish", "messageId": "m", "threadId": "th", "status": "completed", "steps": 4,
                         "tests": {"passed": 2, "failed": 1, "errors": 0, "skipped": 0}}])
        screenshot(browser, tmp_path / "screens", "outcome-marks")
        finish = browser.execute_script("return [...document.querySelectorAll('[data-block=finish]')].pop().innerText")
        assert finish.startswith("completed") and "tests failed" in finish and "1 failed, 2 passed" in finish
    failed = row(browser, "t1")
    assert (failed["status"], failed["mark"], failed["markClass"]) == ("tests-failed", "✕", "state bad")
    assert failed["markTitle"] == "1 failed, 2 passed" and failed["detail"] == "all · 1 failed, 2 passed"
    passed = row(browser, "t2")
    assert (passed["status"], passed["mark"], passed["markClass"]) == ("ok", "✓", "state ok")
    edit = row(browser, "e1")
    assert (edit["status"], edit["mark"], edit["markClass"], edit["markTitle"]) == ("error", "✕", "state bad", "failed")
    none = row(browser, "n1")
    assert (none["status"], none["mark"]) == ("tests-failed", "✕") and "no-tests" in none["markTitle"]


def test_an_undone_run_says_so_in_the_thread_list_and_the_api(make_repo, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    model = write_cassette(tmp_path / "write.jsonl", [
        {"text": "Writing a note.", "toolCalls": [{"id": "w1", "name": "write_file", "arguments": {"path": "note.txt", "content": "hi\n"}}]},
        {"text": "Wrote it."},
    ])
    hello = write_cassette(tmp_path / "hi.jsonl", [{"text": "Hello."}])
    with Served(repo, model=model) as srv:
        kept = srv.start("Say hello", approval="auto", model=hello)
        srv.events(kept["runId"])
        run = srv.start("Write a note", approval="auto")
        srv.events(run["runId"])
        assert (repo / "note.txt").read_text() == "hi\n"
        before = {t["id"]: t["undone"] for t in srv.client.get("/api/threads").json()}
        assert before == {run["threadId"]: False, kept["threadId"]: False}
        undo = run_cog(["undo"], repo)
        assert undo.returncode == 0, undo.stderr
        assert not (repo / "note.txt").exists()
        after = {t["id"]: t for t in srv.client.get("/api/threads").json()}
        assert after[run["threadId"]]["undone"] is True and after[kept["threadId"]]["undone"] is False
        browser.get(srv.url)
        item = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, f'#threads li[data-thread-id="{run["threadId"]}"]'))
        screenshot(browser, tmp_path / "screens", "undone-in-list")
        assert [b.text for b in item.find_elements(By.CSS_SELECTOR, ".badge")] == ["completed", "undone"]
        other = browser.find_element(By.CSS_SELECTOR, f'#threads li[data-thread-id="{kept["threadId"]}"]')
        assert [b.text for b in other.find_elements(By.CSS_SELECTOR, ".badge")] == ["completed"]
