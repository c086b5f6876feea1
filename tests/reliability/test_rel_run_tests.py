"""A test run that prints 50 MB, through the whole CLI (`cog tool run_tests --json`): the event
stream and cog's memory stay bounded, the result says how much was dropped. (Hangs, forked
children, SIGTERM-ignoring children and a 20 MB flood through invoke_tool, and output without
newlines: tests/test_run_tests_process.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_helpers import cog_argv, cog_env

FLOOD = '''import sys


def test_prints_50_mb():
    line = "y" * 1023 + "\\n"
    for _ in range(50):
        sys.stdout.write(line * 1024)
    sys.stdout.flush()


def test_after_the_flood():
    assert True
'''

#: runs cog and reports the peak memory of cog and everything it waited for (pytest)
PEAK = "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], stdout=sys.stdout, stderr=sys.stderr); " \
       "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(done.returncode)"


def test_a_50_mb_flood_through_cog_tool_is_bounded(make_repo, tmp_path: Path) -> None:
    repo = make_repo("flood", git=False)
    (repo / "tests" / "test_flood.py").write_text(FLOOD)
    out = subprocess.run(
        [sys.executable, "-c", PEAK, *cog_argv(), "tool", "-C", ".", "run_tests", "--json"],
        cwd=repo, env=cog_env(), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    peak_kb = out.stderr.splitlines()[-1]
    assert "Traceback" not in out.stderr
    assert len(out.stdout.encode()) < 200 * 1024  # what a consumer reads of a 50 MB flood
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(len(events)))
    updates = [e for e in events if e["type"] == "tool-update"]
    assert [u["content"] for u in updates] == ["tests/test_flood.py::test_prints_50_mb passed", "tests/test_flood.py::test_after_the_flood passed"]
    result = events[-1]
    assert result["type"] == "tool-result" and result.get("errorCode") is None
    assert result["details"]["output_dropped_bytes"] > 50_000_000
    assert len(result["result"]) < 2000
    assert int(peak_kb) < 200 * 1024, f"cog or pytest peaked at {int(peak_kb) // 1024} MB"
