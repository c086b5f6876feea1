"""The winning attempt written into the person's work tree as a run of its own, so ``cog undo``
takes it back.

The change is the winner's branch against the commit the attempts started from, file by file
(``git diff --name-status --no-renames``: a rename is a delete and a create). Before anything is
written every file is checked: it must hold in the work tree what it held at that commit (a file
the person changed since, or one that is no regular file, refuses the whole apply, naming it — the
branch stays for ``cog worktree merge``). Symbolic links and submodules in the change refuse it too.
Then, under the workspace lock, a thread ``apply attempt K`` is stored with one run, each file's
change is recorded in the undo journal (:mod:`workspace_tools.files.journal`: signed, fsync'd
before the write) and written atomically, never through a link; if one cannot be written, those
already written are put back. ``cog undo`` walks it back like
any run; files are not committed (the person reviews and commits, or undoes).
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from cogcli.worktrees.pick import AttemptRow
from cogcli.worktrees.place import WorktreeError, git, main_top


@dataclass(frozen=True)
class Applied:
    """An attempt's changes as written into the work tree."""
    thread_id: str
    message_id: str
    #: paths relative to the workspace root, in the order written
    files: list[str]


@dataclass(frozen=True)
class _Planned:
    """One file to write: its content now and after."""
    rel: str
    now: bytes | None
    after: bytes | None
    mode: int | None


def _blob(top: Path, rev: str, path: str) -> bytes:
    from workspace_tools.host.git import run_git

    done = run_git(top, ["cat-file", "blob", f"{rev}:{path}"])
    if done.returncode != 0:
        raise WorktreeError(f"git could not read {path} at {rev[:10]}")
    return done.stdout


def _read_now(root: Path, rel: str) -> bytes | None:
    """The file's bytes in the work tree (None: absent); a link or a non-file on the way refuses."""
    from workspace_tools.host.files import LinkRefused, open_file

    try:
        fd = open_file(root / rel, root, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except (LinkRefused, OSError) as exc:
        raise WorktreeError(f"{rel} cannot be written safely ({getattr(exc, 'strerror', None) or exc}): nothing was applied") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise WorktreeError(f"{rel} is not a regular file in your work tree: nothing was applied")
        return f.read()


def plan(root: Path, base: str, row: AttemptRow) -> list[_Planned]:
    """What applying ``row`` writes; raises :class:`WorktreeError` when it cannot be applied cleanly."""
    top = main_top(root)
    inside = root.relative_to(top).as_posix()
    assert row.commit is not None
    listed = git(top, "diff", "--name-status", "-z", "--no-renames", base, row.commit).split("\0")
    modes = {}
    for item in git(top, "ls-tree", "-r", "-z", "--full-tree", row.commit).split("\0"):
        meta, _, path = item.partition("\t")
        if path:
            modes[path] = meta.split(" ")[0]
    planned = []
    for status, path in zip(listed[0::2], listed[1::2]):
        if not path:
            continue
        rel = path if inside == "." else path.removeprefix(inside + "/")
        if rel == path and inside != ".":
            raise WorktreeError(f"the attempt changed {path}, outside this workspace: nothing was applied (cog worktree merge {row.name})")
        mode = modes.get(path)
        if mode in ("120000", "160000") or (status != "D" and mode is None):
            raise WorktreeError(f"the attempt made {path} a link or a submodule: apply it with git (cog worktree merge {row.name})")
        before = None if status == "A" else _blob(top, base, path)
        now = _read_now(root, rel)
        if now != before:
            raise WorktreeError(
                f"{rel} changed in your work tree since the attempts started: nothing was applied; "
                f"bring attempt {row.attempt} in with git once yours is committed: cog worktree merge {row.name}"
            )
        after = None if status == "D" else _blob(top, row.commit, path)
        planned.append(_Planned(rel, now, after, 0o755 if mode == "100755" else 0o644 if mode else None))
    return planned


def apply_winner(root: Path, base: str, row: AttemptRow, instruction: str, *, model: str | None = None) -> Applied:
    """Write ``row``'s change into the work tree at ``root`` as an undoable run (see the module)."""
    from cogcli.threads.entries import RunEndEntry, UserEntry
    from cogcli.threads.store import default_store
    from cogcli.wire.events import FileChange, RunStatus
    from workspace_tools.files.journal import Journal
    from workspace_tools.text.textfile import atomic_write, workspace_lock

    root = Path(root).resolve()
    if row.commit is None:
        raise WorktreeError(f"attempt {row.attempt} changed nothing: nothing to apply")
    message_id = f"msg_{secrets.token_hex(10)}"
    with workspace_lock(root):
        planned = plan(root, base, row)
        store = default_store(root)
        try:
            thread = store.create_thread(title=f"apply attempt {row.attempt}: {instruction}", model=model)
            store.append(thread.id, [UserEntry(content=f"(attempt {row.attempt}, {row.branch}, applied) {instruction}", message_id=message_id)])
            journal = Journal(root)
            journal.begin(thread.id, message_id)
            if journal.error:
                raise WorktreeError(f"the undo journal cannot be written ({journal.error}): nothing was applied")
            try:
                _write(root, planned, journal, atomic_write)
            finally:
                journal.close()
            files = [FileChange(path=p.rel) for p in planned]
            store.append(thread.id, [RunEndEntry(status=RunStatus.COMPLETED, files_changed=files, message_id=message_id)], status="completed")
        finally:
            store.close()
    return Applied(thread.id, message_id, [p.rel for p in planned])


def _write(root: Path, planned: list[_Planned], journal: object, atomic_write: object) -> None:
    """Each file recorded, then written; if one cannot be, those written are put back first."""
    from cogcli.contract.errors import CogError
    from workspace_tools.host.files import open_dir

    done: list[_Planned] = []
    try:
        for p in planned:
            journal.record(p.rel, before=p.now, after=p.after, mode=p.mode)  # type: ignore[attr-defined]
            path = root / p.rel
            if p.after is None:
                path.unlink()
            else:
                os.close(open_dir(path.parent, root, create=True))
                atomic_write(path, p.after, mode=p.mode, root=root, expect=p.now)  # type: ignore[operator]
            done.append(p)
    except (OSError, CogError) as exc:
        for p in reversed(done):
            try:
                if p.now is None:
                    (root / p.rel).unlink()
                else:
                    atomic_write(root / p.rel, p.now, root=root)  # type: ignore[operator]
            except (OSError, CogError):
                pass
        why = getattr(exc, "strerror", None) or getattr(exc, "message", None) or exc
        raise WorktreeError(f"could not write {getattr(exc, 'filename', None) or 'a file'}: {why}; the files were left as they were") from None
