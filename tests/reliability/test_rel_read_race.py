"""Issue 13 §4: reads as safe as writes. A folder swapped for a symlink to the outside after
read_file checked the path: the read goes through descriptors of the folders opened without
following symlinks, so it is refused and no outside byte is returned. Reproduced first: read_file
itself, with its no-follow opener swapped for an open of the checked path (what read_file did),
returns the outside file after the same swap."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from rel_helpers import run_while

from cogcli import invoke_tool
from workspace_tools.workspace.paths import Workspace
from workspace_tools.files.read import read_file_tool
from workspace_tools.workspace.secret_files import SecretPolicy

INSIDE = "inside = 1\n"
OUTSIDE = "OUTSIDE-SECRET = 1\n"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.py").write_text(INSIDE)
    (outside / "a.py").write_text(OUTSIDE)
    return root, outside


def _swap(root: Path, outside: Path) -> None:
    os.rename(root / "sub", root / "sub.real")
    os.symlink(outside, root / "sub")


def _flip(root: Path, outside: Path) -> None:
    """``sub`` a link to the outside for a moment, then the folder again."""
    _swap(root, outside)
    os.unlink(root / "sub")
    os.rename(root / "sub.real", root / "sub")


class _SwapAfterCheck(SecretPolicy):
    """The last check before the read (the secret-file check, after the path was resolved) lets
    the attacker's swap happen."""

    def __init__(self, swap: Callable[[], None]) -> None:
        super().__init__()
        object.__setattr__(self, "swap", swap)

    def check(self, workspace: Workspace, given: str, resolved: Path) -> None:
        super().check(workspace, given, resolved)
        self.swap()  # type: ignore[attr-defined]


def _open_by_path(path: Path, root: Path) -> int:
    """The defence switched off: the checked path opened as it is, links followed."""
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)


def test_the_attack_read_file_opening_its_checked_path_after_a_swap_reads_outside(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_file's own path (resolve, check, open, read) with only the opener swapped for one that
    follows links: the swap after the check hands it the outside file."""
    from workspace_tools.files import read

    root, outside = layout
    monkeypatch.setattr(read, "open_in_workspace", _open_by_path)
    tool = read_file_tool(Workspace(root), secrets=_SwapAfterCheck(lambda: _swap(root, outside)))
    result = anyio.run(invoke_tool, tool, {"path": "sub/a.py"})
    assert (root / "sub").is_symlink(), "the swap did not happen: the test proves nothing"
    assert result.ok and "OUTSIDE-SECRET" in str(result.result)  # the defence is needed


def test_read_file_through_a_folder_swapped_after_the_check_is_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    tool = read_file_tool(Workspace(root), secrets=_SwapAfterCheck(lambda: _swap(root, outside)))
    result = anyio.run(invoke_tool, tool, {"path": "sub/a.py"})
    assert result.error_code == "PATH_OUTSIDE_WORKSPACE" and "became a symlink" in (result.error or "")
    assert "OUTSIDE" not in str(result.result)


def test_a_file_swapped_for_a_symlink_after_the_check_is_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout

    def swap_file() -> None:
        os.unlink(root / "sub" / "a.py")
        os.symlink(outside / "a.py", root / "sub" / "a.py")

    tool = read_file_tool(Workspace(root), secrets=_SwapAfterCheck(swap_file))
    result = anyio.run(invoke_tool, tool, {"path": "sub/a.py"})
    assert result.error_code == "PATH_OUTSIDE_WORKSPACE" and "OUTSIDE" not in str(result.result)


def test_a_fifo_in_the_workspace_does_not_hang_read_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    result = anyio.run(invoke_tool, read_file_tool(Workspace(tmp_path)), {"path": "pipe"})
    assert result.error_code == "FILE_NOT_TEXT" and "not a regular file" in (result.error or "")


@pytest.mark.slow
def test_a_folder_flipping_during_3000_reads_never_returns_outside_content(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    tool = read_file_tool(Workspace(root))

    async def reads() -> tuple[int, int, set[str | None]]:
        leaked = ok = 0
        codes: set[str | None] = set()
        for _ in range(3000):
            r = await invoke_tool(tool, {"path": "sub/a.py"})
            codes.add(r.error_code)
            leaked += "OUTSIDE" in str(r.result) or "OUTSIDE" in str(r.error)
            ok += r.ok
        return leaked, ok, codes

    (leaked, ok, codes), flips = run_while(lambda _: _flip(root, outside), reads)
    assert leaked == 0
    assert flips > 100 and ok > 0 and codes <= {None, "PATH_OUTSIDE_WORKSPACE", "FILE_NOT_FOUND", "TOOL_ERROR"}, codes  # mid-flip confusion, never outside bytes


def test_search_text_reads_through_the_folder_it_opened_even_when_it_is_swapped_after(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """search_text opens each folder (no link followed) and each file relative to it: the swap
    lands between the two, where the old code opened ``root + "sub/a.py"`` and read the outside."""
    from workspace_tools.files import search

    root, outside = layout
    real_dir_fd = search._Reader._dir_fd

    def dir_fd_then_swap(self: search._Reader, folder: str) -> int | None:
        fd = real_dir_fd(self, folder)
        if folder == "sub" and not (root / "sub").is_symlink():
            _swap(root, outside)
        return fd

    monkeypatch.setattr(search._Reader, "_dir_fd", dir_fd_then_swap)
    result = anyio.run(invoke_tool, search.search_text_tool(Workspace(root)), {"pattern": "inside|OUTSIDE"})
    assert (root / "sub").is_symlink(), "the swap did not happen: the test proves nothing"
    assert (root / "sub" / "a.py").read_text() == OUTSIDE  # by path, the file is now the outside one
    assert result.ok and "OUTSIDE-SECRET" not in str(result.result) and "sub/a.py:1: inside = 1" in str(result.result)


@pytest.mark.slow
def test_a_folder_flipping_during_300_searches_never_returns_outside_content(layout: tuple[Path, Path]) -> None:
    from workspace_tools.files.search import search_text_tool

    root, outside = layout
    for i in range(40):  # enough files that a flip lands mid-search
        (root / "sub" / f"f{i}.py").write_text(INSIDE)
        (outside / f"f{i}.py").write_text(OUTSIDE)
    tool = search_text_tool(Workspace(root))

    async def searches() -> int:
        leaked = 0
        for _ in range(300):
            r = await invoke_tool(tool, {"pattern": "OUTSIDE|inside"})
            leaked += "OUTSIDE-SECRET" in str(r.result)  # (the pattern itself says OUTSIDE)
        return leaked

    leaked, _ = run_while(lambda _: _flip(root, outside), searches)
    assert leaked == 0
