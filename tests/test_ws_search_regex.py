"""search_text's engine: RE2 line patterns give exactly what Python's `re` gives line by line,
refuse what RE2 lacks with a message that says so, and never backtrack."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ws_helpers import call

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools import workspace_tools
from workspace_tools.files.linear_regex import compile_pattern

PATTERNS = [
    r"a", r"^a", r"a$", r"^$", r"^a*$", r"\bab\b", r"\Bb", r"a\s+b", r"[^a]b", r"a.b", r"(?i)AB", r"\Aab", r"b\Z",
    r"a|^b", r"\s$", r"^\s*a", r"[ab]{2,3}", r"a(?=b)?", r"\w+", r"",
]
LINES = st.lists(st.text(alphabet="ab \t\n\r.é", max_size=12), max_size=8).map("\n".join)


def expected(pattern: str, text: str) -> list[tuple[int, str]]:
    """What the tool promised before RE2: Python's `re`, line by line (the final empty piece after
    a last newline is not a line)."""
    regex = re.compile(pattern)
    lines = text.split("\n")
    if text.endswith("\n") or text == "":
        lines = lines[:-1]
    return [(n, line) for n, line in enumerate(lines, start=1) if regex.search(line)]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([p for p in PATTERNS if "(?=" not in p]), LINES.map(lambda t: t.replace("é", "e")))
def test_line_matches_agree_with_python_re(pattern: str, text: str) -> None:
    text = text.replace("\r", "")  # the reader turns CRLF into LF before the engine sees a file
    found = list(compile_pattern(pattern).matching_lines(text.encode()))
    assert found == expected(pattern, text)


UNICODE_PATTERNS = [p for p in PATTERNS if "(?=" not in p and "\\b" not in p and "\\B" not in p] + [r"\w\w", r"[\w.]+$", r"\d"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(UNICODE_PATTERNS), st.lists(st.text(alphabet="ab \t.é٣1", max_size=12), max_size=8).map("\n".join))
def test_unicode_letters_and_digits_match_as_in_python(pattern: str, text: str) -> None:
    """``\\w`` and ``\\d`` take any script's letters and digits, as Python's do (``\\b`` stays ASCII)."""
    text = text.replace("\r", "")  # the reader turns CRLF into LF before the engine sees a file
    found = list(compile_pattern(pattern).matching_lines(text.encode()))
    assert found == expected(pattern, text)


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"foo(?=bar)", "lookahead"),
        (r"(?<!x)foo", "lookbehind"),
        (r"(a)\1", "backreferences"),
        (r"(?P<q>')x(?P=q)", "backreferences"),
    ],
)
def test_syntax_the_engine_lacks_is_named(pattern: str, named: str) -> None:
    with pytest.raises(ToolCallError) as caught:
        compile_pattern(pattern)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENTS
    assert named in str(caught.value) and "RE2" in str(caught.value) and "Rewrite the pattern" in str(caught.value)


def test_unsupported_pattern_through_the_tool(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("foobar\n")
    result = call(workspace_tools(tmp_path), "search_text", pattern="foo(?=bar)")
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS and "lookahead" in result.error


def test_project_files_come_before_untracked_and_vendored(tmp_path: Path) -> None:
    from conftest import init_git_repo

    for rel in ["vendor/lib/x.py", "a_tracked.py", "z/app.js", "z/app.min.js"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("needle\n")
    init_git_repo(tmp_path)
    (tmp_path / "b_new.py").write_text("needle\n")
    found = [m["path"] for m in call(workspace_tools(tmp_path), "search_text", pattern="needle").details["matches"]]
    assert found == ["a_tracked.py", "z/app.js", "b_new.py", "vendor/lib/x.py", "z/app.min.js"]


def test_the_git_grep_prefilter_finds_what_a_full_read_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracked files are prefiltered with git grep -F on the pattern's plain text; the result is
    the same as reading every file (modified, untracked, latin-1, CRLF and ignore-case files)."""
    from conftest import init_git_repo

    (tmp_path / "a.py").write_text("def handler_one():\n    pass\n")
    (tmp_path / "b.py").write_text("nothing here\n")
    (tmp_path / "crlf.py").write_bytes(b"x = 1\r\ndef Handler_two():\r\n")
    (tmp_path / "latin.txt").write_bytes("def handler_caf\xe9()\n".encode("latin-1"))
    init_git_repo(tmp_path)
    (tmp_path / "b.py").write_text("def handler_modified():\n")  # changed since the commit
    (tmp_path / "new.py").write_text("def handler_new():\n")  # untracked
    tools = workspace_tools(tmp_path)
    import workspace_tools.files.search as search

    patterns = [r"def handler_\w+\(\)", r"(?i)def handler_", r"handler_\w+\(\)$"]
    prefiltered = [call(tools, "search_text", pattern=p).details for p in patterns]
    monkeypatch.setattr(search, "required_literal", lambda pattern: None)  # read every file
    whole = [call(tools, "search_text", pattern=p).details for p in patterns]
    for pattern, fast, slow in zip(patterns, prefiltered, whole):
        assert fast["matches"] == slow["matches"] and fast["matches"], pattern
        assert fast["files_searched"] == slow["files_searched"] == 5
    monkeypatch.undo()
    found = [m["path"] for m in call(tools, "search_text", pattern="(?i)def handler_").details["matches"]]
    assert found == ["a.py", "b.py", "crlf.py", "latin.txt", "new.py"]
