"""hostfiles.FolderCache: the one no-follow walk search_text keeps its folders open with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workspace_tools.host.files import FolderCache, LinkRefused, open_below, open_dir


def test_a_folder_is_opened_once_from_its_parent_and_a_link_on_the_way_is_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a" / "b").mkdir(parents=True)
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "f.txt").write_text("OUTSIDE")
    (root / "a" / "b" / "f.txt").write_text("inside")
    (root / "link").symlink_to(outside)
    folders = FolderCache(root.resolve(), limit=3)
    try:
        fd = folders.get("a/b")
        assert fd is not None and folders.get("a/b") == fd  # kept open, not opened again
        assert os.read(os.open("f.txt", os.O_RDONLY, dir_fd=fd), 100) == b"inside"
        assert folders.get("link") is None and folders.get("link/b") is None
        assert folders.get("missing/x") is None
        assert len(folders._open) <= 3  # the least recently used were closed
    finally:
        folders.close()
    assert folders._open == {}


def test_a_folder_swapped_for_a_link_after_it_was_opened_still_names_the_folder_that_was_there(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.py").write_text("inside")
    outside.mkdir()
    (outside / "a.py").write_text("OUTSIDE")
    folders = FolderCache(root.resolve())
    fd = folders.get("sub")
    (root / "sub").rename(root / "old")
    (root / "sub").symlink_to(outside)
    assert fd is not None and folders.get("sub") == fd
    assert os.read(os.open("a.py", os.O_RDONLY, dir_fd=fd), 100) == b"inside"
    folders.close()
    fresh = FolderCache(root.resolve())
    assert fresh.get("sub") is None  # a new walk meets the link and stops
    fresh.close()


def test_open_dir_and_open_below_refuse_a_link_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "a" / "l").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LinkRefused, match=r"a/l is a symbolic link"):
        os.close(open_dir(tmp_path / "a" / "l" / "x", tmp_path))
    fd = os.open(tmp_path / "a", os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(LinkRefused):
            open_below(fd, "l")
    finally:
        os.close(fd)
