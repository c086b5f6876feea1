"""A catastrophic pattern cannot hang search_text: reproduced first against search_text itself
with its defence switched off — RE2, the linear engine its patterns compile for, swapped for
Python's backtracking `re` — which is still running when we give up on it; then the tool as it is
answers at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ws_helpers import call

from workspace_tools import workspace_tools

LINE = "a" * 45 + "b"
PATTERN = "(a+)+$"


#: a stand-in for the ``re2`` module that compiles with Python's backtracking ``re`` (RE2's ``\z``,
#: the end of the text, is ``\Z`` there): the one seam between cog's patterns and globs
#: (``workspace_tools.files.linear_regex``, ``workspace_tools.workspace.listing``) and their linear engine
BACKTRACKING_RE2 = (
    "import re, sys, types; re2 = types.ModuleType('re2'); re2.error = re.error; re2.Options = type('Options', (), {}); "
    "re2.compile = lambda p, options=None: re.compile(p.replace(b'\\\\z', b'\\\\Z') if isinstance(p, bytes) else p.replace('\\\\z', '\\\\Z')); "
    "sys.modules['re2'] = re2; "
)


def _search_without_re2(root: Path, pattern: str) -> subprocess.Popen[str]:
    """search_text over ``root`` in a child process whose RE2 is Python's ``re``; the child prints
    ``ready`` when cog is imported and the search starts, then the number of matches."""
    code = BACKTRACKING_RE2 + (
        "sys.path.insert(0, 'tests'); from ws_helpers import call; from workspace_tools import workspace_tools; "
        f"tools = workspace_tools({str(root)!r}); print('ready', flush=True); "
        f"r = call(tools, 'search_text', pattern={pattern!r}); print(r.error or r.details['total'], flush=True)"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])


def test_search_text_on_a_backtracking_engine_hangs_on_the_pattern(tmp_path: Path) -> None:
    """The attack without the defence: search_text's own path (its pattern compiled, each file
    scanned) with RE2 swapped for `re`. A plain pattern answers, so the swap works; the
    catastrophic one is still running 3 s after the search started, and we stop it."""
    (tmp_path / "evil.txt").write_text(LINE + "\n" + "a" * 10 + "\n")
    plain = _search_without_re2(tmp_path, "a+")
    out, _ = plain.communicate(timeout=60)
    assert out.split() == ["ready", "2"], out
    attack = _search_without_re2(tmp_path, PATTERN)
    try:
        assert attack.stdout is not None and attack.stdout.readline().strip() == "ready"
        try:
            attack.wait(timeout=3)
        except subprocess.TimeoutExpired:
            return
        raise AssertionError(f"search_text on `re` answered ({attack.stdout.read()!r}): the reproduction no longer shows the hang")
    finally:
        attack.kill()
        attack.wait()


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
