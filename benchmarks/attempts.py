"""`cog edit --attempts 3` wall time against one attempt, on this machine, with a replayed model
(fixtures/cassettes/calc_fix.jsonl: a read, a test run, an edit, a test run, the answer) on the
calc fixture — so what is measured is cog's own work: worktrees, sessions, the sandboxed test
runs (the model's two and the picking one), the commit and the apply.

    python benchmarks/attempts.py [--rounds 3] [--ray]

Alternating rounds, a fresh copy of the fixture each time: `cog edit` (one attempt in the work
tree), `cog edit --worktree` (one attempt in a new worktree, committed there), `cog edit
--attempts 3`; with ``--ray`` also `cog edit --attempts 3 --ray` (each attempt a Ray task on a local
Ray the command starts: Ray's start, the bundle, a clone per attempt, the patches onto branches).
Medians, and the ratio of --attempts 3 (and --ray) to one attempt.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COG = [str(Path(sys.executable).with_name("cog"))]
REPLAY = f"replay:{ROOT / 'fixtures' / 'cassettes' / 'calc_fix.jsonl'}"
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b.invalid", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b.invalid"}
CASES = {
    "one attempt (cog edit)": [],
    "one attempt in a worktree (--worktree)": ["--worktree"],
    "--attempts 3": ["--attempts", "3"],
}

RAY_CASE = "--attempts 3 --ray (local Ray)"


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("COG_", "OPENAI_", "ANTHROPIC_"))}
    out.update(GIT_ENV, CI="1", XDG_CONFIG_HOME=str(Path(tempfile.gettempdir()) / "cog-bench-no-config"))
    return out


def fresh(base: Path, n: int) -> Path:
    repo = base / f"calc{n}"
    shutil.copytree(ROOT / "fixtures" / "calc", repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "fixture"], check=True, env={**os.environ, **GIT_ENV})
    return repo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ray", action="store_true", help="also --attempts 3 --ray (a local Ray per command)")
    args = parser.parse_args()
    cases = {**CASES, **({RAY_CASE: ["--attempts", "3", "--ray"]} if args.ray else {})}
    times: dict[str, list[float]] = {name: [] for name in cases}
    ray_dir = tempfile.mkdtemp(prefix="cogray", dir="/tmp")  # Ray's sockets need a short path
    with tempfile.TemporaryDirectory() as tmp:
        n = 0
        for _ in range(args.rounds):
            for name, extra in cases.items():
                n += 1
                repo = fresh(Path(tmp), n)
                start = time.perf_counter()
                done = subprocess.run([*COG, "edit", "--model", REPLAY, *extra, "Fix add"], cwd=repo, env={**env(), "RAY_TMPDIR": ray_dir}, capture_output=True, text=True, check=False)
                times[name].append(time.perf_counter() - start)
                if done.returncode != 0:
                    sys.exit(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, {args.rounds} rounds")
    for name, values in times.items():
        print(f"  {name:<40} median {statistics.median(values):6.2f} s   ({', '.join(f'{v:.2f}' for v in values)})")
    one = statistics.median(times["one attempt (cog edit)"])
    three = statistics.median(times["--attempts 3"])
    print(f"  --attempts 3 / one attempt: {three / one:.2f}x")
    if args.ray:
        on_ray = statistics.median(times[RAY_CASE])
        print(f"  --attempts 3 --ray / one attempt: {on_ray / one:.2f}x;  --attempts 3 --ray / --attempts 3: {on_ray / three:.2f}x")
    shutil.rmtree(ray_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
