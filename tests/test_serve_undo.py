"""Issue 39 in Studio, in a real headless Chromium: a thread of two runs that changed a file; each
finished run has an Undo button (`POST /api/threads/{id}/undo`); clicking the second's walks it
back and marks it, a file changed by hand since is refused on the page with what differs (nothing
written), and once it is as the run left it the first run is walked back too — every undone run
marked, not only the last."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, screenshot, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette

pytestmark = pytest.mark.slow  # a real browser


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
        buttons[1].click()  # the dry run first: what would be put back
        confirm = wait_for(browser, lambda d: _shown(d, ".undo-preview .undo-confirm"))
        assert [li.get_attribute("data-path") for li in browser.find_elements(By.CSS_SELECTOR, ".undo-files.tools li")] == ["a.txt"]
        assert not browser.find_elements(By.CSS_SELECTOR, ".undo-files.commands") and (repo / "a.txt").read_text() == "two\n"
        confirm.click()
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
        wait_for(browser, lambda d: _shown(d, ".undo-preview .undo-confirm")).click()
        wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".runmark .badge.undone")) == 2, message="both runs not marked")
        assert not (repo / "a.txt").exists() and not browser.find_elements(By.CSS_SELECTOR, "button.undo")
        listed = srv.client.get("/api/threads").json()[0]
        assert len(listed["undoneRuns"]) == 2 and listed["undone"]
        again = srv.post(f"/api/threads/{thread}/undo", {})
        assert again.status_code == 409 and again.json()["code"] == "NOTHING_TO_UNDO"


def _shown(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0] if found and found[0].is_displayed() else None


def test_studio_undo_preview_lists_what_commands_changed_apart_from_tool_writes(make_repo, tmp_path: Path, browser: Any) -> None:
    """Issue 52: the Undo preview (the dry run) shows the files a command changed apart from the
    tools' writes, as `cog undo --dry-run` does, the folders it made, and the note that what is
    outside is not undone."""
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    ops = (repo / "calc" / "ops.py").read_text()
    model = write_cassette(tmp_path / "c.jsonl", [
        {"text": "", "toolCalls": [{"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "by a tool\n"}}]},
        {"text": "", "toolCalls": [{"id": "r1", "name": "run_command", "arguments": {"command": "printf 'x\\n' > calc/ops.py; echo made > gen.txt; mkdir -p out/x"}}]},
        {"text": "Done."},
    ])
    with Served(repo) as srv:
        run = srv.start("edit and run", model=model, approval="auto")
        srv.events(run["runId"])
        assert (repo / "gen.txt").exists() and (repo / "notes.txt").exists()
        browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
        wait_for(browser, lambda d: _shown(d, "button.undo")).click()
        confirm = wait_for(browser, lambda d: _shown(d, ".undo-preview .undo-confirm"))

        def listed(kind: str) -> list[str]:
            return [(li.get_attribute("data-path") or "") + "".join(f" ({b.text})" for b in li.find_elements(By.CSS_SELECTOR, ".badge"))
                    for li in browser.find_elements(By.CSS_SELECTOR, f".undo-files.{kind} li")]

        assert listed("tools") == ["notes.txt (deleted)"]
        assert listed("commands") == ["calc/ops.py", "gen.txt (deleted)"]
        assert listed("folders") == ["out/", "out/x/"]
        assert "Command changes (2)" in browser.find_element(By.CSS_SELECTOR, ".undo-files.commands h4").text
        assert "not undone" in browser.find_element(By.CSS_SELECTOR, ".undo-notes").text
        assert confirm.text == "Undo 3 files" and (repo / "gen.txt").exists()  # the preview wrote nothing
        screenshot(browser, tmp_path / "screens", "undo-03-command-preview")
        confirm.click()
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".runmark .badge.undone"), message="run not marked undone")
    assert (repo / "calc" / "ops.py").read_text() == ops and not (repo / "gen.txt").exists() and not (repo / "notes.txt").exists()
    assert not (repo / "out").exists()
