"""A catastrophic pattern cannot hang search_text: reproduced against Python's backtracking `re`
first (it is still running when we give up on it), then the tool answers at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ws_helpers import call

from workspace_tools import workspace_tools

LINE = "a" * 45 + "b"
PATTERN = "(a+)+$"


def test_backtracking_re_hangs_on_the_pattern() -> None:
    """The attack without the defence: Python's `re` on this line runs for ages (we stop it after 3 s)."""
    code = f"import re; re.search({PATTERN!r}, {LINE!r})"
    try:
        subprocess.run([sys.executable, "-c", code], timeout=3)
    except subprocess.TimeoutExpired:
        return
    raise AssertionError("re.search returned: the reproduction no longer shows the hang")


def test_search_text_answers_the_catastrophic_pattern(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text(LINE + "\n" + "a" * 10 + "\n")
    code = (
        "import sys; sys.path.insert(0, 'tests'); from ws_helpers import call; from workspace_tools import workspace_tools; "
        f"r = call(workspace_tools({str(tmp_path)!r}), 'search_text', pattern={PATTERN!r}); print(r.details['total'])"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=60, capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"  # only the line of a's matches
    result = call(workspace_tools(tmp_path), "search_text", pattern=PATTERN)
    assert result.details["matches"] == [{"path": "evil.txt", "line": 2, "text": "a" * 10}]
