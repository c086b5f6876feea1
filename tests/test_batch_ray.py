"""`cog batch --ray` on a local Ray the batch starts: the six tasks end as they do in processes, a
task whose worker process is killed is retried by Ray, and the model's API key reaches the workers
(through Ray's object store, not the logged runtime environment) without being written anywhere in the output folder."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from batch_helpers import check_patches, make_repos, results, six_tasks, snapshot
from cli_helpers import run_cog
from model_servers import OpenAIServer, Reply, ToolCall

KEY = "sk-batchtest-0123456789abcdefDONOTLEAK"


@pytest.mark.slow
def test_six_tasks_on_a_local_ray_end_as_in_processes(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    before = {name: snapshot(repo) for name, repo in repos.items()}
    tasks, expected = six_tasks(tmp_path)
    lines = [json.loads(line) for line in tasks.read_text().splitlines()]
    for task in lines:
        if task["id"] == "greet-main":  # this one talks to a model over HTTP, with a key
            task["model"] = "openai:gpt-4o"
    mark = tmp_path / "killed-once"
    lines.append({"id": "victim", "repo": "repos/greet", "instruction": "Read", "model": lines[-1]["model"].replace("short", "greet"),
                  "setup": f'[ -e "{mark}" ] || {{ touch "{mark}"; kill -KILL $PPID; sleep 5; }}'})
    expected["victim"] = "passed"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines), encoding="utf-8")
    out = tmp_path / "out"
    script = [Reply("Editing.", [ToolCall("c1", "edit_file", {"path": "hello.py", "old_text": '"hello"', "new_text": '"hello, world"'})]),
              Reply("Done.")]

    ray_dir = Path(tempfile.mkdtemp(prefix="cogray", dir="/tmp"))  # Ray's sockets need a short path
    try:
        with OpenAIServer(script) as server:
            done = run_cog(["batch", str(tasks), "--out", str(out), "--ray", "--workers", "2", "--sandbox", "off"], tmp_path,
                           env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url, "RAY_TMPDIR": str(ray_dir)}, timeout=600)
        ray_files = [p for p in ray_dir.rglob("*") if p.is_file() and not p.is_symlink() and not p.is_socket()]
        assert ray_files, "Ray wrote its session under RAY_TMPDIR"
        leaked = [p for p in ray_files if KEY.encode() in p.read_bytes()]
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)

    assert done.returncode == 1, done.stderr
    rows = {r["id"]: r for r in results(out)}
    assert {i: r["status"] for i, r in rows.items()} == expected
    assert rows["calc-fix"]["tests"]["passed"] == 3 and rows["calc-fails"]["tests"]["failed"] == 1
    assert mark.exists()  # the victim's first worker was killed; Ray ran it again
    # the key travelled to the worker (the server saw it) and is nowhere in the output folder,
    # nor in Ray's logs (the runtime environment's variables are logged: the key is not one)
    assert leaked == []
    assert server.requests and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert KEY.encode() not in path.read_bytes(), path
    check_patches(out, repos, tmp_path)
    assert {name: snapshot(repo) for name, repo in repos.items()} == before
