"""Studio (a real headless Chromium) lists the run's background commands under its head: running
while the run goes on, killed once it ended (issue 50: background commands shown in every front end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, wait_for  # noqa: F401 (fixture)
from serve_helpers import Served, write_cassette
from test_serve_jobs import JOB_TURNS


@pytest.mark.slow
def test_studio_lists_the_runs_background_command_running_then_killed(make_repo: Any, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    model = write_cassette(tmp_path / "jobs.jsonl", JOB_TURNS)
    with Served(repo, model=model) as srv:
        run = srv.start("start the server", approval="ask")
        browser.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")

        def approve(call: str) -> None:
            button = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, f"section.call[data-call-id={call}] [data-block=approval] button.approve"),
                              message=f"no question for {call}")
            button.click()

        approve("c1")
        # listed running, then its bytes counted at a later refresh (the job's first output read after its start)
        shown = wait_for(browser, lambda d: (t := d.find_element(By.CSS_SELECTOR, "[data-block=jobs] .job[data-job-id=job_1][data-state=running]").text)
                         and "8 B" in t and t, message="the background command was not listed running with its 8 bytes")
        assert "echo serving; exec sleep 300" in shown
        assert "1 running" in browser.find_element(By.CSS_SELECTOR, "[data-block=jobs] .jobs-head").text
        approve("c2")
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"), message="the run did not finish")
        wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "[data-block=jobs] .job[data-job-id=job_1][data-state=killed]"),
                 message="the run's end did not show the command killed")


@pytest.mark.slow
def test_studio_draws_what_command_output_read_as_a_terminal_under_its_row(make_repo: Any, tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    printed = "".join(f"line {i}\\n" for i in range(1, 31))
    turns = [{"toolCalls": [{"id": "c1", "name": "run_command", "arguments": {"command": f"sleep 2; printf '{printed}'", "background": True}}]},
             {"toolCalls": [{"id": "w1", "name": "run_command", "arguments": {"command": "sleep 4"}}]},  # it printed all meanwhile
             {"toolCalls": [{"id": "c2", "name": "command_output", "arguments": {"id": "job_1"}}]},
             {"text": "Read it."}]
    with Served(make_repo("calc"), model=write_cassette(tmp_path / "read.jsonl", turns)) as srv:
        run = srv.start("read the output", approval="auto")
        [read] = [e for e in srv.events(run["runId"]) if e["type"] == "tool-result" and e.get("toolCallId") == "c2"]
        browser.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")
        term = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "section.call[data-call-id=c2] [data-block=terminal]"),
                        message="command_output's row drew no output")
        shown = term.get_attribute("textContent").splitlines()
    output = read["details"]["output"].splitlines()
    assert output == [f"line {i}" for i in range(1, 31)] and shown == output[-20:], (shown, output)  # its last 20 lines, as text
