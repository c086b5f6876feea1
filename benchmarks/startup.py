"""Cold start of `cog --help`, `cog tools` and `cog tool` against `python -c pass` (targets: `cog --help`
and `cog tool list_files` ≤ 0.25 s extra, `cog tools` ≤ 0.15 s extra).

    python benchmarks/startup.py [--runs 9]
    python benchmarks/startup.py --runs 15 --before /tmp/base   # against an older tree, interleaved

``--before DIR``: DIR holds an older ``cogcli`` and ``workspace_tools`` (e.g.
``git archive c60ddcb cogcli workspace_tools | tar -x -C /tmp/base``), run first on ``PYTHONPATH``;
each round runs ``python -c pass``, the older tree and this one in turn, so load that comes and
goes touches all three alike.

Prints the median wall time of each command over fresh processes and how much `cog` adds, and
the median CPU time (user + system) of each, which a loaded machine disturbs less.
Not a test: timings depend on the machine; this prints numbers for people to compare.

cog's own modules are byte-compiled first (into ``__pycache__``, as an installed package has them):
with ``PYTHONDONTWRITEBYTECODE`` set, as in some sandboxes, every run would otherwise compile
cog's sources again and measure that instead of start-up.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_EXTRA = 0.25
#: extra seconds over bare Python each command may take
TARGETS = {("--help",): 0.25, ("tools",): 0.15, ("tool", "list_files"): 0.15}  # issue 53: a one-off tool ≤ python + 0.15 s


def cog_command() -> list[str]:
    script = Path(sys.executable).with_name("cog")
    if script.exists():
        return [str(script)]
    found = shutil.which("cog")
    return [found] if found else [sys.executable, "-m", "cogcli"]


def interleaved(before: Path, runs: int, cwd: Path) -> None:
    """Each command before and after (``PYTHONPATH=before``), with ``python -c pass``, round by round."""
    import compileall
    import os
    import resource

    for package in ("cogcli", "workspace_tools"):
        compileall.compile_dir(before / package, quiet=2)
    env_after = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env_before = {**env_after, "PYTHONPATH": str(before)}
    cog = cog_command()

    def once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
        start_usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - started
        end_usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, end_usage.ru_utime - start_usage.ru_utime + end_usage.ru_stime - start_usage.ru_stime

    print(f"{'command':<22} {'python':>7}   {'before: wall over python (cpu)':>32}   {'after':>24}   ratio")
    for args, target in TARGETS.items():
        times: dict[str, list[tuple[float, float]]] = {"python": [], "before": [], "after": []}
        for _ in range(runs):
            times["python"].append(once([sys.executable, "-c", "pass"], env_after))
            times["before"].append(once([*cog, *args], env_before))
            times["after"].append(once([*cog, *args], env_after))
        wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
        cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
        over = {k: wall[k] - wall["python"] for k in ("before", "after")}
        verdict = "ok" if over["after"] <= target else f"over the {target * 1000:.0f} ms target"
        print(
            f"{'cog ' + ' '.join(args):<22} {wall['python'] * 1000:5.0f} ms   "
            f"{wall['before'] * 1000:5.0f} ms +{over['before'] * 1000:4.0f} (cpu +{(cpu['before'] - cpu['python']) * 1000:4.0f})   "
            f"{wall['after'] * 1000:5.0f} ms +{over['after'] * 1000:4.0f} (cpu +{(cpu['after'] - cpu['python']) * 1000:4.0f})   "
            f"{over['after'] / over['before']:.2f}   {verdict}"
        )


def median_seconds(argv: list[str], runs: int, cwd: Path) -> tuple[float, float]:
    """Median wall and CPU (user + system of the child) seconds of ``argv`` over ``runs`` runs."""
    import resource

    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    return statistics.median(times), statistics.median(cpu)


def compile_sources() -> None:
    """Byte-compile cogcli and workspace_tools (quietly; a no-op when the caches are fresh)."""
    import compileall

    for package in ("cogcli", "workspace_tools"):
        compileall.compile_dir(ROOT / package, quiet=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", type=Path, metavar="DIR", help="an older tree to compare with, interleaved")
    options = parser.parse_args()
    runs = options.runs
    compile_sources()
    workspace = ROOT / "fixtures" / "calc"
    if options.before is not None:
        interleaved(options.before.resolve(), runs, workspace)
        return
    cog = cog_command()
    baseline, base_cpu = median_seconds([sys.executable, "-c", "pass"], runs, workspace)
    print(f"{'python -c pass':<22} {baseline * 1000:7.0f} ms   cpu {base_cpu * 1000:5.0f} ms")
    for args, target in TARGETS.items():
        seconds, cpu = median_seconds([*cog, *args], runs, workspace)
        extra = seconds - baseline
        verdict = "ok" if extra <= target else f"over the {target * 1000:.0f} ms target"
        print(
            f"{'cog ' + ' '.join(args):<22} {seconds * 1000:7.0f} ms   cpu {cpu * 1000:5.0f} ms   "
            f"+{extra * 1000:.0f} ms over python (cpu +{(cpu - base_cpu) * 1000:.0f} ms)   {verdict}"
        )


if __name__ == "__main__":
    main()
