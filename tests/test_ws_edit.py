"""edit_file: exact-match replace, git-style diffs that apply, bytes the edit did not touch kept."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ws_helpers import assert_diff_applies, call, copy_tree, diff_counts, snapshot

from cogcli import invoke_tool
from cogcli.contract.errors import ErrorCode
from workspace_tools import workspace_tools
from workspace_tools.text.diffs import edit_blocks, format_hunks


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo("workspace")


@pytest.fixture
def before(repo: Path, tmp_path: Path) -> Path:
    """A copy of the repo as it was before the test's edits, to apply the diffs to."""
    return copy_tree(repo, tmp_path / "before")


def edit(repo: Path, path: str, old: str, new: str, **more: object):
    return call(workspace_tools(repo), "edit_file", path=path, old_text=old, new_text=new, **more)


def test_edit_reports_content_details_and_presentation(repo: Path, before: Path) -> None:
    result = edit(repo, "src/util.py", 'return f"Hello, {name}!"', 'return f"Hi, {name}."')
    assert result.ok, result.error
    assert result.result == {"path": "src/util.py", "replacements": 1}
    assert result.presentation is not None
    assert result.presentation.model_dump(exclude_none=True) == {"label": "Edit file", "icon": "file-pen", "detail": "src/util.py"}
    assert result.details["diff"] == (
        "diff --git a/src/util.py b/src/util.py\n"
        "--- a/src/util.py\n"
        "+++ b/src/util.py\n"
        "@@ -1,5 +1,5 @@\n"
        " def greet(name: str) -> str:\n"
        '-    return f"Hello, {name}!"\n'
        '+    return f"Hi, {name}."\n'
        " \n"
        " \n"
        " def shout(name: str) -> str:\n"
    )
    assert (result.details["added"], result.details["removed"]) == (1, 1)
    assert 'return f"Hi, {name}."' in (repo / "src/util.py").read_text()
    assert "diff" not in result.model_text()  # the model reads content only
    assert_diff_applies(before, repo, result.details["diff"])


def test_replace_all_counts_and_diffs_every_occurrence(repo: Path, before: Path) -> None:
    result = edit(repo, "src/util.py", "name", "who", replace_all=True)
    assert result.result == {"path": "src/util.py", "replacements": 4}
    assert (repo / "src/util.py").read_text() == (before / "src/util.py").read_text().replace("name", "who")
    assert result.details["added"] == result.details["removed"] == 4  # lines 1, 2, 5 and 6
    assert_diff_applies(before, repo, result.details["diff"])


def test_crlf_file_matches_lf_text_and_stays_crlf(repo: Path, before: Path) -> None:
    result = edit(repo, "text/crlf.txt", "second line\nthird", "2nd line\nadded line\nthird")
    assert result.ok, result.error
    assert (repo / "text/crlf.txt").read_bytes() == b"first line\r\n2nd line\r\nadded line\r\nthird line\r\n"
    assert "-second line\r\n" in result.details["diff"]
    assert_diff_applies(before, repo, result.details["diff"])


def test_bom_is_kept_and_the_diff_of_line_one_applies(repo: Path, before: Path) -> None:
    result = edit(repo, "text/bom.txt", 'name = "café"', 'name = "crème"')
    assert result.ok, result.error
    assert (repo / "text/bom.txt").read_bytes() == '\ufeffname = "crème"\nsize = 1\n'.encode()
    assert_diff_applies(before, repo, result.details["diff"])


def test_latin1_file_stays_latin1(repo: Path, before: Path) -> None:
    result = edit(repo, "text/latin1.txt", "naïve", "naïveté")
    assert result.ok, result.error
    assert (repo / "text/latin1.txt").read_bytes() == "café crème\nnaïveté\n".encode("latin-1")
    assert_diff_applies(before, repo, result.details["diff"], encoding="latin-1")


def test_latin1_file_refuses_text_it_cannot_hold(repo: Path) -> None:
    old = snapshot(repo)
    result = edit(repo, "text/latin1.txt", "naïve", "€ naïve")
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert "latin-1" in result.error and "'€'" in result.error
    assert snapshot(repo) == old


def test_missing_final_newline_stays_missing(repo: Path, before: Path) -> None:
    result = edit(repo, "text/noeol.txt", "gamma", "delta")
    assert (repo / "text/noeol.txt").read_bytes() == b"alpha\nbeta\ndelta"
    assert result.details["diff"].endswith("+delta\n\\ No newline at end of file\n")
    assert_diff_applies(before, repo, result.details["diff"])


def test_untouched_lines_keep_their_bytes(repo: Path, before: Path) -> None:
    result = edit(repo, "text/tabs.txt", "with spaces", "with four spaces")
    assert (repo / "text/tabs.txt").read_bytes() == b"\tindented with a tab\n    indented with four spaces\n"
    assert_diff_applies(before, repo, result.details["diff"])


@pytest.mark.parametrize("mode", [0o755, 0o600, 0o640])
def test_permission_bits_are_kept(repo: Path, mode: int) -> None:
    target = repo / "src/app.py"
    target.chmod(mode)
    assert edit(repo, "src/app.py", "main()\n", "main()  # run\n").ok
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".cogtmp")]  # no temp file left


def test_no_match_shows_the_closest_lines_and_leaves_the_file(repo: Path) -> None:
    old = snapshot(repo)
    result = edit(repo, "src/util.py", "def shout(name):\n    return greet(name).upper()", "x")
    assert result.error_code == ErrorCode.EDIT_NO_MATCH
    assert "old_text was not found in src/util.py" in result.error
    assert "% similar) is at lines 5-6" in result.error
    assert ">    5\tdef shout(name: str) -> str:" in result.error
    assert ">    6\t    return greet(name).upper()" in result.error
    assert "     4\t" in result.error  # a line of context around it
    assert snapshot(repo) == old


def test_no_match_says_when_new_text_is_already_there(repo: Path) -> None:
    result = edit(repo, "src/util.py", "return greet(name).lower()", "return greet(name).upper()")
    assert result.error_code == ErrorCode.EDIT_NO_MATCH
    assert "new_text is already in the file (line 6)" in result.error


def test_no_match_without_anything_close_says_so_plainly(repo: Path) -> None:
    result = edit(repo, "src/util.py", "completely unrelated words", "x")
    assert result.error_code == ErrorCode.EDIT_NO_MATCH
    assert "closest" not in result.error


def test_several_matches_list_their_lines_and_leave_the_file(repo: Path) -> None:
    old = snapshot(repo)
    result = edit(repo, "src/util.py", "(name: str) -> str:", "(name):")
    assert result.error_code == ErrorCode.EDIT_AMBIGUOUS
    assert "occurs 2 times in src/util.py (at lines 1, 5)" in result.error
    assert "replace_all" in result.error
    assert snapshot(repo) == old


@pytest.mark.parametrize(
    ("path", "old", "new", "code", "says"),
    [
        ("src/missing.py", "a", "b", ErrorCode.FILE_NOT_FOUND, "does not exist"),
        ("text/data.bin", "binary", "text", ErrorCode.FILE_NOT_TEXT, "not a text file"),
        ("src", "a", "b", ErrorCode.INVALID_ARGUMENTS, "is a directory"),
        ("src/util.py", "", "b", ErrorCode.INVALID_ARGUMENTS, "old_text is empty"),
        ("src/util.py", "greet", "greet", ErrorCode.INVALID_ARGUMENTS, "the same"),
        (".git/HEAD", "ref", "x", ErrorCode.PATH_OUTSIDE_WORKSPACE, ".git/"),
        ("../outside.txt", "a", "b", ErrorCode.PATH_OUTSIDE_WORKSPACE, "'..' leads out"),
    ],
)
def test_errors_leave_every_file_unchanged(repo: Path, path: str, old: str, new: str, code: str, says: str) -> None:
    before_bytes = snapshot(repo)
    head = (repo / ".git" / "HEAD").read_bytes()
    result = edit(repo, path, old, new)
    assert result.error_code == code
    assert says in result.error
    assert result.presentation is not None and result.presentation.label == "Edit file"
    assert snapshot(repo) == before_bytes
    assert (repo / ".git" / "HEAD").read_bytes() == head


def test_concurrent_edits_of_one_file_are_all_kept(repo: Path) -> None:
    target = repo / "many.txt"
    target.write_text("".join(f"line {i}\n" for i in range(40)))
    tools = workspace_tools(repo)
    results = []

    async def main() -> None:
        async def one(i: int) -> None:
            results.append(
                await invoke_tool("edit_file", {"path": "many.txt", "old_text": f"line {i}\n", "new_text": f"LINE {i}\n"}, tools=tools)
            )

        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon(one, i)

    anyio.run(main)
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert target.read_text() == "".join(f"LINE {i}\n" for i in range(40))


def test_a_large_file_gets_one_small_hunk_with_the_right_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"row {i}\n" for i in range(200_000)))
    result = call(workspace_tools(tmp_path), "edit_file", path="big.txt", old_text="row 150000\n", new_text="changed\n")
    assert result.details["diff"] == (
        "diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n"
        "@@ -149998,7 +149998,7 @@\n row 149997\n row 149998\n row 149999\n-row 150000\n+changed\n"
        " row 150001\n row 150002\n row 150003\n"
    )


# -- properties ------------------------------------------------------------------------------------

_WORDS = st.sampled_from(["a", "b", "ab", " ", "\t", "\n", "\n", "x\n", "é", "\r"])
_TEXT = st.lists(_WORDS, min_size=1, max_size=60).map("".join)


def apply_python(old: str, diff: str) -> str:
    """Apply a unified diff to ``old`` with unidiff's parse (no git), for fast property checks."""
    from unidiff import PatchSet

    lines = _split(old)
    out: list[str] = []
    at = 0
    for hunk in PatchSet(diff)[0]:
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        out.extend(lines[at:start])
        at = start
        body = list(hunk)
        for k, line in enumerate(body):
            if line.line_type == "\\":
                continue  # "\ No newline at end of file": the line before has no newline
            text = line.value
            if k + 1 < len(body) and body[k + 1].line_type == "\\":
                text = text.removesuffix("\n")
            if line.is_context or line.is_removed:
                assert lines[at] == text, (at, lines[at], text)
                at += 1
            if line.is_context or line.is_added:
                out.append(text)
    out.extend(lines[at:])
    return "".join(out)


def _split(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, str, str]:
    text = draw(_TEXT)
    i = draw(st.integers(0, len(text) - 1))
    j = draw(st.integers(i + 1, min(len(text), i + 12)))
    return text, text[i:j], draw(st.lists(_WORDS, max_size=5).map("".join))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=edits())
def test_edit_equals_str_replace_and_its_diff_rebuilds_the_file(tmp_path: Path, case: tuple[str, str, str]) -> None:
    text, old, new = case
    if old == new or ("\r\n" in text and text.count("\r\n") == text.count("\n")):
        return  # a pure-CRLF text is matched in LF terms: covered by the CRLF tests
    target = tmp_path / "f.txt"
    target.write_bytes(text.encode())
    result = call(workspace_tools(tmp_path, include_git=False), "edit_file", path="f.txt", old_text=old, new_text=new, replace_all=True)
    assert result.ok, result.error
    assert target.read_bytes() == text.replace(old, new).encode()
    assert result.result["replacements"] == text.count(old)
    diff = result.details["diff"]
    assert apply_python(text, diff) == text.replace(old, new)
    assert (result.details["added"], result.details["removed"]) == diff_counts(diff)


@pytest.fixture(scope="module")
def git_sandbox() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="cog-ws-edit-"))
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@settings(max_examples=120, deadline=None)
@given(case=edits(), crlf=st.booleans())
def test_edit_diffs_apply_with_git(git_sandbox: Path, case: tuple[str, str, str], crlf: bool) -> None:
    text, old, new = case
    text, old, new = (s.replace("\r", "") for s in (text, old, new))
    if not old or old == new:
        return
    disk = text.replace("\n", "\r\n") if crlf else text
    target = git_sandbox / "f.txt"
    target.write_bytes(disk.encode())
    result = call(workspace_tools(git_sandbox, include_git=False), "edit_file", path="f.txt", old_text=old, new_text=new, replace_all=True)
    assert result.ok, result.error
    expected = text.replace(old, new)
    if crlf and "\n" in text:
        expected = expected.replace("\n", "\r\n")
    assert target.read_bytes() == expected.encode()
    target.write_bytes(disk.encode())
    applied = subprocess.run(["git", "apply", "-"], cwd=git_sandbox, input=result.details["diff"].encode(), capture_output=True)
    assert applied.returncode == 0, applied.stderr.decode() + result.details["diff"]
    assert target.read_bytes() == expected.encode()


def test_diff_blocks_merge_nearby_changes_into_one_hunk() -> None:
    text = "".join(f"{i}\n" for i in range(30))
    # changes at lines 5 and 11 (6 lines apart: within 2 × 3 context) share a hunk; 25 gets its own
    positions = [text.index("5\n"), text.index("11\n"), text.index("25\n")]
    hunks = format_hunks(edit_blocks(text, sorted(positions), 1, "X"))
    assert [line for line in hunks.splitlines() if line.startswith("@@")] == ["@@ -3,13 +3,13 @@", "@@ -23,7 +23,7 @@"]


def test_edit_does_not_follow_a_symlink_out(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    os.symlink(outside, repo / "link.txt")
    result = edit(repo, "link.txt", "keep me", "changed")
    assert result.error_code == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert outside.read_text() == "keep me\n"


def test_a_huge_miss_is_worded_quickly_and_outside_the_files_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 100 KB one-line file and a 100 KB old_text that is not in it: the closest-match search
    (difflib) used to run for minutes inside the file's write lock, past the call's timeout,
    blocking every other writer. It is bounded now, and runs after the lock is let go."""
    import random
    import string

    from cogcli import invoke_tool
    from workspace_tools.files import closest, edit

    rng = random.Random(7)
    (tmp_path / "big.txt").write_text("".join(rng.choice(string.ascii_letters) for _ in range(100_000)))
    old = "".join(rng.choice(string.ascii_letters) for _ in range(100_000))
    held: list[bool] = []
    real_message = edit._no_match_message

    def message_and_check_lock(*args, **kwargs):  # type: ignore[no-untyped-def]
        import fcntl

        fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
        try:  # the workspace's write lock, tried without waiting: free once the edit let go of it
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return real_message(*args, **kwargs)

    monkeypatch.setattr(edit, "_no_match_message", message_and_check_lock)
    tools = {t.name: t for t in workspace_tools(tmp_path)}
    result = anyio.run(lambda: invoke_tool(tools["edit_file"], {"path": "big.txt", "old_text": old, "new_text": "x"}, timeout=30))
    assert result.error_code == "EDIT_NO_MATCH", result.error
    assert held == [False]
    assert closest._MAX_COMPARED <= 5_000 and closest._DEADLINE <= 5
