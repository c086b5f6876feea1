"""Cold start of `cog --help` and `cog tools` against `python -c pass` (target: ≤ 0.25 s extra).

    python benchmarks/startup.py [--runs 9]

Prints the median wall time of each command over fresh processes and how much `cog` adds.
Not a test: timings depend on the machine; this prints numbers for people to compare.
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


def cog_command() -> list[str]:
    script = Path(sys.executable).with_name("cog")
    if script.exists():
        return [str(script)]
    found = shutil.which("cog")
    return [found] if found else [sys.executable, "-m", "cogcli"]


def median_seconds(argv: list[str], runs: int, cwd: Path) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    workspace = ROOT / "fixtures" / "calc"
    cog = cog_command()
    baseline = median_seconds([sys.executable, "-c", "pass"], runs, workspace)
    print(f"{'python -c pass':<16} {baseline * 1000:7.0f} ms")
    for args in (["--help"], ["tools"]):
        seconds = median_seconds([*cog, *args], runs, workspace)
        extra = seconds - baseline
        verdict = "ok" if extra <= TARGET_EXTRA else f"over the {TARGET_EXTRA * 1000:.0f} ms target"
        print(
            f"{'cog ' + ' '.join(args):<16} {seconds * 1000:7.0f} ms   "
            f"+{extra * 1000:.0f} ms over python ({seconds / baseline:.1f}x)   {verdict}"
        )


if __name__ == "__main__":
    main()
