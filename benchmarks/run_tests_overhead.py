"""What streaming costs: run_tests (through invoke_tool) vs bare ``python -m pytest -q`` on a
generated 500-test suite, in alternating rounds; prints the median wall-time ratio (target ≤ 1.05×)
and the delay from a test's end (its report's stop time) to its update reaching the caller.

    python benchmarks/run_tests_overhead.py [--rounds 5] [--tests 500] [--sandbox on]

``--sandbox on`` runs the tool's pytest inside the bubblewrap sandbox (user and PID namespaces,
no capabilities, socket scan, allow-listed environment): the issue-12 target is <= 1.10x bare
pytest on 600 tests.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from cogcli import ToolUpdate, invoke_tool
from workspace_tools.workspace.paths import Workspace
from workspace_tools.runners.run_tests import run_tests_tool

FILES = 10


def make_suite(root: Path, n_tests: int) -> None:
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    tests = root / "tests"
    tests.mkdir()
    per_file = n_tests // FILES
    for f in range(FILES):
        body = "\n\n".join(
            f"def test_{f}_{i}():\n    assert sum(range({i})) == {sum(range(i))}" for i in range(per_file)
        )
        (tests / f"test_gen_{f}.py").write_text(body + "\n")


def cpu_seconds() -> float:
    """CPU used so far by this process and its finished children (less noisy than wall time on a busy box)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bare(root: Path, cpu: list[float]) -> float:
    started, cpu0 = time.perf_counter(), cpu_seconds()
    subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=root, check=True, capture_output=True)
    cpu.append(cpu_seconds() - cpu0)
    return time.perf_counter() - started


SANDBOX = "off"


async def with_tool(root: Path, delays: list[float], cpu: list[float]) -> float:
    tool = run_tests_tool(Workspace(root), sandbox=SANDBOX)  # type: ignore[arg-type]
    arrived: dict[str, float] = {}

    def on_update(update: ToolUpdate) -> None:
        arrived[update.details["current"]] = time.time()

    started, cpu0 = time.perf_counter(), cpu_seconds()
    result = await invoke_tool(tool, {}, on_update=on_update)
    elapsed = time.perf_counter() - started
    cpu.append(cpu_seconds() - cpu0)
    assert result.ok and result.details["exit_code"] == 0, result.error or result.result
    for test in result.details["tests"]:
        delays.append(arrived[test["id"]] - test["stop"])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--sandbox", choices=["off", "on"], default="off", help="run_tests under bwrap (on) or not")
    args = parser.parse_args()
    global SANDBOX
    SANDBOX = args.sandbox

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_suite(root, args.tests)
        bare(root, [])  # warm: bytecode caches, disk
        anyio.run(with_tool, root, [], [])
        bare_times: list[float] = []
        tool_times: list[float] = []
        bare_cpu: list[float] = []
        tool_cpu: list[float] = []
        delays: list[float] = []
        for _ in range(args.rounds):
            bare_times.append(bare(root, bare_cpu))
            tool_times.append(anyio.run(with_tool, root, delays, tool_cpu))

    b, t = statistics.median(bare_times), statistics.median(tool_times)
    delays.sort()
    p50 = delays[len(delays) // 2] * 1000
    p95 = delays[int(len(delays) * 0.95)] * 1000
    print(f"{args.tests} tests, {args.rounds} alternating rounds (median), sandbox {args.sandbox}")
    print(f"  bare python -m pytest -q : {b:.3f} s")
    print(f"  run_tests (invoke_tool)  : {t:.3f} s")
    target = "1.10x" if args.sandbox == "on" else "1.05x"
    print(f"  ratio                    : {t / b:.3f}x (target <= {target})")
    bc, tc = statistics.median(bare_cpu), statistics.median(tool_cpu)
    print(f"  cpu (self + children)    : bare {bc:.3f} s, run_tests {tc:.3f} s, ratio {tc / bc:.3f}x")
    print(f"  test end -> update       : p50 {p50:.2f} ms, p95 {p95:.2f} ms, max {delays[-1] * 1000:.2f} ms")


if __name__ == "__main__":
    main()
