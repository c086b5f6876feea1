"""Undo a run: put back the files it changed, from its write-ahead journal or the diffs its thread kept.

A run of ``cog edit`` records every change in its journal (:mod:`workspace_tools.journal`) before
making it, so its undo works even when the run was killed or its thread could not be written (a
full disk): :func:`plan_undo` reads the journal first. A run without one (older runs, the Python
API without a journal) is undone from its thread's diffs:

Every ``edit_file`` / ``write_file`` result keeps its unified diff in ``metadata.details.diff``.
:func:`plan_undo` takes the last run of a thread and, for each file it touched, starts from the
file as it is now and applies the reverse of each diff, the last call first. Each hunk must find
exactly the lines the run left, at the line numbers it left them: if a file changed since the
run (or was deleted), the undo is refused naming the file, before anything is written. A file
the run created is deleted. :func:`apply_undo` then writes every file (atomically, each keeping
its mode, encoding, BOM and line endings); if a write fails, the files already written are put
back as they were.

    plan = plan_undo(workspace, store.last_thread())
    print(plan.reverse_diff())
    apply_undo(plan)
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.details import file_change_diff
from cogcli.diffstat import hunk_sides
from cogcli.errors import CogError
from cogcli.memory import StoredEntry, Thread, ToolResultEntry, UndoEntry, UserEntry

log = logging.getLogger("cogcli")

class NothingToUndo(CogError):
    """No such thread, the run changed no files, or it was undone already (exit 2)."""

    code = "NOTHING_TO_UNDO"


class UndoRefused(CogError):
    """A file changed since the run (or its change cannot be reverted): nothing was written (exit 1)."""

    code = "UNDO_REFUSED"


@dataclass(frozen=True)
class FileRevert:
    """One file: its bytes now and what the undo puts back (None: delete it, the run created it)."""

    path: str
    #: None: the run deleted (or moved away) the file, and the undo makes it again
    current: bytes | None
    reverted: bytes | None
    encoding: str = "utf-8"
    #: the mode a file made again gets (as the journal recorded it)
    mode: int | None = None

    @property
    def deletes(self) -> bool:
        return self.reverted is None


@dataclass
class UndoPlan:
    root: Path
    thread_id: str
    #: the run being undone (its ``messageId``)
    message_id: str | None
    files: list[FileRevert] = field(default_factory=list)

    def reverse_diff(self) -> str:
        """The change the undo makes, as a unified diff (``git apply`` reads it)."""
        from workspace_tools.diffs import file_header, format_hunks, git_mode, quote_path, text_blocks

        out: list[str] = []
        for f in self.files:
            now = (f.current or b"").decode(f.encoding)
            if f.current is None and f.reverted is not None:  # a deleted file made again
                hunks = format_hunks(text_blocks("", f.reverted.decode(f.encoding)))
                out.append(file_header(f.path, new_mode=f.mode or 0o644, empty=not hunks) + hunks)
                continue
            if f.reverted is None:
                a, b = quote_path(f"a/{f.path}"), quote_path(f"b/{f.path}")
                mode = git_mode(stat.S_IMODE(os.stat(self.root / f.path).st_mode))
                hunks = format_hunks(text_blocks(now, ""))
                out.append(f"diff --git {a} {b}\ndeleted file mode {mode}\n" + (f"--- {a}\n+++ /dev/null\n{hunks}" if hunks else ""))
            else:
                hunks = format_hunks(text_blocks(now, f.reverted.decode(f.encoding)))
                out.append(file_header(f.path) + hunks if hunks else "")
        return "".join(out)


# --- planning -------------------------------------------------------------------------------


def last_run(entries: Sequence[StoredEntry]) -> tuple[str | None, list[StoredEntry], bool]:
    """The last run of a thread: its ``messageId``, its entries, and whether it was undone."""
    start = max((i for i, s in enumerate(entries) if isinstance(s.entry, UserEntry)), default=-1)
    if start < 0:
        return None, [], False
    user = entries[start].entry
    assert isinstance(user, UserEntry)
    run = list(entries[start + 1 :])
    undone = any(isinstance(s.entry, UndoEntry) for s in run)
    return user.message_id, run, undone


def run_diffs(run: Sequence[StoredEntry]) -> list[str]:
    """The diffs of the run's successful file changes, in call order."""
    diffs: list[str] = []
    for stored in run:
        e = stored.entry
        if not isinstance(e, ToolResultEntry) or e.metadata.error is not None:
            continue
        diff = file_change_diff(e.metadata.details)  # a file's change, by the details' shape
        if diff is not None:
            diffs.append(diff)
    return diffs


def plan_undo(root: str | Path, thread: Thread | None) -> UndoPlan:
    """What undoing the last run of ``thread`` writes. Raises :class:`NothingToUndo` or
    :class:`UndoRefused`; reads files, writes nothing."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    from workspace_tools.paths import Workspace

    if thread is None:
        raise NothingToUndo("nothing to undo: no run in this workspace yet")
    message_id, run, undone = last_run(thread.entries)
    if message_id is None and not run:
        raise NothingToUndo(f"nothing to undo: thread {thread.id} has no run")
    if undone:
        raise NothingToUndo(f"nothing to undo: the last run of thread {thread.id} was undone already")
    workspace = Workspace(root)
    journaled = _plan_from_journal(workspace, thread.id, message_id)
    if journaled is not None:
        return journaled
    diffs = run_diffs(run)
    if not diffs:
        raise NothingToUndo(f"nothing to undo: the last run of thread {thread.id} changed no files")

    # per file, the patches in call order
    patches: dict[str, list[Any]] = {}
    for diff in diffs:
        try:
            patch = PatchSet(diff)
        except UnidiffParseError as exc:
            raise UndoRefused(f"a diff kept in thread {thread.id} cannot be read ({exc}); nothing was changed") from None
        for pf in patch:
            patches.setdefault(_patch_path(pf), []).append(pf)

    plan = UndoPlan(root=workspace.root, thread_id=thread.id, message_id=message_id)
    for rel, file_patches in patches.items():
        try:
            path = workspace.resolve(rel, for_write=True)
        except CogError as exc:
            raise UndoRefused(f"{rel}: {exc.message}") from None
        plan_file = _revert_file(workspace.relative(path), path, file_patches)
        if plan_file is not None:
            plan.files.append(plan_file)
    if not plan.files:
        raise NothingToUndo(f"nothing to undo: the files of the last run of thread {thread.id} are as they were before it")
    return plan


def _plan_from_journal(workspace: Any, thread_id: str, message_id: str | None) -> UndoPlan | None:
    """The plan from the run's journal, None when it has none (or recorded nothing). Per file, from
    its bytes now, each recorded change is walked back, the last first: bytes equal to what the
    change wrote become what it found; bytes equal to what it found mean it never landed (killed
    before the rename, a failed write); anything else is a change made since: refused."""
    from workspace_tools.journal import read_journal

    changes = read_journal(workspace.root, message_id) if message_id else None
    if not changes:
        return None
    by_path: dict[str, list[Any]] = {}
    for change in changes:
        by_path.setdefault(change.path, []).append(change)
    plan = UndoPlan(root=workspace.root, thread_id=thread_id, message_id=message_id)
    for rel, file_changes in by_path.items():
        try:
            path = workspace.resolve(rel, for_write=True)
        except CogError as exc:
            raise UndoRefused(f"{rel}: {exc.message}") from None
        rel = workspace.relative(path)
        try:
            current: bytes | None = path.read_bytes()
        except FileNotFoundError:
            current = None
        except OSError as exc:
            raise UndoRefused(f"{rel} cannot be read ({exc.strerror or exc}); nothing was changed") from None
        state = current
        for change in reversed(file_changes):
            if change.is_after(state):
                state = change.before
            elif state != change.before:
                raise UndoRefused(_changed(rel, "was deleted" if state is None else "changed"))
        if state == current:
            continue
        mode = next((c.mode for c in file_changes if c.before is not None), None)
        plan.files.append(FileRevert(rel, current, state, _shared_encoding(current, state), mode))
    if not plan.files:
        raise NothingToUndo(f"nothing to undo: the files of the last run of thread {thread_id} are as they were before it")
    return plan


def _shared_encoding(*datas: bytes | None) -> str:
    try:
        for data in datas:
            if data is not None:
                data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        return "latin-1"


def _patch_path(pf: Any) -> str:
    path = pf.path
    for prefix in ("a/", "b/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _revert_file(rel: str, path: Path, file_patches: list[Any]) -> FileRevert | None:
    from workspace_tools.textfile import NotText, detect_encoding

    try:
        current: bytes | None = path.read_bytes()
    except FileNotFoundError:
        current = None
    except OSError as exc:
        raise UndoRefused(f"{rel} cannot be read ({exc.strerror or exc}); nothing was changed") from None
    encoding = "utf-8"
    text: str | None = None
    if current is not None:
        try:
            encoding = detect_encoding(current)
        except NotText:
            raise UndoRefused(f"{rel} is not a text file now; it changed since the run, so nothing was changed") from None
        text = current.decode(encoding)
    for pf in reversed(file_patches):
        text = _reverse(rel, text, pf)
    if current is None:
        if text is None:
            return None  # created and gone again
        raise UndoRefused(_changed(rel, "was deleted"))
    if text is None:
        return FileRevert(rel, current, None, encoding)
    try:
        reverted = text.encode(encoding)
    except UnicodeEncodeError:
        reverted = text.encode("utf-8")
    return None if reverted == current else FileRevert(rel, current, reverted, encoding)


def _changed(rel: str, how: str = "changed") -> str:
    return f"{rel} {how} since the run, so it cannot be put back as it was; nothing was changed"




def _reverse(rel: str, text: str | None, pf: Any) -> str | None:
    """``text`` (the file after ``pf`` was applied; None: no file) as it was before."""
    from workspace_tools.textfile import split_lines

    if pf.is_binary_file or (not len(pf) and not pf.is_added_file):
        raise UndoRefused(f"{rel}: the run's change to it has no text diff (a binary file), so it cannot be undone; nothing was changed")
    if text is None:
        raise UndoRefused(_changed(rel, "was deleted"))
    if pf.is_added_file:
        made = "".join(line for hunk in pf for line in hunk_sides(hunk)[1])
        if text != made:
            raise UndoRefused(_changed(rel))
        return None
    lines = split_lines(text)
    out: list[str] = []
    cursor = 0
    for hunk in pf:
        before, after = hunk_sides(hunk)
        start = hunk.target_start - 1 if hunk.target_length else hunk.target_start
        if start < cursor or lines[start : start + len(after)] != after:
            raise UndoRefused(_changed(rel))
        out += lines[cursor:start]
        out += before
        cursor = start + len(after)
    out += lines[cursor:]
    return "".join(out)


# --- applying -------------------------------------------------------------------------------


def apply_undo(plan: UndoPlan) -> None:
    """Write the plan: every file or, if a write fails, none (those written are put back).
    Raises :class:`UndoRefused` when a file changed after the plan was made."""
    from workspace_tools.textfile import atomic_write, workspace_lock

    with workspace_lock(plan.root):  # no cog process writes a file of the plan meanwhile
        _apply(plan, atomic_write)


def _apply(plan: UndoPlan, atomic_write: Any) -> None:
    for f in plan.files:
        try:
            now = (plan.root / f.path).read_bytes()
        except OSError:
            now = None
        if now != f.current:
            raise UndoRefused(_changed(f.path, "changed while undoing"))
    done: list[tuple[FileRevert, int]] = []
    try:
        for f in plan.files:
            path = plan.root / f.path
            if f.current is None:  # the run deleted it: made again, never over a file made since
                atomic_write(path, f.reverted, mode=f.mode, root=plan.root, expect=None)
                done.append((f, -1))
                continue
            mode = stat.S_IMODE(os.stat(path).st_mode)
            if f.reverted is None:
                path.unlink()
            else:
                # no folder swapped for a symlink since the plan, and the file still as planned
                atomic_write(path, f.reverted, root=plan.root, expect=f.current)
            done.append((f, mode))
    except (OSError, CogError) as exc:
        for f, mode in reversed(done):
            try:
                if f.current is None:
                    (plan.root / f.path).unlink()
                    continue
                atomic_write(plan.root / f.path, f.current, mode=mode, root=plan.root)
            except (OSError, CogError):
                log.error("undo: could not put back %s after a failed write", f.path, exc_info=True)
        what = getattr(exc, "filename", None) or "a file"
        why = getattr(exc, "strerror", None) or getattr(exc, "message", None) or exc
        raise UndoRefused(f"could not write {what}: {why}; the files were left as they were") from None
