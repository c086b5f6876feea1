"""The README's Python API example runs and prints what the README says."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_define_a_tool_example_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "define_a_tool.py")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "  [count_words call-1] 1/4: split",
        "  [count_words call-1] 2/4: results",
        "  [count_words call-1] 3/4: by",
        "  [count_words call-1] 4/4: reader",
        "Count words  split results by rea",
        'model reads: {"words": 4}',
        "details: {'longest': 'results'}",
        "✗ INVALID_ARGUMENTS: - text: Field required",
    ]
