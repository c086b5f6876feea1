"""Studio's footer shows the prompt cache and the cost of a run (issue 27), in a real headless Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette


@pytest.mark.slow  # a cog serve and a Chromium: about 13 s on a shared machine
def test_the_footer_shows_cache_reads_writes_output_and_cost(make_repo, tmp_path: Path, browser: Any) -> None:
    usage = {"inputTokens": 5000, "outputTokens": 40, "cachedInputTokens": 4096, "cacheWriteTokens": 512, "costUsd": 0.0042}
    model = write_cassette(tmp_path / "hi.jsonl", [{"text": "Hello.", "usage": usage}])
    with Served(make_repo("calc"), model=model) as srv:
        run = srv.start("Say hello", approval="auto")
        srv.events(run["runId"])
        browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
        wait_for(browser, lambda d: d.execute_script("return document.querySelectorAll('[data-block=finish]').length === 1"))
        stats = browser.execute_script("return [...document.querySelectorAll('[data-block=finish] .stat')].map((s) => s.textContent)")
    assert "5,040 tokens" in stats
    assert "5,000 in (4,096 cache read, 512 cache write) · 40 out · $0.0042" in stats
