"""`cog serve`'s `GET /api/runs/{runId}/jobs` (issue 50: background commands listed for the person):
a command the run started in the background is listed running while the run goes on, and killed
once the run ended (its session closed); an unknown run is a 404 naming the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from serve_helpers import Served, write_cassette

#: a run that starts a background command, runs one more, and ends (the job still running)
JOB_TURNS = [
    {"toolCalls": [{"id": "c1", "name": "run_command", "arguments": {"command": "echo serving; exec sleep 300", "background": True}}]},
    {"toolCalls": [{"id": "c2", "name": "run_command", "arguments": {"command": "true"}}]},
    {"text": "The server ran."},
]


def test_the_runs_background_commands_are_listed_running_then_killed(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    model = write_cassette(tmp_path / "jobs.jsonl", JOB_TURNS)
    with Served(repo, model=model) as srv:
        run = srv.start("start the server", approval="ask")
        path = f"/api/runs/{run['runId']}"
        while_running: list[dict[str, Any]] = []
        for frame in srv.sse(path + "/events"):
            if frame.data == "[DONE]":
                break
            if frame.data is None or frame.event["type"] != "approval-required":
                continue
            [approval] = frame.event["approvals"]
            if approval["toolCallId"] == "c2":  # the background command started a step ago: listed running
                while_running = srv.client.get(path + "/jobs").json()
            assert srv.post(path + "/approvals", {"toolCallId": approval["toolCallId"], "approved": True}).status_code == 200
        after = srv.client.get(path + "/jobs")
        missing = srv.client.get("/api/runs/run_nope/jobs")
    [job] = while_running
    assert job["id"] == "job_1" and job["command"] == "echo serving; exec sleep 300"
    assert job["running"] is True and job["exitCode"] is None and job["bytesTotal"] == len("serving\n")
    assert job["ageS"] >= 0
    assert after.status_code == 200
    [ended] = after.json()
    assert ended["id"] == "job_1" and ended["running"] is False and ended["killed"] is True  # the run's end killed it
    assert missing.status_code == 404 and missing.json()["code"] == "NO_SUCH_RUN"
