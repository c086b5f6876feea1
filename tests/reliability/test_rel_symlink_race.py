"""Symlink races: a folder swapped for a symlink to the outside after a path was checked and
before the write. The write goes through descriptors of the folders opened without following
symlinks, so it is refused and nothing — file, temp file or folder — appears outside.
(Symlinks that are already there when the path is checked: tests/test_ws_paths.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from rel_helpers import run_while

from cogcli import invoke_tool
from workspace_tools.files.edit import edit_file_tool
from workspace_tools.workspace.paths import Workspace
from workspace_tools.files.write import write_file_tool

CONTENT = "value = 1\n"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.py").write_text(CONTENT)
    return root, outside


def swap_in_symlink(root: Path, outside: Path) -> None:
    """What an attacker does in the race window: the folder goes, a symlink out takes its place."""
    os.rename(root / "sub", root / "sub.real")
    os.symlink(outside, root / "sub")


def swapping_workspace(root: Path, outside: Path) -> Workspace:
    """A workspace whose resolve() checks the path and then lets the swap happen."""
    ws = Workspace(root)
    check = ws.resolve

    def resolve_then_swap(path: str, *, for_write: bool = False) -> Path:
        resolved = check(path, for_write=for_write)
        if for_write and not (root / "sub").is_symlink():
            swap_in_symlink(root, outside)
        return resolved

    ws.resolve = resolve_then_swap  # type: ignore[method-assign]
    return ws


def everything_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_edit_through_a_folder_swapped_after_the_check_is_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (outside / "a.py").write_text(CONTENT)  # the swapped-in target even has a file to match
    tool = edit_file_tool(swapping_workspace(root, outside))
    result = anyio.run(invoke_tool, tool, {"path": "sub/a.py", "old_text": "value = 1", "new_text": "value = 2"})
    assert result.error_code == "PATH_OUTSIDE_WORKSPACE", result.error
    assert result.error == "sub became a symlink after the path was checked; it was not followed and nothing was written"
    assert (outside / "a.py").read_text() == CONTENT and everything_under(outside) == ["a.py"]
    assert (root / "sub.real" / "a.py").read_text() == CONTENT and everything_under(root / "sub.real") == ["a.py"]


def test_write_of_a_new_file_in_a_new_folder_through_a_swapped_folder_creates_nothing_outside(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    tool = write_file_tool(swapping_workspace(root, outside))
    result = anyio.run(invoke_tool, tool, {"path": "sub/new/deeper/b.py", "content": "x = 1\n"})
    assert result.error_code == "PATH_OUTSIDE_WORKSPACE", result.error
    assert everything_under(outside) == []  # not even the folders
    assert everything_under(root) == ["sub", "sub.real", "sub.real/a.py"]


def test_a_folder_flipping_between_real_and_symlink_never_lets_a_write_out(layout: tuple[Path, Path]) -> None:
    """A thread flips sub/ between the real folder and a symlink out while edit_file and write_file
    run 300 times: each call writes inside or is refused; nothing ever appears outside."""
    root, outside = layout
    ws = Workspace(root)
    edit, write = edit_file_tool(ws), write_file_tool(ws)

    def flip(n: int) -> None:  # the writer may re-make sub/ as a folder at any moment: each step may lose a race
        try:
            if (root / "sub").is_dir() and not (root / "sub").is_symlink():
                os.rename(root / "sub", root / "sub.real")
            os.symlink(outside, root / "sub")
        except OSError:
            pass
        if (root / "sub").is_symlink():
            os.unlink(root / "sub")
        elif (root / "sub").exists():
            os.rename(root / "sub", root / f"stray{n}")  # made by the writer mid-flip
        os.rename(root / "sub.real", root / "sub")

    async def calls() -> list[str | None]:
        codes = []
        for i in range(150):
            r = await invoke_tool(write, {"path": f"sub/w{i % 7}/f.txt", "content": f"{i}\n"})
            codes.append(r.error_code)
            try:
                old = (root / "sub" / "a.py").read_text().strip()
            except OSError:  # mid-flip
                old = CONTENT.strip()
            r = await invoke_tool(edit, {"path": "sub/a.py", "old_text": old, "new_text": f"value = {i + 2}"})
            codes.append(r.error_code)
        return codes

    codes, flips = run_while(flip, calls)
    assert everything_under(outside) == [], "a write went through the symlink"
    # done, refused by the boundary check or the write's own, or confused by the flipping — never a crash
    assert set(codes) <= {None, "PATH_OUTSIDE_WORKSPACE", "FILE_NOT_FOUND", "FILE_CHANGED", "EDIT_NO_MATCH", "INVALID_ARGUMENTS", "TOOL_ERROR"}, codes
    assert flips > 0 and None in codes
