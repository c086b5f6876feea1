"""list_files and search_text: .gitignore respected, junk skipped, output bounded, binary skipped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from ws_helpers import call

from cogcli.contract.errors import ErrorCode
from workspace_tools import workspace_tools
from workspace_tools.workspace.listing import matches_glob

FIXTURE_FILES = [
    ".gitattributes", ".gitignore", "README.md", "docs/readme.md", "src/app.py", "src/util.py",
    "text/bom.txt", "text/crlf.txt", "text/data.bin", "text/latin1.txt", "text/noeol.txt", "text/tabs.txt",
]


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    root = make_repo("workspace")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("def greet(): pass\n")
    (root / "debug.log").write_text("greet\n")
    (root / "notes.txt").write_text("an untracked note about greet\n")
    return root


def test_list_respects_gitignore_and_includes_untracked(repo: Path) -> None:
    result = call(workspace_tools(repo), "list_files")
    assert result.details["files"] == sorted(FIXTURE_FILES + ["notes.txt"])
    assert result.result.splitlines()[0] == "13 files in the workspace:"
    assert result.presentation.model_dump(exclude_none=True) == {"label": "List files", "icon": "folder", "detail": "."}
    (repo / "src" / "util.py").unlink()  # deleted but still in the index: not listed
    assert "src/util.py" not in call(workspace_tools(repo), "list_files").details["files"]


def test_list_a_folder_with_a_pattern(repo: Path) -> None:
    result = call(workspace_tools(repo), "list_files", path="src", pattern="*.py")
    assert result.result == "2 files matching '*.py' in src:\nsrc/app.py\nsrc/util.py\n"
    assert result.presentation.detail == "src"
    assert call(workspace_tools(repo), "list_files", pattern="text/*.txt").details["total"] == 5
    assert call(workspace_tools(repo), "list_files", pattern="**/*.md").details["files"] == ["README.md", "docs/readme.md"]
    assert call(workspace_tools(repo), "list_files", pattern="*.rs").result == "No files matching '*.rs' in the workspace.\n"


def test_list_outside_a_repo_walks_and_skips_junk(tmp_path: Path) -> None:
    for rel in ["a.py", "pkg/b.py", "__pycache__/a.cpython-311.pyc", "node_modules/x/index.js", ".venv/bin/python", "pkg/c.pyc"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    assert call(workspace_tools(tmp_path), "list_files").details["files"] == ["a.py", "pkg/b.py"]


def test_list_is_bounded_and_says_how_many_were_cut(tmp_path: Path) -> None:
    for i in range(620):
        (tmp_path / f"f{i:04}.txt").write_text("")
    result = call(workspace_tools(tmp_path), "list_files")
    lines = result.result.splitlines()
    assert lines[0] == "620 files in the workspace:"
    assert len(lines) == 1 + 500 + 1
    assert lines[-1] == "… and 120 more not shown; narrow the list with path or pattern."
    assert result.details["truncated"] is True and result.details["total"] == 620


def test_list_missing_folder(repo: Path) -> None:
    assert call(workspace_tools(repo), "list_files", path="nope").error_code == ErrorCode.FILE_NOT_FOUND


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("src/a.py", "*.py", True),
        ("src/a.py", "src/*.py", True),
        ("src/deep/a.py", "src/*.py", False),
        ("src/deep/a.py", "src/**/*.py", True),
        ("src/a.py", "src/**/*.py", True),
        ("a.txt", "[ab].txt", True),
        ("c.txt", "[!ab].txt", True),
        ("a.pyc", "*.py", False),
    ],
)
def test_glob_rules(path: str, pattern: str, expected: bool) -> None:
    assert matches_glob(path, pattern) is expected


# -- search_text -----------------------------------------------------------------------------------


def test_search_prints_path_line_text_and_skips_ignored_and_binary(repo: Path) -> None:
    result = call(workspace_tools(repo), "search_text", pattern=r"greet\(")
    assert result.result == (
        "src/app.py:7:     print(greet(\"world\"))\n"
        "src/util.py:1: def greet(name: str) -> str:\n"
        "src/util.py:6:     return greet(name).upper()\n"
    )
    assert result.details["matches"] == [
        {"path": "src/app.py", "line": 7, "text": '    print(greet("world"))'},
        {"path": "src/util.py", "line": 1, "text": "def greet(name: str) -> str:"},
        {"path": "src/util.py", "line": 6, "text": "    return greet(name).upper()"},
    ]
    assert result.details["total"] == 3 and result.details["truncated"] is False
    # text/data.bin is read and skipped when every file is read (no plain text for git grep to
    # look for first); with a prefilter git rules it out unread
    assert call(workspace_tools(repo), "search_text", pattern=r"gre+t\(").details["files_skipped"] == 1
    assert result.presentation.model_dump(exclude_none=True) == {"label": "Search", "icon": "search", "detail": r"greet\("}


def test_search_with_path_and_glob(repo: Path) -> None:
    tools = workspace_tools(repo)
    assert [m["path"] for m in call(tools, "search_text", pattern="greet", glob="*.txt").details["matches"]] == ["notes.txt"]
    assert {m["path"] for m in call(tools, "search_text", pattern="greet", path="src").details["matches"]} == {"src/app.py", "src/util.py"}
    assert call(tools, "search_text", pattern="line$", path="text/crlf.txt").details["total"] == 3  # \r is not part of a line
    assert call(tools, "search_text", pattern="^name", path="text/bom.txt").details["total"] == 1  # nor is the BOM
    assert call(tools, "search_text", pattern="crème", path="text").details["matches"][0]["path"] == "text/latin1.txt"


def test_search_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 260)
    result = call(workspace_tools(tmp_path), "search_text", pattern="hit")
    assert result.result.count("\n") == 201
    assert result.result.endswith("… 60 more matches not shown; narrow with path, glob or a stricter pattern.\n")
    assert len(result.details["matches"]) == 200 and result.details["total"] == 260


def test_search_bad_regex_is_an_argument_error(repo: Path) -> None:
    result = call(workspace_tools(repo), "search_text", pattern="def (")
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert "missing ), unterminated subpattern at position 4" in result.error
    assert result.presentation.detail == "def ("


def test_search_no_match_and_symlinks_out_are_not_read(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=abc\n")
    (repo / "leak.txt").symlink_to(secret)
    result = call(workspace_tools(repo), "search_text", pattern="TOKEN")
    assert result.result.startswith("No matches for 'TOKEN' in ")
    assert result.details["matches"] == []


def test_a_name_with_a_newline_reads_as_one_quoted_name(tmp_path: Path) -> None:
    (tmp_path / "nl\nname.txt").write_text("needle\n")
    (tmp_path / "plain.txt").write_text("needle\n")
    tools = workspace_tools(tmp_path)
    listed = call(tools, "list_files").result
    assert '"nl\\nname.txt"\n' in listed and "\nname.txt\n" not in listed and "plain.txt\n" in listed
    found = call(tools, "search_text", pattern="needle").result
    assert '"nl\\nname.txt":1: needle' in found and "plain.txt:1: needle" in found


def test_a_glob_with_many_wildcards_matches_a_long_name_in_linear_time(repo: Path) -> None:
    """``*a*a*a*a*b`` against a 255-character name backtracked for minutes with Python's re (a
    model's list_files pattern, or a workspace's secret_globs); on RE2 it is one linear pass."""
    import time

    from workspace_tools.workspace.secret_files import SecretPolicy

    name = "a" * 250 + ".txt"
    (repo / name).write_text("x\n")
    started = time.monotonic()
    assert not matches_glob(name, "*a*a*a*a*a*a*a*b")
    assert SecretPolicy(("*a*a*a*a*a*a*a*b",), ()).matches(name) is False
    found = call(workspace_tools(repo), "list_files", pattern="*a*a*a*a*a*a*a*b").details["files"]
    assert found == []
    assert time.monotonic() - started < 30  # the backtracking engine took minutes on the first line alone


def test_a_glob_matches_a_name_that_is_not_utf8() -> None:
    """RE2 takes only encodable text; a file name with an undecodable byte (``os.fsdecode``'s
    surrogate) is matched with that character as one unknown character, never an error."""
    assert matches_glob("key\udce9.pem", "*.pem")
    assert matches_glob("caf\udce9.txt", "caf?.txt")
    assert not matches_glob("caf\udce9.txt", "*.pem")
