"""`cog serve` over real HTTP on loopback: the SSE stream as a client parses it, resume with
Last-Event-ID, approvals and abort over HTTP, stored threads, the token and the Host/Origin checks."""

from __future__ import annotations

import json
import re
import signal
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_helpers import REPLAY, json_lines, run_cog
from serve_helpers import Served, write_cassette

# --- the stream is the one `cog edit --json` writes ------------------------------------------

RANDOM_KEYS = {"timestamp", "messageId", "threadId", "durationMs", "duration", "duration_s", "stop"}


def normalized(value: Any, repo: Path) -> Any:
    """An event with what differs between two runs of one cassette taken out: times, ids that are
    random per run, the workspace path and pytest's timings."""
    if isinstance(value, dict):
        return {k: normalized(v, repo) for k, v in value.items() if k not in RANDOM_KEYS}
    if isinstance(value, list):
        return [normalized(v, repo) for v in value]
    if isinstance(value, str):
        value = value.replace(str(repo), "<repo>")
        value = re.sub(r"txt_[0-9a-f]+", "txt_*", value)
        return re.sub(r"\d+\.\d+ ?s\b", "<t>s", value)
    return value


@pytest.mark.slow
def test_the_sse_stream_is_the_event_sequence_cog_edit_json_writes_for_the_same_cassette(make_repo) -> None:
    edited = make_repo("calc", dest="by-edit_")  # as long as "by-serve": the path is in the model's context: its length moves peakContextTokens
    out = run_cog(["edit", "--json", "--model", REPLAY, "Fix the failing test"], edited)
    assert out.returncode == 0, out.stderr
    expected = json_lines(out.stdout)

    served_repo = make_repo("calc", dest="by-serve")
    with Served(served_repo, model=REPLAY) as srv:
        run = srv.start(approval="auto")
        frames = list(srv.sse(f"/api/runs/{run['runId']}/events"))

    assert frames[-1].data == "[DONE]" and frames[-1].id is None
    # a keep-alive may come while pytest starts (5 s without an event on a busy machine)
    assert {f.comment for f in frames if f.comment is not None} <= {"keep-alive"}
    frames = [f for f in frames[:-1] if f.comment is None]
    got = [f.event for f in frames]
    # framing: id is the event's seq, data is the compact JSON line cog edit --json writes
    assert [int(f.id) for f in frames] == [e["seq"] for e in got] == list(range(len(got)))  # type: ignore[arg-type]
    assert all(f.data == json.dumps(e, ensure_ascii=False, separators=(",", ":")) for f, e in zip(frames, got))
    assert got[0]["threadId"] == run["threadId"]
    assert [e["type"] for e in got] == [e["type"] for e in expected]
    assert [normalized(e, served_repo) for e in got] == [normalized(e, edited) for e in expected]
    assert got[-1]["type"] == "finish" and got[-1]["status"] == "completed"
    assert "return a + b" in (served_repo / "calc" / "ops.py").read_text()


def test_a_client_that_reconnects_with_last_event_id_misses_nothing_and_gets_nothing_twice(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    turns = [{"text": f"Reading it, take {i}.", "toolCalls": [{"id": f"r{i}", "name": "read_file", "arguments": {"path": "calc/ops.py"}}]} for i in range(3)]
    model = write_cassette(tmp_path / "reads.jsonl", [*turns, {"text": "Read it three times."}])
    with Served(repo, model=model) as srv:
        run = srv.start(approval="auto")
        path = f"/api/runs/{run['runId']}/events"
        first: list[dict[str, Any]] = []
        for frame in srv.sse(path):  # read a few events, then drop the connection
            if frame.data is not None:
                first.append(frame.event)
            if len(first) == 12:
                break
        assert [e["seq"] for e in first] == list(range(12))
        rest = srv.events(run["runId"], last_event_id=11)
        again = srv.events(run["runId"], last_event_id=-1)  # from the start, after the finish
        bad = srv.client.get(path, headers={"Last-Event-ID": "soon"})
    assert rest[0]["seq"] == 12
    assert [e["seq"] for e in first + rest] == list(range(len(first) + len(rest)))
    assert rest[-1]["type"] == "finish"
    assert again == first + rest
    assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["error"]


@pytest.mark.slow
def test_approvals_over_http_keep_alive_while_waiting_and_a_denied_edit_touches_nothing(make_repo) -> None:
    repo = make_repo("calc")
    before = (repo / "calc" / "ops.py").read_text()
    with Served(repo, model=REPLAY) as srv:
        run = srv.start(approval="ask")
        answers = {"call_2": True, "call_3": False, "call_4": True}
        events: list[dict[str, Any]] = []
        comments: list[str] = []
        waited = False
        for frame in srv.sse(f"/api/runs/{run['runId']}/events"):
            if frame.comment is not None:
                comments.append(frame.comment)
                continue
            if frame.data == "[DONE]":
                break
            event = frame.event
            events.append(event)
            if event["type"] != "approval-required":
                continue
            [approval] = event["approvals"]
            assert approval["toolCallId"] in answers and approval["sideEffects"]
            info = srv.client.get(f"/api/runs/{run['runId']}").json()
            assert [a["toolCallId"] for a in info["pendingApprovals"]] == [approval["toolCallId"]]
            if not waited:  # nothing flows while the run waits: the stream says it is alive
                waited = True
                for inner in srv.sse(f"/api/runs/{run['runId']}/events", last_event_id=event["seq"]):
                    assert inner.comment == "keep-alive", inner
                    break
            wrong = srv.post(f"/api/runs/{run['runId']}/approvals", {"toolCallId": "call_99", "approved": True})
            assert wrong.status_code == 409 and approval["toolCallId"] in wrong.json()["error"]
            bad = srv.post(f"/api/runs/{run['runId']}/approvals", {"approved": True})
            assert bad.status_code == 400 and "toolCallId" in bad.json()["error"]
            call = approval["toolCallId"]
            body = {"toolCallId": call, "approved": answers[call]}
            if not answers[call]:
                body["reason"] = "not this edit"
            answered = srv.post(f"/api/runs/{run['runId']}/approvals", body)
            assert answered.status_code == 200, answered.text
            assert answered.json() == {"toolCallId": call, "approved": answers[call], "pending": []}
    results = {e["toolCallId"]: e for e in events if e["type"] == "tool-result"}
    assert results["call_3"]["errorCode"] == "DENIED" and "not this edit" in results["call_3"]["error"]
    assert "errorCode" not in results["call_2"] and "errorCode" not in results["call_4"]
    assert (repo / "calc" / "ops.py").read_text() == before
    assert [e["type"] for e in events].count("approval-required") == 3
    assert events[-1]["type"] == "finish"


def test_abort_ends_a_waiting_run_with_its_finish(make_repo) -> None:
    repo = make_repo("calc")
    with Served(repo, model=REPLAY) as srv:
        run = srv.start(approval="ask")
        events: list[dict[str, Any]] = []
        for frame in srv.sse(f"/api/runs/{run['runId']}/events"):
            if frame.data == "[DONE]":
                break
            if frame.data is None:
                continue
            events.append(frame.event)
            if frame.event["type"] == "approval-required":
                aborted = srv.post(f"/api/runs/{run['runId']}/abort")
                assert aborted.status_code == 202, aborted.text
        again = srv.post(f"/api/runs/{run['runId']}/abort")
        threads = srv.client.get("/api/threads").json()
    assert events[-1]["type"] == "finish" and events[-1]["status"] == "aborted"
    assert [e["type"] for e in events].count("finish") == 1
    assert again.status_code == 409 and "already finished" in again.json()["error"]
    assert threads[0]["id"] == run["threadId"] and threads[0]["status"] == "aborted"


def test_two_runs_at_once_each_with_its_own_stream_and_thread(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    models = [
        write_cassette(tmp_path / f"{name}.jsonl", [
            {"text": f"Writing {name}.", "toolCalls": [{"id": "w1", "name": "write_file", "arguments": {"path": f"{name}.txt", "content": name}}]},
            {"text": f"Wrote {name}."},
        ])
        for name in ("one", "two")
    ]
    with Served(repo) as srv:
        runs = [srv.start(f"Write {n}", model=m, approval="ask") for n, m in zip(("one", "two"), models)]
        listed = srv.client.get("/api/runs").json()
        assert {r["runId"] for r in listed} == {r["runId"] for r in runs}
        assert all(r["pendingApprovals"] or not r["finished"] for r in listed)
        busy = srv.post("/api/runs", {"input": "more", "thread": runs[0]["threadId"], "model": models[0]})
        assert busy.status_code == 409 and busy.json()["code"] == "THREAD_BUSY"
        streams: dict[str, list[dict[str, Any]]] = {}

        def read(run: dict[str, Any]) -> None:
            streams[run["runId"]] = srv.events(run["runId"])

        readers = [threading.Thread(target=read, args=(r,)) for r in runs]
        for t in readers:
            t.start()
        for r in reversed(runs):  # both wait at once; answer the second first
            while not srv.client.get(f"/api/runs/{r['runId']}").json()["pendingApprovals"]:
                threading.Event().wait(0.05)
            assert srv.post(f"/api/runs/{r['runId']}/approvals", {"toolCallId": "w1", "approved": True}).status_code == 200
        for t in readers:
            t.join(60)
    assert runs[0]["threadId"] != runs[1]["threadId"]
    for run, name in zip(runs, ("one", "two")):
        events = streams[run["runId"]]
        assert {e["threadId"] for e in events if "threadId" in e} == {run["threadId"]}
        assert events[-1]["type"] == "finish" and events[-1]["status"] == "completed"
        assert (repo / f"{name}.txt").read_text() == name


def test_stored_threads_are_listed_and_redrawn_as_cog_thread_show_json_writes_them(make_repo) -> None:
    repo = make_repo("calc")
    with Served(repo, model=REPLAY) as srv:
        assert srv.client.get("/api/threads").json() == []
        run = srv.start(approval="auto")
        srv.events(run["runId"])
        threads = srv.client.get("/api/threads").json()
        stored = srv.client.get(f"/api/threads/{run['threadId']}/events")
        as_sse = list(srv.sse(f"/api/threads/{run['threadId']}/events"))
        missing = srv.client.get("/api/threads/thr_nope/events")
    shown = run_cog(["thread", "show", "--json", run["threadId"]], repo)
    assert shown.returncode == 0, shown.stderr
    assert [t["id"] for t in threads] == [run["threadId"]]
    assert threads[0]["status"] == "completed" and threads[0]["title"] == "Fix the failing test"
    assert threads[0]["filesChanged"] == [{"path": "calc/ops.py", "added": 1, "removed": 1}]
    assert stored.headers["content-type"].startswith("application/json")
    assert stored.json() == json_lines(shown.stdout)
    assert [f.data for f in as_sse] == [*shown.stdout.splitlines(), "[DONE]"]
    assert missing.status_code == 404 and "thr_nope" in missing.json()["error"]


def test_ctrl_c_aborts_running_runs_each_ending_with_its_finish(make_repo) -> None:
    repo = make_repo("calc")
    with Served(repo, model=REPLAY) as srv:
        runs = [srv.start(approval="ask") for _ in range(2)]
        streams: dict[str, list[Any]] = {}

        def read(run: dict[str, Any]) -> None:
            streams[run["runId"]] = [f.data for f in srv.sse(f"/api/runs/{run['runId']}/events") if f.data is not None]

        readers = [threading.Thread(target=read, args=(r,)) for r in runs]
        for t in readers:
            t.start()
        for r in runs:
            while not srv.client.get(f"/api/runs/{r['runId']}").json()["pendingApprovals"]:
                threading.Event().wait(0.05)
        code = srv.stop(signal.SIGINT)
        for t in readers:
            t.join(30)
        log = srv.stderr()
    assert code == 130, log
    for run in runs:
        data = streams[run["runId"]]
        assert data[-1] == "[DONE]"
        finish = json.loads(data[-2])
        assert finish["type"] == "finish" and finish["status"] == "aborted"
    listed = run_cog(["thread", "list", "--json"], repo)
    assert {t["status"] for t in json.loads(listed.stdout)} == {"aborted"}


# --- who gets in ---------------------------------------------------------------------------


def test_the_url_has_a_fresh_token_and_the_api_needs_it(make_repo) -> None:
    repo = make_repo("calc")
    with Served(repo) as first, Served(repo) as second:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]{40,}", first.url)
        assert first.token != second.token
        bare = httpx.get(first.base + "/api/threads")
        wrong = httpx.get(first.base + "/api/threads", headers={"Authorization": f"Bearer {second.token}"})
        other = httpx.post(first.base + "/api/runs", json={"input": "x"}, headers={"Authorization": "Basic eDp5"})
        ok = first.client.get("/api/threads")
        page = httpx.get(first.base + "/")
    assert bare.status_code == wrong.status_code == other.status_code == 401
    assert bare.json()["code"] == "UNAUTHORIZED" and "Bearer" in bare.json()["error"]
    assert bare.headers["www-authenticate"].startswith("Bearer")
    assert ok.status_code == 200
    # the page itself holds no data; it reads the token from its URL
    assert page.status_code == 200 and "studio.js" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["referrer-policy"] == "no-referrer"


def test_a_foreign_host_or_origin_is_refused_even_with_the_token(make_repo) -> None:
    repo = make_repo("calc")
    with Served(repo) as srv:
        port = srv.base.rsplit(":", 1)[1]
        get = srv.client.get
        rebound = get("/api/threads", headers={"Host": f"attacker.example:{port}"})
        page = get("/", headers={"Host": "attacker.example"})
        cross = get("/api/threads", headers={"Origin": "http://attacker.example"})
        null = get("/api/threads", headers={"Origin": "null"})
        same = get("/api/threads", headers={"Origin": srv.base})
        localhost = get("/api/threads", headers={"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
    assert rebound.status_code == page.status_code == cross.status_code == null.status_code == 403
    assert rebound.json()["code"] == "FORBIDDEN_HOST" and cross.json()["code"] == "FORBIDDEN_ORIGIN"
    assert same.status_code == localhost.status_code == 200


@pytest.mark.anyio
async def test_dns_rebinding_reaches_the_app_without_the_guard_and_not_with_it(tmp_path: Path) -> None:
    """The attack: a page on attacker.example whose name now resolves to 127.0.0.1 sends its own
    Host and Origin. Without the guard the app answers it; with it, 403."""
    from cogcli.server.asgi_app import create_app

    guarded = create_app(tmp_path, token="t0k")
    bare = guarded.app  # type: ignore[attr-defined]  # the app behind the guard
    headers = {"Host": "attacker.example", "Origin": "http://attacker.example", "Authorization": "Bearer t0k"}
    for app, expected in ((bare, 200), (guarded, 403)):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://attacker.example") as client:
            response = await client.get("/api/workspace", headers=headers)
        assert response.status_code == expected


def test_bad_requests_get_errors_that_name_the_fix(make_repo) -> None:
    repo = make_repo("calc")
    with Served(repo) as srv:
        empty = srv.post("/api/runs", {"input": ""})
        not_json = srv.client.post("/api/runs", content=b"{oops")
        approval = srv.post("/api/runs", {"input": "x", "approval": "maybe"})
        no_model = srv.post("/api/runs", {"input": "Fix it"})
        bad_model = srv.post("/api/runs", {"input": "Fix it", "model": "nope"})
        no_thread = srv.post("/api/runs", {"input": "Fix it", "model": REPLAY, "thread": "thr_missing"})
        unknown = srv.client.get("/api/runs/run_nope/events")
        no_route = srv.client.get("/api/nothing")
        wrong_method = srv.client.delete("/api/runs")
        huge = srv.post("/api/runs", {"input": "x" * (2 << 20)})
        assert srv.proc.poll() is None  # the server lives on
    assert no_route.status_code == 404 and "/api/nothing" in no_route.json()["error"]
    assert wrong_method.status_code == 405 and wrong_method.json()["code"] == "METHOD_NOT_ALLOWED"
    assert huge.status_code == 413
    assert empty.status_code == not_json.status_code == approval.status_code == 400
    assert empty.json()["error"].startswith("input:")
    assert "approval" in approval.json()["error"]
    assert no_model.status_code == 400 and "no model configured" in no_model.json()["error"]
    assert "POST /api/runs" in no_model.json()["error"]
    assert bad_model.status_code == 400 and "provider:model" in bad_model.json()["error"]
    assert no_thread.status_code == 400 and "thr_missing" in no_thread.json()["error"]
    assert unknown.status_code == 404 and unknown.json()["code"] == "NO_SUCH_RUN"


def test_a_busy_port_is_a_usage_error(make_repo) -> None:
    import socket

    repo = make_repo("calc")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        out = run_cog(["serve", "--port", str(port)], repo, timeout=30)
    assert out.returncode == 2 and out.stdout == ""
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr and "--port" in out.stderr
    bad_model = run_cog(["serve", "--model", "gpt-4o"], repo, timeout=30)
    assert bad_model.returncode == 2 and bad_model.stdout == "" and "provider:model" in bad_model.stderr


def test_cog_help_and_serve_help_load_no_web_stack() -> None:
    import subprocess
    import sys

    from cli_helpers import cog_env

    code = (
        "import sys\n"
        "from cogcli.cli import app\n"
        "for args in (['--help'], ['serve', '--help']):\n"
        "    try:\n"
        "        app(args, prog_name='cog')\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), exc.code\n"
        "web = ('starlette', 'uvicorn', 'sse_starlette', 'cogcli.server')\n"
        "print('LOADED', sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.') for w in web)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.returncode == 0, out.stderr
    assert "cog serve" in out.stdout and "Bearer TOKEN" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "LOADED []"


def test_which_names_a_request_may_carry() -> None:
    from cogcli.server.auth import allowed_hosts, host_name, is_loopback

    assert host_name("127.0.0.1:8000") == "127.0.0.1" and host_name("[::1]:80") == "::1" and host_name("LocalHost") == "localhost"
    assert host_name("::1") == "::1"
    assert allowed_hosts("127.0.0.1") == {"localhost", "127.0.0.1", "::1"}
    assert allowed_hosts("0.0.0.0") == allowed_hosts("::") == {"localhost", "127.0.0.1", "::1"}
    assert "192.168.1.20" in allowed_hosts("192.168.1.20")  # the address --host named, typed by a person
    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20") and not is_loopback("localhost.attacker.example")
