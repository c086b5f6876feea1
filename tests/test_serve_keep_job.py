"""Studio's Keep (`POST /api/runs/{runId}/jobs/{jobId}/keep`, issue 50): the person keeps a running
background command past the run; it is listed kept, runs on once the run ended (its session closed)
and `cog jobs` has its record. An unknown job is a 404, an ended one a 409; the route needs the token
and refuses another site's page, as every API route."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import httpx
from run_tests_helpers import alive, wait_until_dead
from serve_helpers import Served, write_cassette

from workspace_tools.shell import kept

TURNS = [
    {"toolCalls": [{"id": "c1", "name": "run_command", "arguments": {"command": "echo serving; exec sleep 305", "background": True}}]},
    {"toolCalls": [{"id": "c0", "name": "run_command", "arguments": {"command": "exit 3", "background": True}}]},
    {"toolCalls": [{"id": "c2", "name": "run_command", "arguments": {"command": "sleep 0.3"}}]},
    {"text": "The server runs."},
]


def test_keep_lets_a_runs_background_command_outlive_it(make_repo: Any, tmp_path: Path, person_state_home: Path) -> None:
    repo = make_repo("calc")
    model = write_cassette(tmp_path / "keep.jsonl", TURNS)
    answers: dict[str, httpx.Response] = {}
    with Served(repo, model=model) as srv:
        run = srv.start("start the server", approval="ask")
        path = f"/api/runs/{run['runId']}"
        for frame in srv.sse(path + "/events"):
            if frame.data == "[DONE]":
                break
            if frame.data is None or frame.event["type"] != "approval-required":
                continue
            [approval] = frame.event["approvals"]
            if approval["toolCallId"] == "c2":  # both background commands started; job_2 has exited by now
                answers["stranger"] = httpx.post(srv.base + path + "/jobs/job_1/keep", timeout=30)
                answers["other site"] = srv.client.post(path + "/jobs/job_1/keep", headers={"Origin": "http://evil.example"})
                assert not kept.kept_jobs(), "a refused request kept the job"
                answers["keep"] = srv.post(path + "/jobs/job_1/keep")
                answers["again"] = srv.post(path + "/jobs/job_1/keep")
                answers["unknown"] = srv.post(path + "/jobs/job_9/keep")
                answers["ended"] = srv.post(path + "/jobs/job_2/keep")
                answers["no run"] = srv.post("/api/runs/run_nope/jobs/job_1/keep")
            assert srv.post(path + "/approvals", {"toolCallId": approval["toolCallId"], "approved": True}).status_code == 200
        after = srv.client.get(path + "/jobs").json()
    [record] = kept.kept_jobs()
    try:
        assert answers["stranger"].status_code == 401 and answers["other site"].status_code == 403
        keep = answers["keep"]
        assert keep.status_code == 200, keep.text
        row = keep.json()
        assert row["id"] == "job_1" and row["running"] is True and row["keptPid"] == record.pid and row["keptLog"] == record.log
        assert answers["again"].status_code == 200 and answers["again"].json()["keptPid"] == record.pid
        assert answers["unknown"].status_code == 404 and answers["unknown"].json()["code"] == "NO_SUCH_JOB"
        assert "job_9" in answers["unknown"].json()["error"]
        assert answers["ended"].status_code == 409 and answers["ended"].json()["code"] == "JOB_ENDED"
        assert "job_2 has ended" in answers["ended"].json()["error"]
        assert answers["no run"].status_code == 404 and answers["no run"].json()["code"] == "NO_SUCH_RUN"
        # the run ended (and cog serve with it): the kept job runs on, the other is listed ended
        by_id = {j["id"]: j for j in after}
        assert by_id["job_1"]["running"] is True and by_id["job_1"]["keptPid"] == record.pid
        assert by_id["job_2"]["running"] is False and by_id["job_2"]["keptPid"] is None
        assert record.command == "echo serving; exec sleep 305" and record.workspace == str(repo.resolve())
        assert alive(record.pid), "the kept job died with the run"
        kept.kill_kept(record.id)
        assert wait_until_dead([record.pid]) == []
    finally:
        if alive(record.pid):
            os.killpg(record.pid, signal.SIGKILL)
