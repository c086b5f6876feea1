"""The Studio page in a real headless Chromium: a run started from the page draws live (rows,
progress while tests run, approvals answered by clicking, the diff block), a stored thread draws
the same rows, text from files and models stays text, and a thousand rows with ten thousand
updates coalesce into few redraws without losing the last update.

Screenshots of each state are saved under the test's tmp dir (``screens/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import browser, screenshot, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette

SCRIPT_FILE = '<h1>Notes</h1>\n<script>window.pwned = 1</script>\n<img src=x onerror="window.pwned = 2">\n'
OLD = '    assert 1 + 1 == 3, "arithmetic is broken"'
NEW = '    assert 1 + 1 == 2, "arithmetic is broken"'


def page_cassette(path: Path) -> str:
    return write_cassette(path, [
        {"text": "Running the tests first.", "toolCalls": [{"id": "t1", "name": "run_tests", "arguments": {}}]},
        {"text": "test_fails asserts 1 + 1 == 3. Fixing it.", "toolCalls": [
            {"id": "e1", "name": "edit_file", "arguments": {"path": "tests/test_stream.py", "old_text": OLD, "new_text": NEW}}]},
        {"text": "Reading the notes.", "toolCalls": [{"id": "r1", "name": "read_file", "arguments": {"path": "notes.html"}}]},
        {"text": "Fixed <b>test_fails</b>; notes.html holds a <script> tag, shown as text."},
    ])


def rows(driver: Any) -> list[dict[str, Any]]:
    return driver.execute_script("""
        return [...document.querySelectorAll('section.call')].map((s) => ({
          id: s.dataset.callId,
          label: s.querySelector('.label').textContent,
          detail: s.querySelector('.detail').textContent,
          status: s.dataset.status || 'running',
          blocks: [...s.querySelectorAll('[data-block]')].map((b) => b.dataset.block).filter((b) => b !== 'approval' && b !== 'progress'),
        }));""")


def click(driver: Any, element: Any) -> None:
    """A real click, after scrolling the element to the middle (the sticky header covers the top)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def click_approve(driver: Any, call_id: str) -> None:
    from selenium.webdriver.common.by import By

    button = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, f'section.call[data-call-id="{call_id}"] .approval button.approve'),
                      message=f"no Approve button for {call_id}")
    assert button.text == "Approve"
    deny = driver.find_element(By.CSS_SELECTOR, f'section.call[data-call-id="{call_id}"] .approval button.deny')
    assert deny.text == "Deny"
    click(driver, button)


def test_a_run_started_from_the_page_draws_live_and_its_thread_draws_the_same_rows(make_repo, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    screens = tmp_path / "screens"
    repo = make_repo("slowtests")
    (repo / "notes.html").write_text(SCRIPT_FILE)
    model = page_cassette(tmp_path / "page.jsonl")
    with Served(repo) as srv:
        browser.get(srv.url)
        form = wait_for(browser, lambda d: d.find_element(By.ID, "newrun"))
        screenshot(browser, screens, "01-index-empty")
        form.find_element(By.NAME, "input").send_keys("Fix the failing test")
        form.find_element(By.NAME, "model").send_keys(model)
        assert form.find_element(By.NAME, "approval").get_attribute("value") == "ask"
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for(browser, lambda d: "/runs/run_" in d.current_url)
        run_id = browser.current_url.split("/runs/")[1].split("?")[0]

        # the run asks before running the tests: a row with its label, and Approve / Deny
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, 'section.call[data-call-id="t1"] .approval button'))
        screenshot(browser, screens, "02-run-waiting-for-approval")
        click_approve(browser, "t1")

        # live progress: the first test's update is drawn while pytest still waits on the gate
        bar = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="t1"] [data-block=progress] .bar'))
        progress = browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="t1"] [data-block=progress]').text
        assert "tests/test_stream.py::test_first passed" in progress and "1 / 4 tests" in progress, progress
        assert bar.get_attribute("aria-valuenow") == "1" and bar.get_attribute("aria-valuemax") == "4"
        assert browser.find_elements(By.CSS_SELECTOR, 'section.call[data-call-id="t1"] .spinner')
        # the row keeps the call's own detail; the test that just ended is in the progress line
        assert browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="t1"] .detail').text == "all"
        screenshot(browser, screens, "03-run-tests-progress")
        (repo / "gate.flag").touch()

        click_approve(browser, "e1")
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"), message="no finish drawn")
        for summary in browser.find_elements(By.CSS_SELECTOR, 'section.call[data-call-id="r1"] details.result > summary, details.failure > summary'):
            click(browser, summary)
        live_rows = rows(browser)
        screenshot(browser, screens, "04-run-finished")

        assert [(r["id"], r["label"], r["status"]) for r in live_rows] == [
            ("t1", "Run tests", "tests-failed"), ("e1", "Edit file", "ok"), ("r1", "Read file", "ok")]  # a failing test: no green tick
        assert live_rows[0]["detail"] == "all · 1 failed, 3 passed"
        assert live_rows[1]["detail"] == "tests/test_stream.py" and "diff" in live_rows[1]["blocks"]
        assert "tests" in live_rows[0]["blocks"]
        failure = browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="t1"] details.failure')
        assert "test_fails" in failure.text and "arithmetic is broken" in failure.text

        # the diff: the removed and the added line, coloured, with their line numbers
        diff = browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="e1"] [data-block=diff]')
        removed = diff.find_element(By.CSS_SELECTOR, "tr.del")
        added = diff.find_element(By.CSS_SELECTOR, "tr.add")
        assert removed.text.endswith(OLD.strip()) and added.text.endswith(NEW.strip())
        number = int(added.find_elements(By.CSS_SELECTOR, "td.n")[1].text)
        assert (repo / "tests/test_stream.py").read_text().splitlines()[number - 1] == NEW
        assert removed.value_of_css_property("background-color") != added.value_of_css_property("background-color")

        # text is text: the file's <script> and the model's <b> are shown, never run or parsed
        result = browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="r1"] details.result pre')
        assert "<script>window.pwned = 1</script>" in result.text and 'onerror="window.pwned = 2"' in result.text
        details = browser.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="r1"] [data-block=json]')
        click(browser, details.find_element(By.TAG_NAME, "summary"))
        assert '"total_lines": 3' in details.find_element(By.TAG_NAME, "pre").text  # other details: formatted JSON
        assert browser.execute_script("return window.pwned === undefined && document.querySelectorAll('main script, main img').length === 0")
        assert "Fixed <b>test_fails</b>" in browser.find_element(By.ID, "steps").text
        status = browser.find_element(By.ID, "run-status").text
        assert status == "completed"

        # the stored thread: the same rows (without the progress the live run had)
        thread_id = srv.client.get(f"/api/runs/{run_id}").json()["threadId"]
        browser.execute_script("window.scrollTo(0, 0)")
        browser.find_element(By.CSS_SELECTOR, f'a[href^="/threads/{thread_id}"]').click()
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "section.call") and "/threads/" in d.current_url)
        for summary in browser.find_elements(By.CSS_SELECTOR, 'section.call[data-call-id="r1"] details.result > summary'):
            click(browser, summary)
        assert rows(browser) == live_rows
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-block=progress]")
        screenshot(browser, screens, "05-thread")

        browser.get(srv.url)
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'#threads li[data-thread-id="{thread_id}"]'))
        assert "tests/test_stream.py +1 −1" in browser.find_element(By.ID, "threads").text
        screenshot(browser, screens, "06-index-with-thread")


def test_a_denied_call_shows_its_error_code_and_dark_mode_reads_well(make_repo, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from browser_helpers import chromium

    repo = make_repo("calc")
    model = write_cassette(tmp_path / "deny.jsonl", [
        {"text": "Writing a file.", "toolCalls": [{"id": "w1", "name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
        {"text": "It was refused; stopping."},
    ])
    driver = chromium(tmp_path / "profile-dark", dark=True)
    try:
        with Served(repo, model=model) as srv:
            run = srv.start("Write x.txt", approval="ask")
            driver.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")
            deny = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="w1"] .approval button.deny'))
            click(driver, deny)
            error = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="w1"] [data-block=error]'))
            wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"))
            assert "DENIED" in error.text and "write_file was not run" in error.text
            assert driver.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="w1"] .approval').text.endswith("Denied")
            assert driver.execute_script("return matchMedia('(prefers-color-scheme: dark)').matches")
            assert driver.execute_script("return getComputedStyle(document.body).backgroundColor") == "rgb(17, 18, 20)"
            screenshot(driver, tmp_path / "screens", "07-dark-denied")
            assert not (repo / "x.txt").exists()
    finally:
        driver.quit()


def test_a_thousand_rows_and_ten_thousand_updates_coalesce_and_keep_the_last_update(make_repo, tmp_path: Path, browser: Any) -> None:
    """Feeds a view events as fast as a script can (100 batches of 100 updates, each batch in its
    own task): redraws happen once per animation frame, and the last update is what is drawn."""
    repo = make_repo("calc")
    model = write_cassette(tmp_path / "hi.jsonl", [{"text": "Hello."}])
    with Served(repo, model=model) as srv:
        run = srv.start("Say hello", approval="auto")
        srv.events(run["runId"])
        browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
        wait_for(browser, lambda d: d.execute_script("return !!window.cogView && document.querySelectorAll('[data-block=finish]').length === 1"))
        stats = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const view = window.cogView;
            view.live = true;
            let flushes = 0;
            const flush = view.flush.bind(view);
            view.flush = () => { flushes++; flush(); };
            const started = performance.now();
            for (let i = 0; i < 1000; i++) {
              const id = 'c' + i;
              view.handle({type: 'tool-call-start', id, toolName: 'read_file', presentation: {label: 'Read file', icon: 'file', detail: 'src/f' + i + '.py'}});
              view.handle({type: 'tool-call-end', id, toolName: 'read_file', arguments: {path: 'src/f' + i + '.py'}});
              if (i < 999) view.handle({type: 'tool-result', id, toolCallId: id, toolName: 'read_file', result: 'line ' + i, durationMs: 3});
            }
            let sent = 0;
            const batch = () => {
              for (let j = 0; j < 100; j++, sent++) {
                view.handle({type: 'tool-update', toolCallId: 'c999', content: 'test ' + sent + ' passed',
                             details: {passed: sent + 1, failed: 0, total_so_far: sent + 1, collected: 10000}});
              }
              if (sent < 10000) setTimeout(batch, 0);
              else requestAnimationFrame(() => requestAnimationFrame(() => done({
                flushes, ms: performance.now() - started,
                rows: document.querySelectorAll('section.call').length,
                line: document.querySelector('section.call[data-call-id="c999"] [data-block=progress] .line').textContent,
                count: document.querySelector('section.call[data-call-id="c999"] [data-block=progress] .count').textContent,
              })));
            };
            batch();
        """)
        screenshot(browser, tmp_path / "screens", "08-thousand-rows", full=False)
    assert stats["rows"] == 1000
    assert stats["line"] == "test 9999 passed"  # the last update, not one before it
    assert stats["count"].startswith("10000 / 10000 tests")
    assert stats["flushes"] <= 101  # at most one redraw per batch, never one per update


class CuttingProxy:
    """A loopback TCP proxy in front of ``cog serve`` that drops the first event stream after
    ``after`` reads from the server (response head, first batch of events, one more), as a
    flaky network would. Records each request's head."""

    def __init__(self, target_port: int, after: int = 3) -> None:
        import socket
        import threading

        self.target_port, self.after = target_port, after
        self.heads: list[str] = []
        self.cut = False
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            state = {"events": False, "sent": 0}
            threading.Thread(target=self._up, args=(client, upstream, state), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client, state), daemon=True).start()

    def _up(self, client: Any, upstream: Any, state: dict[str, Any]) -> None:
        try:
            while data := client.recv(65536):
                text = data.decode("latin-1")
                if text.startswith(("GET ", "POST ", "HEAD ")):
                    with self.lock:
                        self.heads.append(text.split("\r\n\r\n")[0])
                        if "/events" in text.split("\r\n")[0] and not self.cut:
                            self.cut = True
                            state["events"] = True
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            _hang_up(client, upstream)

    def _down(self, upstream: Any, client: Any, state: dict[str, Any]) -> None:
        try:
            while data := upstream.recv(65536):
                client.sendall(data)
                if state["events"]:
                    state["sent"] += 1
                    if state["sent"] >= self.after:
                        break  # the network drops the stream mid-way
        except OSError:
            pass
        finally:
            _hang_up(client, upstream)

    def close(self) -> None:
        self.server.close()


def _hang_up(*socks: Any) -> None:
    """shutdown() first: close() alone leaves a socket open while another thread reads it."""
    import socket

    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def test_the_page_reconnects_with_last_event_id_and_draws_each_event_once(make_repo, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    reads = [{"text": f"Reading it, take {i}.", "toolCalls": [{"id": f"r{i}", "name": "read_file", "arguments": {"path": "calc/ops.py"}}]} for i in range(3)]
    write = {"text": "Writing a note.", "toolCalls": [{"id": "w1", "name": "write_file", "arguments": {"path": "note.txt", "content": "hi"}}]}
    model = write_cassette(tmp_path / "reads.jsonl", [write, *reads, {"text": "Done reading."}])
    with Served(repo, model=model) as srv:
        run = srv.start("Write a note, then read", approval="ask")
        proxy = CuttingProxy(int(srv.base.rsplit(":", 1)[1]))
        try:
            browser.get(f"http://127.0.0.1:{proxy.port}/runs/{run['runId']}?token={srv.token}")
            # the first batch (through approval-required) arrives whole; the stream is cut after the next
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, 'section.call[data-call-id="w1"] .approval button'))
            assert srv.post(f"/api/runs/{run['runId']}/approvals", {"toolCallId": "w1", "approved": True}).status_code == 200
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"), message="the page never got the finish")
            heads = list(proxy.heads)
        finally:
            proxy.close()
        expected = srv.events(run["runId"])
        screenshot(browser, tmp_path / "screens", "09-after-reconnect")
    streams = [h for h in heads if "/events" in h.split("\r\n")[0]]
    assert len(streams) >= 2, heads  # cut once, then resumed
    assert "last-event-id" not in streams[0].lower()
    assert any("last-event-id:" in h.lower() for h in streams[1:]), streams
    texts = browser.execute_script("return [...document.querySelectorAll('#steps .text')].map((t) => t.textContent)")
    assert texts == [e["delta"] for e in _merged_texts(expected)]
    assert [r["id"] for r in rows(browser)] == ["w1", "r0", "r1", "r2"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "[data-block=finish]")) == 1


def _merged_texts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    texts: dict[str, str] = {}
    for e in events:
        if e["type"] == "text-delta":
            texts[e["id"]] = texts.get(e["id"], "") + e["delta"]
    return [{"delta": t} for t in texts.values()]
