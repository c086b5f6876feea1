"""``cog serve`` runs the person's hooks as every front end does (they are wired in the session), and
the Studio page draws a hook that blocked as one line, its text escaped (a real headless Chromium)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette


@pytest.mark.slow
def test_studio_draws_a_post_tool_use_block_escaped(make_repo: Any, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    (tmp_path / "xdg" / "cog").mkdir(parents=True)
    hook = "printf 'no reading ops.py\\033]52;c;cHduZWQ=\\007' >&2; exit 2"  # an OSC 52 clipboard write in its stderr
    (tmp_path / "xdg" / "cog" / "config.toml").write_text(f'[[hooks.PostToolUse]]\nmatcher = "read_file"\ncommand = "{hook}"\n'.replace("\\", "\\\\"))
    model = write_cassette(tmp_path / "c.jsonl", [
        {"text": "Reading.", "toolCalls": [{"id": "r1", "name": "read_file", "arguments": {"path": "calc/ops.py"}}]},
        {"text": "Done."},
    ])
    with Served(repo, model=model, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}) as srv:
        run = srv.start("Read ops", approval="auto")
        browser.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")
        line = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "[data-block=hook]"), message="no hook line")
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"))
        assert line.text.startswith("PostToolUse hook · read_file blocked: no reading ops.py\\x1b]52;c;cHduZWQ=\\x07")
        assert "blocked" in line.get_attribute("class")
