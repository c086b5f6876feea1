"""Issue 39 in Studio, in a real headless Chromium: a thread of two runs that changed a file; each
finished run has an Undo button (`POST /api/threads/{id}/undo`); clicking the second's walks it
back and marks it, a file changed by hand since is refused on the page with what differs (nothing
written), and once it is as the run left it the first run is walked back too — every undone run
marked, not only the last."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import browser, screenshot, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette


def _write(tmp: Path, name: str, content: str) -> str:
    return write_cassette(tmp / f"{name}.jsonl", [
        {"text": "", "toolCalls": [{"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": content}}]},
        {"text": "Done."},
    ])


def test_studio_undo_button_walks_back_each_run_and_marks_every_undone_one(make_repo, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    with Served(repo) as srv:
        first = srv.start("write one", model=_write(tmp_path, "one", "one\n"), approval="auto")
        srv.events(first["runId"])
        second = srv.start("write two", model=_write(tmp_path, "two", "two\n"), approval="auto", thread=first["threadId"])
        srv.events(second["runId"])
        thread = first["threadId"]
        assert (repo / "a.txt").read_text() == "two\n"

        browser.get(f"{srv.base}/threads/{thread}?token={srv.token}")
        buttons = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "button.undo") if len(d.find_elements(By.CSS_SELECTOR, "button.undo")) == 2 else None)
        marks = browser.find_elements(By.CSS_SELECTOR, ".runmark")
        assert [m.text for m in marks] == ["run 1", "run 2"]
        buttons[1].click()
        wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".runmark .badge.undone")) == 1, message="run 2 not marked undone")
        assert (repo / "a.txt").read_text() == "one\n"
        assert browser.find_element(By.CSS_SELECTOR, '.runmark[data-run="2"]').text == "run 2\nundone"
        screenshot(browser, tmp_path / "screens", "undo-01-second-undone")

        (repo / "a.txt").write_text("one\nmine\n")  # changed by hand since run 1
        (only,) = browser.find_elements(By.CSS_SELECTOR, "button.undo")
        only.click()
        problem = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".undo-row .error") if d.find_element(By.CSS_SELECTOR, ".undo-row .error").is_displayed() else None)
        assert "a.txt changed since the run" in problem.text and "+mine" in problem.text
        assert (repo / "a.txt").read_text() == "one\nmine\n"
        screenshot(browser, tmp_path / "screens", "undo-02-refused")

        (repo / "a.txt").write_text("one\n")
        browser.find_element(By.CSS_SELECTOR, "button.undo").click()
        wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".runmark .badge.undone")) == 2, message="both runs not marked")
        assert not (repo / "a.txt").exists() and not browser.find_elements(By.CSS_SELECTOR, "button.undo")
        listed = srv.client.get("/api/threads").json()[0]
        assert len(listed["undoneRuns"]) == 2 and listed["undone"]
        again = srv.post(f"/api/threads/{thread}/undo", {})
        assert again.status_code == 409 and again.json()["code"] == "NOTHING_TO_UNDO"
