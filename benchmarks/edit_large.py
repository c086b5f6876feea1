"""edit_file on 10k / 100k / 1M-line files: time of one edit (read, match, diff, atomic write).

The diff is computed only around the change, so time should grow linearly with file size
(one scan for the match and line numbers, one write) — ratios near 10× per 10× lines.
Target: ≤ 0.2 s for the 100k-line file.

    python benchmarks/edit_large.py
"""

from __future__ import annotations

import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from cogcli import invoke_tool
from workspace_tools import workspace_tools

SIZES = (10_000, 100_000, 1_000_000)
RUNS = 5


def make_file(path: Path, lines: int) -> None:
    path.write_text("".join(f"    value_{i} = compute({i}, factor=3)  # line {i}\n" for i in range(lines)))


def time_edit(root: Path, lines: int) -> tuple[float, int]:
    tools = workspace_tools(root, include_git=False)
    target = root / f"big_{lines}.py"
    make_file(target, lines)
    middle = lines // 2
    times = []
    diff_len = 0
    for run in range(RUNS):
        old = f"value_{middle} = compute({middle}, factor={3 + run})"
        new = f"value_{middle} = compute({middle}, factor={4 + run})"
        started = time.perf_counter()
        args = {"path": target.name, "old_text": old, "new_text": new}
        result = anyio.run(functools.partial(invoke_tool, "edit_file", args, tools=tools))
        times.append(time.perf_counter() - started)
        assert result.ok, result.error
        diff_len = len(result.details["diff"])
    return statistics.median(times), diff_len


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results = {}
        print(f"{'lines':>10} {'median s':>10} {'ratio':>7} {'diff chars':>11}")
        previous = None
        for lines in SIZES:
            seconds, diff_len = time_edit(root, lines)
            results[lines] = seconds
            ratio = f"{seconds / previous:.1f}x" if previous else "-"
            print(f"{lines:>10,} {seconds:>10.4f} {ratio:>7} {diff_len:>11}")
            previous = seconds
    growth = results[SIZES[-1]] / results[SIZES[0]]
    print(f"growth 10k → 1M lines (100x the lines): {growth:.0f}x (linear ≈ 100x, quadratic ≈ 10,000x)")
    at_100k = results[100_000]
    print(f"100k-line edit: {at_100k:.3f} s (target ≤ 0.2 s): {'OK' if at_100k <= 0.2 else 'SLOW'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
