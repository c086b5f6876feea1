"""Applying an undo plan (:func:`cogcli.threads.undo.plan_undo`): every file or, if a write fails, none."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Any, Protocol

from cogcli.contract.errors import CogError
from cogcli.threads.undo_types import FileRevert, UndoRefused, changed_since, refused_text


class UndoPlan(Protocol):
    """What applying needs of :class:`cogcli.threads.undo.UndoPlan`: the workspace and its files."""

    root: Path
    files: list[FileRevert]
    folders: list[str]

log = logging.getLogger("cogcli")



def apply_undo(plan: UndoPlan) -> None:
    """Write the plan: every file or, if a write fails, none (those written are put back).
    Raises :class:`UndoRefused` when a file changed after the plan was made."""
    from workspace_tools.text.textfile import atomic_write, workspace_lock

    with workspace_lock(plan.root):  # no cog process writes a file of the plan meanwhile
        _apply(plan, atomic_write)


def _apply(plan: UndoPlan, atomic_write: Any) -> None:
    moved: dict[str, str] = {}
    for f in plan.files:
        try:
            now: bytes | None = (plan.root / f.path).read_bytes()
        except FileNotFoundError:
            now = None
        except OSError:
            now = b"" if f.current is None else None
        if now != f.current:
            moved[f.path] = changed_since(f.path, "changed while undoing")
    if moved:
        raise UndoRefused(refused_text(moved, "changed while undoing"))
    done: list[tuple[FileRevert, int | None]] = []
    try:
        for f in plan.files:
            path = plan.root / f.path
            if f.current is None:  # deleted or moved away by the run: made again, with its mode
                assert f.reverted is not None
                _make_parents(plan.root, path)
                atomic_write(path, f.reverted, mode=f.mode, root=plan.root, expect=None)
                done.append((f, None))
                continue
            mode = stat.S_IMODE(os.stat(path).st_mode)
            if f.reverted is None:
                path.unlink()
            else:
                # no folder swapped for a symlink since the plan, and the file still as planned
                atomic_write(path, f.reverted, mode=f.chmod, root=plan.root, expect=f.current)
            done.append((f, mode))
    except (OSError, CogError) as exc:
        for f, mode in reversed(done):
            try:
                if f.current is None:
                    (plan.root / f.path).unlink()
                else:
                    atomic_write(plan.root / f.path, f.current, mode=mode, root=plan.root)
            except (OSError, CogError):
                log.error("undo: could not put back %s after a failed write", f.path, exc_info=True)
        what = getattr(exc, "filename", None) or "a file"
        why = getattr(exc, "strerror", None) or getattr(exc, "message", None) or exc
        raise UndoRefused(f"could not write {what}: {why}; the files were left as they were") from None
    _remove_made_folders(plan.root, set(plan.folders))


def _remove_made_folders(root: Path, folders: set[str]) -> None:
    """The folders a command made for files the undo deleted, deepest first, each only if it is
    empty now (``rmdir`` never removes one that holds anything), none through a link."""
    from workspace_tools.host.files import LinkRefused, open_dir

    for rel in sorted(folders, key=lambda d: (-d.count("/"), d)):
        path = root / rel
        try:
            parent = open_dir(path.parent, root)
        except (OSError, LinkRefused):
            continue
        try:
            os.rmdir(path.name, dir_fd=parent)
        except OSError:  # it holds something else (or is gone): left as it is
            pass
        finally:
            os.close(parent)


def _make_parents(root: Path, path: Path) -> None:
    """The folders of a file made again (a move's source folder may be gone), none through a link."""
    from workspace_tools.host.files import open_dir

    os.close(open_dir(path.parent, root, create=True))
