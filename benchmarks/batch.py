"""`cog batch` throughput and per-task overhead, with a fast scripted model (a cassette: one
edit, then the answer; no test run), on a small generated repository.

    python benchmarks/batch.py [--tasks 8] [--rounds 3]

1. Tasks per minute with --workers 1 and 2 (the wall time of the whole `cog batch`, N tasks).
2. The overhead of one task against a bare `cog edit` in the same repository, alternating rounds:
   bare `cog edit` (process start + session + run), `cog batch` of one task (process start,
   forkserver start, clone, session, run, patch), and the task's own duration as its result says
   (clone + session + run + patch, in its worker).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

COG = [str(Path(sys.executable).with_name("cog"))]
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b.invalid", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b.invalid"}


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("COG_", "OPENAI_", "ANTHROPIC_"))}
    out.update(GIT_ENV, CI="1", XDG_CONFIG_HOME=str(Path(tempfile.gettempdir()) / "cog-bench-no-config"))
    return out


def make_repo(root: Path, files: int = 200) -> Path:
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    for n in range(files):
        (repo / "pkg" / f"mod{n}.py").write_text("".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(50)))
    (repo / "hello.py").write_text('GREETING = "hello"\n')
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "first"], check=True, env={**os.environ, **GIT_ENV})
    return repo


def make_cassette(path: Path) -> str:
    lines = [
        {"type": "cassette", "schemaVersion": 1, "model": "bench:scripted"},
        {"type": "turn", "text": "Editing.", "toolCalls": [{"id": "c1", "name": "edit_file", "arguments": {"path": "hello.py", "old_text": '"hello"', "new_text": '"hello, world"'}}],
         "usage": {"inputTokens": 100, "outputTokens": 10}},
        {"type": "turn", "text": "Done.", "toolCalls": [], "usage": {"inputTokens": 120, "outputTokens": 5}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return f"replay:{path}"


def tasks_file(root: Path, repo: Path, model: str, n: int, name: str) -> Path:
    path = root / name
    path.write_text("".join(json.dumps({"id": f"t{i}", "repo": str(repo), "instruction": "Greet the world", "model": model}) + "\n" for i in range(n)))
    return path


def batch(tasks: Path, out: Path, workers: int) -> tuple[float, list[dict]]:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run([*COG, "batch", str(tasks), "--out", str(out), "--workers", str(workers)], capture_output=True, text=True, env=env())
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"cog batch failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall, [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def bare_edit(clone: Path, model: str) -> float:
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "."], check=True)
    shutil.rmtree(clone / ".cog", ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run([*COG, "edit", "--model", model, "Greet the world"], cwd=clone, capture_output=True, text=True, env=env())
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"cog edit failed ({done.returncode}):\n{done.stderr}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {os.cpu_count()} cores · load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="cog-bench-batch-") as scratch:
        root = Path(scratch)
        repo = make_repo(root)
        model = make_cassette(root / "edit.jsonl")
        many = tasks_file(root, repo, model, args.tasks, "many.jsonl")
        one = tasks_file(root, repo, model, 1, "one.jsonl")
        print(f"\n1. throughput: {args.tasks} tasks (clone of a {sum(1 for _ in repo.rglob('*.py'))}-file repository, one edit each)")
        for workers in (1, 2):
            walls, durations = [], []
            for _ in range(args.rounds):
                wall, rows = batch(many, root / f"out-{workers}", workers)
                walls.append(wall)
                durations += [r["duration_s"] for r in rows]
                assert all(r["status"] == "passed" for r in rows), rows
            wall = statistics.median(walls)
            print(f"   --workers {workers}: {wall:6.2f} s median of {args.rounds} → {args.tasks / wall * 60:6.1f} tasks/min "
                  f"(task median {statistics.median(durations):.2f} s)")
        print(f"\n2. one task's overhead, {args.rounds * 2} alternating rounds")
        clone = root / "clone"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        bare, whole, inside = [], [], []
        for _ in range(args.rounds * 2):
            bare.append(bare_edit(clone, model))
            wall, rows = batch(one, root / "out-one", 1)
            whole.append(wall)
            inside.append(rows[0]["duration_s"])
        b, w, i = statistics.median(bare), statistics.median(whole), statistics.median(inside)
        print(f"   bare cog edit:               {b:6.2f} s")
        print(f"   cog batch, one task (wall):  {w:6.2f} s  ({w / b:.2f}× · +{w - b:.2f} s)")
        print(f"   the task in its worker:      {i:6.2f} s  ({i / b:.2f}× · clone + session + run + patch)")
    print(f"\nload after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
