"""Studio (``cog serve``'s page, a real headless Chromium) draws a task's subagent: its question,
marked, under the task's row, answered there; then the child's calls listed under the task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette

FIX = {"path": "calc/ops.py", "old_text": "return a - b\n\n\ndef sub", "new_text": "return a + b\n\n\ndef sub"}


@pytest.mark.slow
def test_studio_asks_the_childs_question_under_its_task_and_lists_its_calls(make_repo: Any, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    model = write_cassette(tmp_path / "c.jsonl", [  # one task: the parent's turn, the child's two, the parent's last
        {"text": "", "toolCalls": [{"id": "t1", "name": "task", "arguments": {"description": "fix add", "prompt": "Fix add"}}]},
        {"text": "", "toolCalls": [{"id": "e1", "name": "edit_file", "arguments": FIX}]},
        {"text": "Fixed add."},
        {"text": "Done."},
    ])
    with Served(repo, model=model, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}) as srv:
        run = srv.start("Fix add", approval="ask")
        browser.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")
        asked = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "section.call.subagent [data-block=approval]"), message="no question")
        assert 'Task "fix add" · Edit file · calc/ops.py' in asked.text
        asked.find_element(By.CSS_SELECTOR, "button.approve").click()
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"), message="the run did not finish")
        steps = browser.find_element(By.CSS_SELECTOR, "section.call[data-call-id=t1] [data-block=subagent-steps]")
        assert steps.text == "✓ Edit file · calc/ops.py"
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()
