"""Diffs in bounded time: the preview's diff (``workspace_tools.text.diffs``: Myers with a budget of
steps, one replace past it) on inputs that make ``difflib.SequenceMatcher(autojunk=False)``
superlinear, against difflib itself and against a linear baseline (splitting both texts into
lines and hashing every line: what reading the file costs), all measured in this run.

    python benchmarks/diff_bounded.py [--lines 1200] [--no-difflib]

Target: every case ≤ 1 s, whatever the lines hold (difflib took > 30 s on the first case at
1,200 lines on a loaded machine: a preview dropped and a thread left burning CPU).
"""

from __future__ import annotations

import argparse
import difflib
import time
from collections.abc import Callable

from workspace_tools.text.diffs import format_hunks, text_blocks
from workspace_tools.text.textfile import split_lines


def cases(n: int) -> list[tuple[str, str, str]]:
    same = "x = 1\n"
    return [
        (f"{n:,} identical lines → the same lines interleaved with others", same * n, "y = 2\n".join([same] * n)),
        (f"{n:,} identical lines, {n // 2:,} new ones put before them", same * n, "z = 3\n" * (n // 2) + same * n),
        (f"{n * 10:,} numbered lines, every 7th removed", "".join(f"line {i}\n" for i in range(n * 10)),
         "".join(f"line {i}\n" for i in range(n * 10) if i % 7)),
        (f"{n * 10:,} numbered lines, one changed in the middle", "".join(f"line {i}\n" for i in range(n * 10)),
         "".join(f"line {i}\n" if i != n * 5 else "changed\n" for i in range(n * 10))),
    ]


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1200)
    parser.add_argument("--no-difflib", action="store_true", help="skip difflib (it takes tens of seconds on the first case)")
    args = parser.parse_args()
    print(f"{'case':<62} {'cog diff':>9} {'linear':>8} {'ratio':>7} {'difflib':>9} {'hunks':>7}")
    for name, old, new in cases(args.lines):
        t_cog, diff = timed(lambda: format_hunks(text_blocks(old, new)))
        t_linear, _ = timed(lambda: [hash(line) for line in split_lines(old) + split_lines(new)])
        if args.no_difflib:
            shown = "—"
        else:
            a, b = split_lines(old), split_lines(new)
            t_difflib, _ = timed(lambda: difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes())
            shown = f"{t_difflib:8.2f}s"
        hunks = str(diff).count("\n@@") + str(diff).startswith("@@")
        print(f"{name:<62} {t_cog:8.3f}s {t_linear:7.3f}s {t_cog / max(t_linear, 1e-6):6.0f}× {shown:>9} {hunks:>7}")


if __name__ == "__main__":
    main()
