"""Studio's Keep button (a real headless Chromium, issue 50): a running background command has one;
clicked, the row says it is kept (its pid and log) and the button goes; after the run ended the kept
command is still listed running while the other was killed with the run's session."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import browser, wait_for  # noqa: F401 (fixture)
from run_tests_helpers import alive
from serve_helpers import Served, write_cassette

from workspace_tools.shell import kept

TURNS = [
    {"toolCalls": [{"id": "c1", "name": "run_command", "arguments": {"command": "exec sleep 306", "background": True}}]},
    {"toolCalls": [{"id": "c3", "name": "run_command", "arguments": {"command": "exec sleep 307", "background": True}}]},
    {"toolCalls": [{"id": "c2", "name": "run_command", "arguments": {"command": "true"}}]},
    {"text": "Both run."},
]


@pytest.mark.slow
def test_studio_keep_button_keeps_one_job_past_the_run(make_repo: Any, tmp_path: Path, browser: Any, person_state_home: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    repo = make_repo("calc")
    with Served(repo, model=write_cassette(tmp_path / "keep.jsonl", TURNS)) as srv:
        run = srv.start("start two servers", approval="ask")
        browser.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")

        def approve(call: str) -> None:
            wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, f"section.call[data-call-id={call}] [data-block=approval] button.approve"),
                     message=f"no question for {call}").click()

        approve("c1")
        approve("c3")
        keep = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "[data-block=jobs] .job[data-job-id=job_1] button[data-keep=job_1]"),
                        message="a running job has no Keep button")
        keep.click()
        job_1 = "[data-block=jobs] .job[data-job-id=job_1]"  # the panel is drawn again as it refreshes: read it whole each time
        shown = wait_for(browser, lambda d: (t := d.find_element(By.CSS_SELECTOR, job_1).text) and "kept · pid" in t and t,
                         message="the kept job's row does not say so")
        [record] = kept.kept_jobs()
        try:
            assert "running, kept" in shown and f"pid {record.pid}" in shown and record.log in shown
            assert not browser.find_elements(By.CSS_SELECTOR, f"{job_1} button[data-keep]"), "a kept job still offers Keep"
            # the panel is refreshed while the run goes on: the second job's row may come a refresh later
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=jobs] .job[data-job-id=job_2] button[data-keep=job_2]"),
                     message="the job not kept has no Keep button")
            approve("c2")
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-block=finish]"), message="the run did not finish")
            wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "[data-block=jobs] .job[data-job-id=job_2][data-state=killed]"),
                     message="the job not kept was not killed with the run")
            assert browser.find_element(By.CSS_SELECTOR, "[data-block=jobs] .job[data-job-id=job_1][data-state=running]")
            assert alive(record.pid)
        finally:
            if alive(record.pid):
                os.killpg(record.pid, signal.SIGKILL)
