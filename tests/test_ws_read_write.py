"""read_file and write_file: numbered lines and ranges, size and type errors, atomic writes with diffs."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from ws_helpers import assert_diff_applies, call, copy_tree, snapshot

from cogcli.contract.errors import ErrorCode
from workspace_tools import workspace_tools


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo("workspace")


def read(root: Path, path: str, **more: object):
    return call(workspace_tools(root, max_read_bytes=more.pop("max_read_bytes", 256_000)), "read_file", path=path, **more)  # type: ignore[arg-type]


# -- read_file -------------------------------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(repo: Path) -> None:
    result = read(repo, "src/util.py")
    assert result.result == (
        "     1\tdef greet(name: str) -> str:\n"
        '     2\t    return f"Hello, {name}!"\n'
        "     3\t\n"
        "     4\t\n"
        "     5\tdef shout(name: str) -> str:\n"
        "     6\t    return greet(name).upper()\n"
    )
    assert result.details == {"path": "src/util.py", "start_line": 1, "end_line": 6, "total_lines": 6, "truncated": False}
    assert result.presentation.model_dump(exclude_none=True) == {"label": "Read file", "icon": "file", "detail": "src/util.py"}


def test_read_a_range_says_where_to_read_on(repo: Path) -> None:
    result = read(repo, "src/app.py", offset=3, limit=4)
    assert result.result == (
        "     3\tfrom src.util import greet\n     4\t\n     5\t\n     6\tdef main() -> None:\n"
        "[showing lines 3-6 of 11; read on with offset=7]\n"
    )
    assert result.details == {"path": "src/app.py", "start_line": 3, "end_line": 6, "total_lines": 11, "truncated": True}
    assert result.presentation.detail == "src/app.py:3-6"


def test_read_past_the_end_is_an_argument_error(repo: Path) -> None:
    result = read(repo, "src/app.py", offset=50)
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert "offset 50 is past the end of src/app.py, which has 11 lines" in result.error


def test_read_shows_text_in_its_encoding_without_crlf_or_bom(repo: Path) -> None:
    assert read(repo, "text/crlf.txt").result == "     1\tfirst line\n     2\tsecond line\n     3\tthird line\n"
    assert read(repo, "text/bom.txt").result == '     1\tname = "café"\n     2\tsize = 1\n'
    assert read(repo, "text/latin1.txt").result == "     1\tcafé crème\n     2\tnaïve\n"
    noeol = read(repo, "text/noeol.txt")
    assert noeol.result == "     1\talpha\n     2\tbeta\n     3\tgamma\n"
    assert noeol.details["total_lines"] == 3


def test_read_errors_have_codes(repo: Path) -> None:
    assert read(repo, "src/nope.py").error_code == ErrorCode.FILE_NOT_FOUND
    binary = read(repo, "text/data.bin")
    assert binary.error_code == ErrorCode.FILE_NOT_TEXT and "NUL" in binary.error
    assert read(repo, "src").error_code == ErrorCode.INVALID_ARGUMENTS
    (repo / "empty.txt").write_text("")
    empty = read(repo, "empty.txt")
    assert empty.ok and empty.details["total_lines"] == 0 and "empty" in empty.result


def test_big_file_needs_a_range_and_a_range_works(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("".join(f"entry {i}\n" for i in range(1, 100_001)))
    whole = read(tmp_path, "big.log", max_read_bytes=10_000)
    assert whole.error_code == ErrorCode.FILE_TOO_LARGE
    assert "offset and limit" in whole.error
    part = read(tmp_path, "big.log", max_read_bytes=10_000, offset=50_000, limit=3)
    assert part.result == "" + "".join(f"{n:>6}\tentry {n}\n" for n in (50_000, 50_001, 50_002)) + (
        "[showing lines 50000-50002 of 100000; read on with offset=50003]\n"
    )
    capped = read(tmp_path, "big.log", max_read_bytes=1_000, offset=1, limit=10_000)
    assert capped.details["truncated"] and capped.details["end_line"] < 200
    assert "output limit of 1,000 bytes" in capped.result


def test_binary_data_after_the_range_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / "mixed").write_bytes(b"text\n" * 10 + b"\x00\x01")
    assert read(tmp_path, "mixed", offset=1, limit=2).error_code == ErrorCode.FILE_NOT_TEXT


# -- write_file ------------------------------------------------------------------------------------


def write(root: Path, path: str, content: str):
    return call(workspace_tools(root), "write_file", path=path, content=content)


def test_write_creates_folders_and_a_new_file_diff(repo: Path, tmp_path: Path) -> None:
    before = copy_tree(repo, tmp_path / "before")
    result = write(repo, "docs/new/guide.md", "# Guide\n\nStep one.\n")
    assert result.ok, result.error
    assert result.result == {"path": "docs/new/guide.md", "created": True, "lines": 3, "changed": True}
    assert result.presentation.model_dump(exclude_none=True) == {"label": "Write file", "icon": "file-plus", "detail": "docs/new/guide.md"}
    assert result.details["diff"] == (
        "diff --git a/docs/new/guide.md b/docs/new/guide.md\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/docs/new/guide.md\n@@ -0,0 +1,3 @@\n+# Guide\n+\n+Step one.\n"
    )
    assert (result.details["added"], result.details["removed"], result.details["created"]) == (3, 0, True)
    assert (repo / "docs/new/guide.md").read_text() == "# Guide\n\nStep one.\n"
    assert_diff_applies(before, repo, result.details["diff"])


def test_write_empty_new_file_diff_is_git_s(repo: Path, tmp_path: Path) -> None:
    before = copy_tree(repo, tmp_path / "before")
    result = write(repo, "empty.txt", "")
    assert result.details["diff"] == "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\n"
    assert_diff_applies(before, repo, result.details["diff"])


def test_overwrite_diffs_against_the_old_content_and_keeps_style(repo: Path, tmp_path: Path) -> None:
    (repo / "text/crlf.txt").chmod(0o751)
    before = copy_tree(repo, tmp_path / "before")
    result = write(repo, "text/crlf.txt", "first line\nsecond line, rewritten\nthird line\nfourth\n")
    assert result.result["created"] is False
    assert (repo / "text/crlf.txt").read_bytes() == b"first line\r\nsecond line, rewritten\r\nthird line\r\nfourth\r\n"
    assert stat.S_IMODE((repo / "text/crlf.txt").stat().st_mode) == 0o751
    assert (result.details["added"], result.details["removed"]) == (2, 1)
    assert_diff_applies(before, repo, result.details["diff"])


def test_overwrite_keeps_bom_and_latin1(repo: Path, tmp_path: Path) -> None:
    before = copy_tree(repo, tmp_path / "before")
    bom = write(repo, "text/bom.txt", 'name = "thé"\n')
    assert (repo / "text/bom.txt").read_bytes() == '\ufeffname = "thé"\n'.encode()
    assert_diff_applies(before, repo, bom.details["diff"])
    latin = write(repo, "text/latin1.txt", "déjà vu\n")
    assert (repo / "text/latin1.txt").read_bytes() == "déjà vu\n".encode("latin-1")
    assert_diff_applies(before, repo, latin.details["diff"], encoding="latin-1")
    euro = write(repo, "text/latin1.txt", "5 €\n")  # latin-1 cannot hold it: the new content is UTF-8
    assert (repo / "text/latin1.txt").read_bytes() == "5 €\n".encode()
    assert euro.ok


def test_rewriting_the_same_content_changes_nothing(repo: Path) -> None:
    target = repo / "src/util.py"
    stamp = target.stat().st_mtime_ns
    result = write(repo, "src/util.py", target.read_text())
    assert result.result["changed"] is False and result.details["diff"] == ""
    assert target.stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("src", ErrorCode.INVALID_ARGUMENTS),
        ("src/util.py/inner.txt", ErrorCode.INVALID_ARGUMENTS),
        (".git/config", ErrorCode.PATH_OUTSIDE_WORKSPACE),
        ("../escape.txt", ErrorCode.PATH_OUTSIDE_WORKSPACE),
    ],
)
def test_write_errors_leave_the_workspace_as_it_was(repo: Path, path: str, code: str) -> None:
    old = snapshot(repo)
    config = (repo / ".git" / "config").read_bytes()
    result = write(repo, path, "x\n")
    assert result.error_code == code, result.error
    assert snapshot(repo) == old
    assert (repo / ".git" / "config").read_bytes() == config
    assert not (repo.parent / "escape.txt").exists()


def test_write_through_a_symlink_out_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "out").symlink_to(outside)
    result = write(repo, "out/planted.txt", "x\n")
    assert result.error_code == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert "out is a symlink to" in result.error
    assert list(outside.iterdir()) == []
