"""SIGKILL at random points: a file being edited is always its old or its new content, never a
mix; the thread database opens, passes SQLite's integrity check and holds every step that
completed before the kill, whole. (One kill at a known point, in process: tests/test_memory.py.)"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cli_helpers import REPLAY, cog_argv, cog_env, run_cog
from rel_helpers import db_check

HERE = Path(__file__).resolve().parent
FIX = "Fix the failing test"
KILLS = 200


def test_edit_file_killed_mid_write_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(HERE / "kill_edit_driver.py"), str(tmp_path), str(KILLS), "20261202"],
        capture_output=True, text=True, timeout=600, env=cog_env(),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rounds"] == KILLS
    assert report["bad"] == [], f"rounds whose file was neither version: {report['bad']}"
    # the kills did land where they matter: inside a write (its temp file left behind) and after
    # whole edits; a killed write never leaves anything but its own temp file
    assert report["mid_write"] >= 1 and report["changed"] >= 1, report
    assert report["others"] == []


def _steps_completed(events: list[dict[str, Any]]) -> int:
    """Steps the run had written to the thread before the events seen: a step is recorded after
    its calls' results and before the next turn starts (or the run finishes)."""
    done, results_seen = 0, False
    for e in events:
        if e["type"] == "tool-result":
            results_seen = True
        elif results_seen and e["type"] in ("text-start", "tool-call-start", "finish"):
            done, results_seen = done + 1, False
    return done


def _whole_steps(repo: Path, thread_id: str) -> list[str]:
    """The thread's entry kinds, checking each assistant turn is followed by one result per call."""
    import sqlite3

    db = sqlite3.connect(repo / ".cog" / "threads.db", timeout=30)
    try:
        rows = [(k, json.loads(d)) for k, d in db.execute("SELECT kind, data FROM entries WHERE thread_id = ? ORDER BY seq", (thread_id,))]
    finally:
        db.close()
    for i, (kind, data) in enumerate(rows):
        if kind == "assistant":
            calls = len(data.get("tool_calls") or [])
            assert [k for k, _ in rows[i + 1 : i + 1 + calls]] == ["tool_result"] * calls, rows
    return [k for k, _ in rows]


def test_cog_edit_killed_at_random_points_keeps_files_whole_and_every_completed_step(make_repo, tmp_path: Path) -> None:
    rng = random.Random(7)
    ops_path = Path("calc") / "ops.py"
    reference = make_repo("calc", dest="reference")
    old = (reference / ops_path).read_bytes()
    whole = run_cog(["edit", "--json", "--model", REPLAY, FIX], reference)
    assert whole.returncode == 0, whole.stderr
    new = (reference / ops_path).read_bytes()
    total = len(whole.stdout.splitlines())
    kill_after = sorted(rng.randrange(1, total) for _ in range(12))

    for n, after in enumerate(kill_after):
        repo = make_repo("calc", dest=f"kill{n}")
        proc = subprocess.Popen(
            [*cog_argv(), "edit", "--json", "--model", REPLAY, FIX],
            cwd=repo, env=cog_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(json.loads(line))
            if len(seen) == after:
                break
        time.sleep(rng.uniform(0, 0.05))  # land inside whatever the run does next
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()

        assert (repo / ops_path).read_bytes() in (old, new), f"kill {n} after event {after}: ops.py is partial"
        completed = _steps_completed(seen)
        if not (repo / ".cog" / "threads.db").exists():
            assert completed == 0
            continue
        threads = db_check(repo)
        thread_id = seen[0]["threadId"]
        kinds = _whole_steps(repo, thread_id)
        assert threads[thread_id] == kinds and kinds[0] == "user"
        assert kinds.count("assistant") >= completed, (n, after, kinds)

    # a killed thread can be continued: the history builder closes the call that never returned
    cassette = tmp_path / "more.jsonl"
    cassette.write_text(
        json.dumps({"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}) + "\n"
        + json.dumps({"type": "turn", "text": "Picking up where the run stopped."}) + "\n",
        encoding="utf-8",
    )
    again = run_cog(["edit", "--json", "--thread", thread_id, "--model", f"replay:{cassette}", "Go on"], repo)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["threadId"] == thread_id
    assert db_check(repo)[thread_id][-2:] == ["assistant", "run_end"]
