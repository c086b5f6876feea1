"""What driving a runner through run_tests costs, per runner: run_tests (through invoke_tool,
one update per test) vs the runner's own command on the same generated suite, in alternating
rounds; prints the median wall-time ratio per runner (target <= 1.10x) and, where the runner
stamps a test's end (go's test2json Time, cog's Node reporters, the pytest plugin), the delay from
that end to its update reaching the caller (target: the first within 100 ms).

    python benchmarks/runners_overhead.py [--rounds 5] [--tests 300] [--only go,node,cargo,vitest,jest,pytest]

vitest and jest use the fixtures' installed node_modules (npm ci in fixtures/node_vitest and
fixtures/node_jest); a runner whose toolchain is missing is reported as skipped.
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
from pathlib import Path

import anyio

from cogcli import ToolUpdate, invoke_tool
from workspace_tools.workspace.paths import Workspace
from workspace_tools.runners.run_tests import run_tests_tool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def make_go(root: Path, n: int) -> list[str]:
    (root / "go.mod").write_text("module example.com/bench\n\ngo 1.19\n")
    body = "\n".join(f"func TestN{i}(t *testing.T) {{ if {i}*2 != {i * 2} {{ t.Fatal(\"x\") }} }}" for i in range(n))
    (root / "bench_test.go").write_text(f"package bench\n\nimport \"testing\"\n\n{body}\n")
    return ["go", "test", "-count=1", "./..."]


def make_node(root: Path, n: int) -> list[str]:
    (root / "package.json").write_text(json.dumps({"scripts": {"test": "node --test"}}))
    (root / "test").mkdir()
    body = "\n".join(f"test('n{i}', () => {{ assert.equal({i} * 2, {i * 2}); }});" for i in range(n))
    (root / "test" / "bench.test.mjs").write_text(f"import assert from 'node:assert/strict';\nimport test from 'node:test';\n{body}\n")
    return ["node", "--test"]


def make_js(kind: str):
    def make(root: Path, n: int) -> list[str]:
        fixture = FIXTURES / f"node_{kind}"
        (root / "package.json").write_text((fixture / "package.json").read_text())
        (root / "node_modules").symlink_to(fixture / "node_modules")
        (root / "test").mkdir()
        head = "import { expect, test } from 'vitest';\n" if kind == "vitest" else ""
        body = "\n".join(f"test('n{i}', () => {{ expect({i} * 2).toBe({i * 2}); }});" for i in range(n))
        (root / "test" / "bench.test.js").write_text(head + body + "\n")
        return [str(root / "node_modules" / ".bin" / kind), *(["run"] if kind == "vitest" else [])]

    return make


def make_cargo(root: Path, n: int) -> list[str]:
    (root / "Cargo.toml").write_text('[package]\nname = "bench"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src").mkdir()
    body = "\n".join(f"    #[test]\n    fn n{i}() {{ assert_eq!({i} * 2, {i * 2}); }}" for i in range(n))
    (root / "src" / "lib.rs").write_text(f"#[cfg(test)]\nmod tests {{\n{body}\n}}\n")
    return ["cargo", "test", "--offline"]


def make_pytest(root: Path, n: int) -> list[str]:
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "tests").mkdir()
    body = "\n\n".join(f"def test_{i}():\n    assert {i} * 2 == {i * 2}" for i in range(n))
    (root / "tests" / "test_bench.py").write_text(body + "\n")
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


SUITES = {
    "go": (make_go, "go", ["-count=1"]),
    "node": (make_node, "node", []),
    "vitest": (make_js("vitest"), "node", []),
    "jest": (make_js("jest"), "node", []),
    "cargo": (make_cargo, "cargo", []),
    "pytest": (make_pytest, None, ["-p", "no:cacheprovider"]),
}


def bare(argv: list[str], root: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=root, capture_output=True, env={**os.environ, "CI": "1"})
    return time.perf_counter() - started


async def with_tool(root: Path, args: list[str], counted: list[int], delays: list[float] | None = None) -> float:
    tool = run_tests_tool(Workspace(root))
    updates = 0
    arrived: dict[str, float] = {}

    def on_update(update: ToolUpdate) -> None:
        nonlocal updates
        updates += 1
        arrived[update.details["current"]] = time.time()

    started = time.perf_counter()
    result = await invoke_tool(tool, {"args": args} if args else {}, on_update=on_update)
    elapsed = time.perf_counter() - started
    assert result.ok and result.details["outcome"] == "passed", result.error or result.result
    counted.append(updates)
    if delays is not None:
        for test in result.details["tests"]:
            if test.get("stop") and test["id"] in arrived:
                delays.append(arrived[test["id"]] - test["stop"])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--only", default=",".join(SUITES))
    opts = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"{opts.tests} tests per suite, {opts.rounds} alternating rounds (median); load average {load:.2f}")
    for name in opts.only.split(","):
        make, program, args = SUITES[name]
        if program and shutil.which(program) is None:
            print(f"  {name:<7} skipped: {program} is not installed")
            continue
        if name in ("vitest", "jest") and not (FIXTURES / f"node_{name}" / "node_modules").is_dir():
            print(f"  {name:<7} skipped: run npm ci in fixtures/node_{name}")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            argv = make(root, opts.tests)
            bare(argv, root)  # warm: compile caches, disk
            counted: list[int] = []
            anyio.run(with_tool, root, args, counted)
            b_times, t_times = [], []
            delays: list[float] = []
            for _ in range(opts.rounds):
                b_times.append(bare(argv, root))
                t_times.append(anyio.run(with_tool, root, args, counted, delays))
        b, t = statistics.median(b_times), statistics.median(t_times)
        late = ""
        if delays and name != "cargo":  # cargo's lines carry no time: its "end" is when cog read the line
            delays.sort()
            late = (f"; test end -> update p50 {delays[len(delays) // 2] * 1000:.1f} ms, "
                    f"p95 {delays[int(len(delays) * 0.95)] * 1000:.1f} ms")
        print(f"  {name:<7} bare {b:6.3f} s   run_tests {t:6.3f} s   ratio {t / b:.3f}x   "
              f"({counted[-1]} updates{late})")


if __name__ == "__main__":
    main()
