"""Studio draws the model's reasoning (``--reasoning``), in a real headless Chromium against a
``cog serve`` whose model is a loopback Anthropic server streaming signed thinking: open and
dimmed while it streams ("Thinking…"), collapsed to "Thought for N s" once the block ends, an
encrypted block said as such, and a stored thread redrawn the same, collapsed.

Screenshots of each state are saved under the test's tmp dir (``screens/``)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, screenshot, wait_for  # noqa: F401 (fixture)
from model_servers import AnthropicServer, RedactedThinking, Reply, Thinking, ToolCall
from serve_helpers import Served

FIRST = Thinking("The test says add is broken.\nRead calc/ops.py before touching anything.", signature="EqQBsigFIRST==")
LAST = Thinking("ops.add returns a - b: that is the bug.", signature="EqQBsigLAST==")


def thoughts(driver: Any) -> list[dict[str, Any]]:
    return driver.execute_script("""
        return [...document.querySelectorAll('[data-block=reasoning]')].map((d) => ({
          state: d.dataset.state, open: d.open, summary: d.querySelector('summary').textContent,
          text: d.querySelector('.thought').textContent, shown: d.querySelector('.thought').checkVisibility(),
          encrypted: d.classList.contains('encrypted'), durationMs: d.dataset.durationMs,
          color: getComputedStyle(d.querySelector('.thought')).color,
        }));""")


@pytest.mark.slow  # a cog serve, a loopback model and a Chromium: about 15 s on a shared machine
def test_studio_draws_reasoning_as_it_streams_then_collapsed_live_and_from_the_store(make_repo, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    screens = tmp_path / "screens"
    hold = threading.Event()
    thought = {"output_tokens_details": {"thinking_tokens": 25}}
    script = [Reply("Reading the code.", [ToolCall("toolu_1", "read_file", {"path": "calc/ops.py"})], thinking=(FIRST, RedactedThinking()), hold=hold, chunk=8,
                    usage=(40, 30), usage_extra=thought, usage_late=True),
              Reply("add returns a - b.", thinking=(LAST,), usage=(60, 20), usage_extra=thought, usage_late=True)]
    with AnthropicServer(script) as model, Served(make_repo("calc"), model="anthropic:claude-sonnet-4-5", env={
        "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": model.base_url, "COG_REASONING": "high"}) as srv:
        run = srv.start("Why does add fail?", approval="auto")
        browser.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")
        try:
            # the model is mid-thought (the server holds the block's signature): drawn open, as it streams
            wait_for(browser, lambda d: (t := thoughts(d)) and "Read calc/ops.py" in t[0]["text"], message="no reasoning drawn while it streams")
            streaming = thoughts(browser)[0]
            screenshot(browser, screens, "01-thinking")
            time.sleep(1.5)  # the model thinks a while longer
        finally:
            hold.set()
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"), message="no finish drawn")
        wait_for(browser, lambda d: len(thoughts(d)) == 3 and all(t["state"] == "done" for t in thoughts(d)))
        live = thoughts(browser)
        answer_color = browser.execute_script("return getComputedStyle(document.querySelector('.text')).color")
        stats = browser.execute_script("return [...document.querySelectorAll('[data-block=finish] .stat')].map((s) => s.textContent)")
        screenshot(browser, screens, "02-run-finished")

        # expanded again on a click: the whole thought, as the model wrote it
        summary = browser.find_element(By.CSS_SELECTOR, "[data-block=reasoning] > summary")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
        summary.click()
        reopened = thoughts(browser)[0]
        screenshot(browser, screens, "03-thought-opened")

        browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
        wait_for(browser, lambda d: len(thoughts(d)) == 3, message="the stored thread drew no reasoning")
        stored = thoughts(browser)
        screenshot(browser, screens, "04-thread-reloaded")

    assert streaming["state"] == "streaming" and streaming["open"] and streaming["shown"] and streaming["summary"] == "Thinking…"
    assert streaming["color"] != answer_color  # dimmed, apart from the answer
    assert any(" · 50 out (50 reasoning) · " in s for s in stats), stats  # the footer says how much of the output was thought
    # once each block ends: collapsed to how long the model thought; the held one took a while
    assert [t["state"] for t in live] == ["done"] * 3 and not any(t["open"] or t["shown"] for t in live)
    assert all(re.fullmatch(r"Thought for (less than a second|\d+ s)( · encrypted)?", t["summary"]) for t in live), live
    assert live[1]["summary"].endswith(" · encrypted") and not live[0]["summary"].endswith(" · encrypted")
    assert int(live[0]["durationMs"]) >= 1500 and live[0]["summary"] == f"Thought for {(int(live[0]['durationMs']) + 500) // 1000} s"
    assert [t["text"] for t in live] == [FIRST.text, "The provider sent this reasoning encrypted: there is nothing to show.", LAST.text]
    assert [t["encrypted"] for t in live] == [False, True, False]
    assert reopened["open"] and reopened["shown"] and reopened["text"] == FIRST.text
    # a stored thread: the same blocks, collapsed, with the durations the live run measured
    assert [(t["summary"], t["text"], t["durationMs"], t["open"]) for t in stored] == [(t["summary"], t["text"], t["durationMs"], False) for t in live]
