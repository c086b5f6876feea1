"""Best-of-N over cog serve's HTTP API (issue 50): ``POST /api/runs`` with ``attempts`` runs N
attempts through the same code as ``cog edit --attempts`` (real worktrees, the real tests in each,
sandboxed), streams each attempt's events tagged ``"attempt": K`` then the ``attempts`` line; the
winner is applied and ``POST /api/threads/{id}/undo`` takes it back. Each attempt asks its own
approvals; an answer must name the attempt when the same call id waits in two. A count out of
range, a thread, a workspace without a commit, or an app not handed best-of-N are refused clearly."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from cli_helpers import REPLAY
from conftest import GIT_ENV
from serve_helpers import Served


def test_attempts_out_of_range_or_with_a_thread_are_a_clear_400(make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo("calc")
    with Served(repo, model=REPLAY) as srv:
        for bad in (1, 9, "3", True, 0):
            answer = srv.post("/api/runs", {"input": "Fix add", "attempts": bad})
            assert answer.status_code == 400, (bad, answer.text)
            assert answer.json()["code"] == "INVALID_REQUEST" and "attempts takes 2 to 8" in answer.json()["error"]
        with_thread = srv.post("/api/runs", {"input": "Fix add", "attempts": 2, "thread": "th_x"})
        assert with_thread.status_code == 400 and "goes without thread" in with_thread.json()["error"]
        assert srv.client.get("/api/runs").json() == []  # nothing started
    assert not (repo / ".cog" / "worktrees").exists()


@pytest.mark.slow  # a real server, real worktrees and real test runs
def test_two_attempts_stream_tagged_then_the_winner_is_applied_and_undone(make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo("calc")
    ops = repo / "calc" / "ops.py"
    before = ops.read_text()
    with Served(repo, model=REPLAY, env=GIT_ENV) as srv:
        run = srv.start("Fix add", attempts=2, approval="auto")
        assert run["attempts"] == 2 and run["threadId"] is None
        events = srv.events(run["runId"])
        tagged = [e for e in events if e["type"] != "attempts"]
        assert {e["attempt"] for e in tagged} == {1, 2}
        for k in (1, 2):
            kinds = [e["type"] for e in tagged if e["attempt"] == k]
            assert kinds[0] == "start" and kinds[-1] == "finish" and "tool-result" in kinds
        last = events[-1]
        assert last["type"] == "attempts" and last["winner"] == 1 and last["applied"]["files"] == ["calc/ops.py"]
        assert [(r["attempt"], r["passed"], r["failed"]) for r in last["attempts"]] == [(1, 3, 0), (2, 3, 0)]
        assert "applied attempt 1" in last["said"]
        assert "return a + b" in ops.read_text()
        # resuming with Last-Event-ID uses the run's own count (each attempt numbers from 0)
        rest = srv.events(run["runId"], last_event_id=len(events) - 2)
        assert [e["type"] for e in rest] == ["attempts"]
        summary = srv.client.get(f"/api/runs/{run['runId']}").json()
        assert summary["status"] == "completed" and summary["outcome"]["winner"] == 1

        undo = srv.post(f"/api/threads/{last['applied']['threadId']}/undo", {})
        assert undo.status_code == 200, undo.text
        assert [f["path"] for f in undo.json()["files"]] == ["calc/ops.py"]
    assert ops.read_text() == before


@pytest.mark.slow  # a real server, real worktrees and real test runs
def test_each_attempt_asks_its_own_and_a_call_id_in_two_attempts_needs_the_attempt_named(make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo("calc")
    with Served(repo, model=REPLAY, env=GIT_ENV) as srv:
        run = srv.start("Fix add", attempts=2, approval="ask")
        url = f"/api/runs/{run['runId']}"

        def pending() -> list[dict]:
            return srv.client.get(url).json()["pendingApprovals"]

        deadline = time.monotonic() + 120
        while len(pending()) < 2:  # both attempts wait for their first test run, the same call id
            assert time.monotonic() < deadline, "the attempts did not both ask"
            time.sleep(0.05)
        both = pending()
        assert sorted(p["attempt"] for p in both) == [1, 2] and both[0]["toolCallId"] == both[1]["toolCallId"] == "call_2"
        unnamed = srv.post(f"{url}/approvals", {"toolCallId": "call_2", "approved": True})
        assert unnamed.status_code == 409 and unnamed.json()["code"] == "WHICH_ATTEMPT" and "attempts 1 and 2" in unnamed.json()["error"]
        unknown = srv.post(f"{url}/approvals", {"toolCallId": "call_2", "approved": True, "attempt": 3})
        assert unknown.status_code == 409 and "in attempt 3" in unknown.json()["error"]

        answered = {1: 0, 2: 0}
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            info = srv.client.get(url).json()
            if info["finished"]:
                break
            for p in info["pendingApprovals"]:
                ok = srv.post(f"{url}/approvals", {"toolCallId": p["toolCallId"], "approved": True, "attempt": p["attempt"]})
                if ok.status_code == 200:
                    answered[p["attempt"]] += 1
            time.sleep(0.05)
        else:
            raise AssertionError("the attempts did not finish")
        assert answered == {1: 3, 2: 3}  # two test runs and the edit, each attempt
        events = srv.events(run["runId"])
        asked = [e for e in events if e["type"] == "approval-required"]
        assert sorted(e["attempt"] for e in asked) == [1, 1, 1, 2, 2, 2]
        assert events[-1]["type"] == "attempts" and events[-1]["applied"] is not None
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()


def test_a_workspace_without_a_commit_is_refused_before_anything_starts(make_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    repo = make_repo("calc", git=False)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with Served(repo, model=REPLAY) as srv:
        answer = srv.post("/api/runs", {"input": "Fix add", "attempts": 2})
        assert answer.status_code == 400 and "a git repository with a commit" in answer.json()["error"]


@pytest.mark.slow  # a real server, real worktrees
def test_aborting_a_run_of_attempts_applies_nothing_and_keeps_the_branches(make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo("calc")
    before = (repo / "calc" / "ops.py").read_text()
    with Served(repo, model=REPLAY, env=GIT_ENV) as srv:
        run = srv.start("Fix add", attempts=2, approval="ask")
        url = f"/api/runs/{run['runId']}"
        deadline = time.monotonic() + 120
        while not srv.client.get(url).json()["pendingApprovals"]:
            assert time.monotonic() < deadline, "no attempt asked"
            time.sleep(0.05)
        assert srv.post(f"{url}/abort").status_code == 202
        events = srv.events(run["runId"])
        last = events[-1]
        assert last["type"] == "attempts" and last["status"] == "aborted" and last["applied"] is None
        assert last["said"].startswith("interrupted: nothing was applied")
        assert sorted(e["status"] for e in events if e["type"] == "finish") == ["aborted", "aborted"]
        assert srv.client.get(url).json()["status"] == "aborted"
    assert (repo / "calc" / "ops.py").read_text() == before
    assert len(list((repo / ".cog" / "worktrees").iterdir())) == 2


@pytest.mark.anyio
async def test_an_app_not_handed_best_of_n_refuses_attempts_clearly(tmp_path: Path) -> None:
    from cogcli.server.asgi_app import create_app

    bare = create_app(tmp_path, token="t0k").app  # type: ignore[attr-defined]  # cog serve hands it cogcli.worktrees.best_of
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=bare), base_url="http://127.0.0.1") as client:
        answer = await client.post("/api/runs", json={"input": "Fix add", "attempts": 2}, headers={"Authorization": "Bearer t0k"})
    assert answer.status_code == 400 and "runs no attempts" in answer.json()["error"]
