"""Best-of-N in Studio, in a real headless Chromium (issue 50): the run form's attempts field (an
out-of-range number is refused on the page with the server's words), the attempts drawn side by
side as they run (each in its own column, Approve in the column of the attempt asking, the answer
naming it), then the comparison table with the winner marked and what was applied, and Undo on it
putting the file back. Text from the model and the instruction stays text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, screenshot, wait_for  # noqa: F401 (fixture)
from conftest import GIT_ENV
from serve_helpers import Served, write_cassette

pytestmark = pytest.mark.slow  # a real browser, real worktrees and real test runs

BUGGY = '    """Return the sum of a and b."""\n    return a - b'
FIXED = '    """Return the sum of a and b."""\n    return a + b'


def _fix(tmp: Path) -> str:
    return write_cassette(tmp / "fix.jsonl", [
        {"text": "Fixing <img src=x onerror=window.pwned=1> add\u202e.", "toolCalls": [
            {"id": "c1", "name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": BUGGY, "new_text": FIXED}}]},
        {"text": "Done."},
    ])


def _approve_one(driver: Any) -> str | None:
    """Click the Approve shown in some attempt's column (found and clicked in one step: the rows
    redraw as events come); the attempt it was in, None when none was shown."""
    return driver.execute_script("""
        const b = document.querySelector('section.attempt .approval button.approve:enabled');
        if (!b) return null;
        b.scrollIntoView({block: 'center'});
        b.click();
        return b.closest('section.attempt').dataset.attempt;""")


def test_studio_starts_attempts_draws_them_side_by_side_and_undoes_the_applied_winner(make_repo, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    screens = tmp_path / "screens"
    repo = make_repo("calc")
    ops = repo / "calc" / "ops.py"
    before = ops.read_text()
    with Served(repo, model=_fix(tmp_path), env=GIT_ENV) as srv:
        browser.get(srv.url)
        form = wait_for(browser, lambda d: d.find_element(By.ID, "newrun"))
        form.find_element(By.NAME, "input").send_keys("Fix add <i>now</i>")
        field = form.find_element(By.NAME, "attempts")
        field.send_keys("9")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        problem = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#newrun .error") if d.find_element(By.CSS_SELECTOR, "#newrun .error").is_displayed() else None)
        assert "attempts takes 2 to 8" in problem.text and "/runs/" not in browser.current_url
        field.clear()
        field.send_keys("2")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for(browser, lambda d: "/runs/run_" in d.current_url)

        columns = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "section.attempt") if len(d.find_elements(By.CSS_SELECTOR, "section.attempt")) == 2 else None)
        assert [c.get_attribute("data-attempt") for c in columns] == ["1", "2"]
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "section.attempt .approval button.approve"), message="no attempt asked")
        screenshot(browser, screens, "attempts-01-asking")
        asked: list[str] = []
        while not browser.find_elements(By.CSS_SELECTOR, "[data-block=attempts]"):
            attempt = _approve_one(browser)
            if attempt is not None:
                asked.append(attempt)
                css = f'section.attempt[data-attempt="{attempt}"] .approval button.approve'
                wait_for(browser, lambda d, css=css: not d.find_elements(By.CSS_SELECTOR, css), timeout=30, message=f"attempt {attempt}'s question stayed")
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=attempts]") or d.find_elements(By.CSS_SELECTOR, "section.attempt .approval button.approve:enabled"),
                     timeout=120, message="neither another question nor the comparison came")
        assert sorted(asked) == ["1", "2"]  # one edit per attempt, each asked in its own column

        outcome = browser.find_element(By.CSS_SELECTOR, "[data-block=attempts]")
        assert outcome.get_attribute("data-winner") == "1"
        table = [[td.text for td in tr.find_elements(By.CSS_SELECTOR, "td")] for tr in outcome.find_elements(By.CSS_SELECTOR, "tbody tr")]
        assert [row[:5] for row in table] == [["★", "attempt 1", "completed", "3 passed", "1"], ["", "attempt 2", "completed", "3 passed", "1"]]
        assert table[0][5] == "+1 −1" and table[0][8].startswith("cog/try-") and table[0][8].endswith("-1")
        assert "Applied attempt 1 to the work tree" in outcome.find_element(By.CSS_SELECTOR, ".applied").text
        assert "winner" in browser.find_element(By.CSS_SELECTOR, 'section.attempt[data-attempt="1"]').get_attribute("class")
        for k in ("1", "2"):  # each column drew its attempt's call and finish
            col = browser.find_element(By.CSS_SELECTOR, f'section.attempt[data-attempt="{k}"]')
            assert col.find_element(By.CSS_SELECTOR, 'section.call[data-call-id="c1"]').get_attribute("data-status") == "ok"
            assert col.find_element(By.CSS_SELECTOR, "[data-block=finish]").get_attribute("data-status") == "completed"
            assert col.find_element(By.CSS_SELECTOR, ".approval .badge").text == "Approved"
        # the model's and the person's text stay text: no element made, the bidi override escaped
        texts = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "section.attempt .text")]
        assert "Fixing <img src=x onerror=window.pwned=1> add\\u202e." in texts
        assert not browser.find_elements(By.CSS_SELECTOR, "#app img, h1 i") and browser.execute_script("return window.pwned") is None
        assert browser.find_element(By.CSS_SELECTOR, "h1").text == "Fix add <i>now</i>"
        assert "return a + b" in ops.read_text()
        screenshot(browser, screens, "attempts-02-compared")

        run_id = browser.current_url.split("/runs/")[1].split("?")[0]
        applied = srv.client.get(f"/api/runs/{run_id}").json()["outcome"]["applied"]

        outcome.find_element(By.CSS_SELECTOR, "button.undo").click()
        wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".undo-preview .undo-confirm")).click()
        wait_for(browser, lambda d: f"/threads/{applied['threadId']}" in d.current_url, message="Undo did not go to the applied thread")
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".runmark .badge.undone"), message="the applied run not marked undone")
    assert ops.read_text() == before
