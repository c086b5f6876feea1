"""`cog undo` (issue 9 §4) after real `cog edit` runs (replayed cassettes): the files come back
byte for byte, --dry-run prints the reverse diff and writes nothing, a file changed since the
run is refused by name with nothing written, created files are deleted, CRLF/BOM/mode survive,
and a thread is walked back run by run, each run once."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPLAY, cog_argv, cog_env, run_cog

OPS = Path("calc") / "ops.py"
FIX = ["edit", "--model", REPLAY, "--sandbox", "off", "Fix the failing test"]


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file outside .git and .cog: its bytes and permission bits."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".git", ".cog", ".pytest_cache") or "__pycache__" in rel.parts or not path.is_file():
            continue
        out[rel.as_posix()] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def cassette(path: Path, *turns: tuple[str, list[dict[str, Any]]]) -> str:
    """A replay cassette with these (text, tool calls) turns and a closing answer."""
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "openai:gpt-4o", "createdAt": "2026-12-02T14:00:00Z"}]
    for i, (text, calls) in enumerate(turns):
        lines.append({"type": "turn", "text": text, "toolCalls": [{"id": f"c{i}_{j}", **c} for j, c in enumerate(calls)],
                      "usage": {"inputTokens": 10, "outputTokens": 5}, "stopReason": "tool_calls"})
    lines.append({"type": "turn", "text": "Done.", "toolCalls": [], "usage": {"inputTokens": 10, "outputTokens": 5}, "stopReason": "stop"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return f"replay:{path}"


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    return make_repo("calc")


def test_undo_puts_the_file_back_byte_for_byte_and_only_once(calc: Path) -> None:
    before = snapshot(calc)
    run = run_cog(FIX, calc)
    assert run.returncode == 0, run.stderr
    assert b"return a + b" in (calc / OPS).read_bytes()

    undo = run_cog(["undo"], calc)
    assert undo.returncode == 0, undo.stderr
    assert snapshot(calc) == before
    assert "reverted 1 file: calc/ops.py" in undo.stderr
    assert subprocess.run(["git", "status", "--porcelain"], cwd=calc, capture_output=True, text=True).stdout == ""

    again = run_cog(["undo"], calc)
    assert again.returncode == 2 and "undone already" in again.stderr
    assert snapshot(calc) == before


def test_dry_run_prints_the_reverse_diff_and_writes_nothing(calc: Path) -> None:
    assert run_cog(FIX, calc).returncode == 0
    after = snapshot(calc)
    dry = run_cog(["undo", "--dry-run"], calc)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == (
        "diff --git a/calc/ops.py b/calc/ops.py\n"
        "--- a/calc/ops.py\n"
        "+++ b/calc/ops.py\n"
        "@@ -1,6 +1,6 @@\n"
        " def add(a: int, b: int) -> int:\n"
        '     """Return the sum of a and b."""\n'
        "-    return a + b\n"
        "+    return a - b\n"
        " \n"
        " \n"
        " def sub(a: int, b: int) -> int:\n"
    )
    assert "nothing was written" in dry.stderr
    assert snapshot(calc) == after
    # the reverse diff is what undo does: git applies it to the same result
    subprocess.run(["git", "apply", "-"], cwd=calc, input=dry.stdout, text=True, check=True)
    assert (calc / OPS).read_bytes() == subprocess.run(["git", "show", f"HEAD:{OPS.as_posix()}"], cwd=calc, capture_output=True).stdout


@pytest.mark.parametrize(
    "change",
    [
        lambda text: text.replace("return a + b", "return a + b  # checked by hand"),  # the changed line itself
        lambda text: "import math\n" + text,  # lines moved
        lambda text: text.replace('"""Return the sum of a and b."""', '"""Sum."""'),  # the hunk's context
    ],
    ids=["changed-line", "moved", "context"],
)
def test_a_file_changed_since_the_run_is_refused_by_name_and_left_alone(calc: Path, change: Callable[[str], str]) -> None:
    assert run_cog(FIX, calc).returncode == 0
    path = calc / OPS
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    edited = snapshot(calc)
    for args in (["undo"], ["undo", "--dry-run"]):
        out = run_cog(args, calc)
        assert out.returncode == 1, out.stderr
        assert "undo refused: calc/ops.py changed since the run" in out.stderr and out.stdout == ""
        assert "to undo it: put the file back as the run left it" in out.stderr  # the cause and the fix
        assert snapshot(calc) == edited


def test_nothing_is_written_when_one_of_several_files_changed(calc: Path, tmp_path: Path) -> None:
    model = cassette(
        tmp_path / "two.jsonl",
        ("", [{"name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": "return a - b\n\n\ndef sub", "new_text": "return a + b\n\n\ndef sub"}}]),
        ("", [{"name": "write_file", "arguments": {"path": "calc/__init__.py", "content": "from calc.ops import add\n"}}]),
    )
    before = snapshot(calc)
    assert run_cog(["edit", "--model", model, "Two files"], calc).returncode == 0
    (calc / "calc" / "__init__.py").write_text("changed by hand\n", encoding="utf-8")
    now = snapshot(calc)
    out = run_cog(["undo"], calc)
    assert out.returncode == 1 and "calc/__init__.py changed since the run" in out.stderr
    assert snapshot(calc) == now  # calc/ops.py was not reverted either
    (calc / "calc" / "__init__.py").write_text("from calc.ops import add\n", encoding="utf-8")  # as the run left it
    assert run_cog(["undo"], calc).returncode == 0
    assert snapshot(calc) == before


def test_created_files_are_deleted_and_crlf_bom_and_mode_survive(calc: Path, tmp_path: Path) -> None:
    win = calc / "win.txt"
    win.write_bytes("\ufeffline one\r\nline two\r\nline three\r\n".encode("utf-8"))
    os.chmod(win, 0o751)
    latin = calc / "latin.txt"
    latin.write_bytes("caf\xe9\nna\xefve\n".encode("latin-1"))
    tail = calc / "no_newline.txt"
    tail.write_bytes(b"first\nlast without newline")
    model = cassette(
        tmp_path / "files.jsonl",
        ("Editing.", [
            {"name": "edit_file", "arguments": {"path": "win.txt", "old_text": "line two", "new_text": "line 2\nline 2.5"}},
            {"name": "write_file", "arguments": {"path": "docs/new/notes.md", "content": "# Notes\n\nmade by the run\n"}},
            {"name": "edit_file", "arguments": {"path": "latin.txt", "old_text": "na\u00efve", "new_text": "na\u00efve\nd\u00e9j\u00e0"}},
            {"name": "edit_file", "arguments": {"path": "no_newline.txt", "old_text": "last without newline", "new_text": "last, now with one\n"}},
        ]),
        ("Again.", [
            {"name": "edit_file", "arguments": {"path": "win.txt", "old_text": "line 2.5", "new_text": "line two and a half"}},
            {"name": "write_file", "arguments": {"path": "empty.txt", "content": ""}},
        ]),
    )
    before = snapshot(calc)
    run = run_cog(["edit", "--model", model, "--json", "Edit files"], calc)
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in run.stdout.splitlines() if '"tool-result"' in line]
    assert [r.get("error") for r in results] == [None] * 6
    assert win.read_bytes() == "\ufeffline one\r\nline 2\r\nline two and a half\r\nline three\r\n".encode("utf-8")
    assert (calc / "docs" / "new" / "notes.md").exists() and (calc / "empty.txt").exists()

    dry = run_cog(["undo", "--dry-run"], calc)
    assert "deleted file mode" in dry.stdout and "-# Notes" in dry.stdout
    raw = subprocess.run([*cog_argv(), "undo", "--dry-run"], cwd=calc, env=cog_env(), capture_output=True).stdout
    assert b"+line two\r\n" in raw and b"-line 2\r\n" in raw  # the reverse diff as git writes it, CRLF kept

    undo = run_cog(["undo"], calc)
    assert undo.returncode == 0, undo.stderr
    assert "docs/new/notes.md (deleted)" in undo.stderr and "empty.txt (deleted)" in undo.stderr
    assert snapshot(calc) == before  # bytes and modes, the new files gone


def test_undo_takes_the_last_run_of_the_named_thread(calc: Path, tmp_path: Path) -> None:
    assert run_cog(FIX, calc).returncode == 0
    fixed = snapshot(calc)
    listed = run_cog(["thread", "list", "--json"], calc)
    thread_id = json.loads(listed.stdout)[0]["id"]
    model = cassette(
        tmp_path / "more.jsonl",
        ("", [{"name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": '"""Return a minus b."""', "new_text": '"""Return a minus b (checked)."""'}}]),
    )
    assert run_cog(["edit", "--model", model, "--thread", thread_id, "Document sub"], calc).returncode == 0
    assert run_cog(["undo", thread_id[:12]], calc).returncode == 0
    assert snapshot(calc) == fixed  # the second run is undone, the fix of the first is kept
    assert run_cog(["undo", thread_id], calc).returncode == 0  # again: walks back the first run too
    again = run_cog(["undo", thread_id], calc)
    assert again.returncode == 2 and "undone already" in again.stderr


def test_no_such_thread_and_no_runs_exit_2(calc: Path, tmp_path: Path) -> None:
    none_yet = run_cog(["undo"], calc)
    assert none_yet.returncode == 2 and "nothing to undo" in none_yet.stderr
    assert not (calc / ".cog").exists()
    model = cassette(tmp_path / "read.jsonl", ("", [{"name": "read_file", "arguments": {"path": "calc/ops.py"}}]))
    assert run_cog(["edit", "--model", model, "Just look"], calc).returncode == 0
    looked = run_cog(["undo"], calc)
    assert looked.returncode == 2 and "changed no files" in looked.stderr
    unknown = run_cog(["undo", "thr_doesnotexist"], calc)
    assert unknown.returncode == 2 and "no thread 'thr_doesnotexist'" in unknown.stderr
