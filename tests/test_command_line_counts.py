"""A command's changed files carry line counts like a tool write's (issue 52's gap): a run's
``run_command`` that rewrote, created and deleted text files says how many lines each gained and
lost — in its ``details.changed_files`` and in ``finish.filesChanged`` of ``--json`` — counted as
their unified diff counts them, from the bytes undo keeps. A binary file, one over 1 MB, or the files
past 4 MB counted for one command are not counted, and say so (``lines_not_counted``), so counting
stays bounded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_cog
from serve_helpers import write_cassette

from workspace_tools.shell.command_undo import COUNT_BYTES, line_stat

COMMAND = ("sed -i 's/return a - b/return a + b/' calc/ops.py && printf 'one\\ntwo\\nthree\\n' > notes.txt && rm calc/__init__.py"
           f" && printf 'a\\0b' > blob.bin && head -c {COUNT_BYTES + 1} /dev/zero | tr '\\\\0' x > big.txt")


def test_a_commands_changes_carry_line_counts_in_its_details_and_the_runs_finish(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    removed = len((repo / "calc" / "__init__.py").read_text().splitlines())
    model = write_cassette(tmp_path / "c.jsonl", [{"toolCalls": [{"id": "r1", "name": "run_command", "arguments": {"command": COMMAND}}]},
                                                  {"text": "Done."}])
    out = run_cog(["edit", "--json", "--yes", "--sandbox", "off", "--model", model, "change things"], repo)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    ran = next(e for e in events if e["type"] == "tool-result" and e["toolName"] == "run_command")
    assert {f["path"]: f for f in ran["details"]["changed_files"]} == {
        "big.txt": {"path": "big.txt", "change": "created", "lines_not_counted": "over 1 MB"},
        "blob.bin": {"path": "blob.bin", "change": "created", "lines_not_counted": "binary"},
        "calc/__init__.py": {"path": "calc/__init__.py", "change": "deleted", "added": 0, "removed": removed},
        "calc/ops.py": {"path": "calc/ops.py", "change": "modified", "added": 2, "removed": 2},  # the sed hit add and sub
        "notes.txt": {"path": "notes.txt", "change": "created", "added": 3, "removed": 0},
    }
    finish = events[-1]
    assert {f["path"]: f for f in finish["filesChanged"]} == {
        "big.txt": {"path": "big.txt", "added": 0, "removed": 0, "linesNotCounted": "over 1 MB"},
        "blob.bin": {"path": "blob.bin", "added": 0, "removed": 0, "linesNotCounted": "binary"},
        "calc/__init__.py": {"path": "calc/__init__.py", "added": 0, "removed": removed},
        "calc/ops.py": {"path": "calc/ops.py", "added": 2, "removed": 2},
        "notes.txt": {"path": "notes.txt", "added": 3, "removed": 0},
    }


@pytest.mark.parametrize(("before", "after", "counted"), [
    (b"a\nb\nc\n", b"a\nB\nc\nd\n", (2, 1)),
    (None, b"x\ny", (2, 0)),
    (b"x\ny\n", None, (0, 2)),
    (b"same\n", b"same\n", (0, 0)),  # a change of mode alone
    (b"\x89PNG\r\n\x1a\n\0", b"x", "binary"),
    (b"x" * (COUNT_BYTES + 1), b"x", "over 1 MB"),
])
def test_line_stat_counts_like_a_diff_and_bounds_its_cost(before: bytes | None, after: bytes | None, counted: object) -> None:
    assert line_stat(before, after) == counted


def test_a_commands_files_are_counted_up_to_a_total() -> None:
    assert line_stat(b"a\n", b"b\n", room=3) == "over 4 MB counted for this command"
    assert line_stat(b"a\n", b"b\n", room=4) == (1, 1)


def test_the_files_past_the_commands_total_are_not_counted_and_say_so(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    command = "for i in 1 2 3 4 5; do yes line | head -c 900000 > f$i.txt; done"  # 4.5 MB of new text
    model = write_cassette(tmp_path / "c.jsonl", [{"toolCalls": [{"id": "r1", "name": "run_command", "arguments": {"command": command}}]},
                                                  {"text": "Done."}])
    out = run_cog(["edit", "--json", "--yes", "--sandbox", "off", "--model", model, "make files"], repo)
    assert out.returncode == 0, out.stderr
    finish = [json.loads(line) for line in out.stdout.splitlines()][-1]
    assert {f["path"]: (f["added"], f.get("linesNotCounted")) for f in finish["filesChanged"]} == {
        **{f"f{i}.txt": (180_000, None) for i in range(1, 5)}, "f5.txt": (0, "over 4 MB counted for this command")}
