"""Where the fixed cost of one ``run_tests`` goes, on suites so small the runner's own time is tiny:
a 2-test Go package and a 3-test pytest project. Alternating rounds, medians, ratios against the
bare runner measured in the same run.

    python benchmarks/fixed_overhead.py [--rounds 5] [--sandbox auto]

Rows, per suite:
- bare: the runner's own command (``go test -count=1 -json ./...``, ``python -m pytest -q``);
- cog CLI: ``cog tool run_tests`` as a person runs it (a fresh process: start-up, imports, the call);
- start-up: ``python -c "import cogcli.cli"`` (what every cog command pays before it does anything);
- first call: one ``run_tests`` call in a fresh process, timed inside it (discovery, the sandbox's
  one-time probes, the run) — what ``cog edit``/``chat``/``serve`` pay on their first test run;
- warm call: the next call in that process (what every later test run of a session pays);
- discovery: ``detect`` + the project's Python (``find_project_python``) in a fresh process;
- sandbox: ``sandbox_prefix`` in a fresh process (bwrap probe, socket and credential scans).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COG = str(Path(sys.executable).with_name("cog"))

INSIDE = textwrap.dedent("""\
    import sys, time, anyio
    from pathlib import Path
    t0 = time.perf_counter()
    from cogcli import invoke_tool
    from workspace_tools.workspace.paths import Workspace
    from workspace_tools.runners.run_tests import run_tests_tool
    imported = time.perf_counter() - t0
    root, sandbox, what = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    if what == "discovery":
        from workspace_tools.runners import detect
        from workspace_tools.sandbox.python import find_project_python
        t = time.perf_counter(); detect(Workspace(root)); find_project_python(root, root); print(time.perf_counter() - t)
    elif what == "sandbox":
        from workspace_tools.sandbox.bwrap import sandbox_prefix
        t = time.perf_counter(); sandbox_prefix(sandbox, root); print(time.perf_counter() - t)
    else:
        tool = run_tests_tool(Workspace(root), sandbox=sandbox)
        async def one():
            return await invoke_tool(tool, {})
        t = time.perf_counter(); anyio.run(one); first = time.perf_counter() - t
        t = time.perf_counter(); anyio.run(one); warm = time.perf_counter() - t
        print(first, warm)
""")


def make_go(root: Path) -> list[str] | None:
    if shutil.which("go") is None:
        return None
    (root / "go.mod").write_text("module example.com/b\n\ngo 1.19\n")
    (root / "b_test.go").write_text('package b\n\nimport "testing"\n\nfunc TestA(t *testing.T) {}\n\nfunc TestB(t *testing.T) {}\n')
    return ["go", "test", "-count=1", "-json", "./..."]


def make_py(root: Path) -> list[str]:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "test_p.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n\ndef test_c():\n    pass\n")
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def timed(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    return time.perf_counter() - started


def inside(root: Path, sandbox: str, what: str) -> list[float]:
    done = subprocess.run([sys.executable, "-c", INSIDE, str(root), sandbox, what], cwd=root, capture_output=True, text=True)
    return [float(x) for x in done.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, sandbox {args.sandbox}, {args.rounds} rounds (medians)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("go", make_go), ("pytest", make_py)):
            root = Path(tmp) / name
            root.mkdir()
            bare_argv = make(root)
            if bare_argv is None:
                print(f"{name}: skipped (not installed)")
                continue
            subprocess.run(["git", "init", "-q", "."], cwd=root, check=True)
            timed(bare_argv, root)  # warm the build cache
            rows: dict[str, list[float]] = {k: [] for k in ("bare", "cog CLI", "start-up", "first call", "warm call", "discovery", "sandbox")}
            for _ in range(args.rounds):
                rows["bare"].append(timed(bare_argv, root))
                rows["cog CLI"].append(timed([COG, "tool", "run_tests", "--sandbox", args.sandbox], root))
                rows["start-up"].append(timed([sys.executable, "-c", "import cogcli.cli"], root))
                first, warm = inside(root, args.sandbox, "call")
                rows["first call"].append(first)
                rows["warm call"].append(warm)
                rows["discovery"].append(inside(root, args.sandbox, "discovery")[0])
                rows["sandbox"].append(inside(root, args.sandbox, "sandbox")[0])
            bare = statistics.median(rows["bare"])
            print(f"\n{name} ({' '.join(bare_argv[:2])} …)")
            for key, values in rows.items():
                median = statistics.median(values)
                extra = "" if key == "bare" else f"  {median / bare:5.2f}× bare"
                over = f"  +{median - bare:.3f} s over bare" if key in ("cog CLI", "first call", "warm call") else ""
                print(f"  {key:<11} {median:7.3f} s{extra}{over}")


if __name__ == "__main__":
    main()
