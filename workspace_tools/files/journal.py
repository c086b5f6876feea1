"""The write-ahead undo journal: what a run is about to change, on disk before the change is made.

A run gets its own folder, ``.cog/journal/<messageId>/``, bound to its thread when the run starts
(:meth:`Journal.begin`). Before a tool writes a file it calls :meth:`Journal.record`: the file's
bytes as they are (or that it does not exist), its mode, and a hash of the bytes about to be written
are written and fsync'd first; only then is the file written. If the record cannot be written (a
full disk, ``.cog`` not a folder) the tool refuses the change and leaves the file as it was. So
after a kill or a full disk at any point, ``cog undo`` finds every change the run may have made:

- the file holds the bytes recorded as *after*: the change was made; undo puts *before* back;
- the file still holds *before*: the change never landed (killed before the rename, a failed
  write); nothing to put back for it;
- anything else: the file changed since; undo refuses, naming it.

    journal = Journal(workspace_root)
    journal.begin(thread_id, message_id)          # the run's start event
    journal.record("src/a.py", before=b"…", after=b"…", mode=0o644)
    ...
    changes = read_journal(workspace_root, message_id)   # what cog undo reads

The folder holds copies of the files as they were and as the change made them (like the files
themselves: local, in ``.cog/`` which git ignores). Only the newest :data:`KEEP_RUNS` runs are kept.

Every record is signed (an HMAC-SHA256 over the workspace, the run, the record's number, path, mode
and the hashes of both sides) with the person's key in their state folder, outside the workspace
(:mod:`workspace_tools.files.journal_key`). ``.cog/`` can be written by what runs in the repository (a test
without the sandbox); a record it planted does not verify, :func:`read_run` sets it aside, and undo
never acts on it. A delete is ``record(path, before=…, after=None, …)``; a move is a delete of the
old path and a create (``before=None``) of the new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.host import files as hostfiles
from workspace_tools.host.files import write_at
from workspace_tools.files.journal_key import KeyUnusable, journal_key, sign, verify

JOURNAL_DIR = (".cog", "journal")
#: runs whose journal is kept; older ones are removed when a run begins
KEEP_RUNS = 50
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW


class JournalError(Exception):
    """The journal cannot be written (or read): a change must not be made without its record."""


@dataclass(frozen=True)
class Change:
    """One recorded change of one file, in the order the run made them."""

    seq: int
    path: str
    #: the file's bytes before the change; None: it did not exist
    before: bytes | None
    mode: int | None
    #: sha256 of the bytes the change writes; None: the change deletes the file
    after_sha256: str | None
    #: the bytes the change writes, when kept (to show what differs when a file changed since)
    after: bytes | None = None
    #: a command's change: the mode it left (a chmod is a change too); None: a tool's (mode kept)
    after_mode: int | None = None
    #: what made the change: None a file tool; ``command: …`` a command run_command or run_tests ran
    by: str | None = None
    #: why this change cannot be put back (``too large``, ``a link``): undo names it, never acts on it
    unrestorable: str | None = None
    #: a command's create: the folders above the file it made (undo removes them once empty)
    made_dirs: tuple[str, ...] = ()
    #: ``path`` is a folder a command made that held no file when it ended (undo removes it if empty)
    folder: bool = False

    def is_after(self, data: bytes | None) -> bool:
        if data is None or self.after_sha256 is None:
            return data is None and self.after_sha256 is None
        return hashlib.sha256(data).hexdigest() == self.after_sha256


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Journal:
    """Where the file tools of one run record their changes before making them."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._lock = threading.Lock()
        self._run_fd: int | None = None
        self._seq = 0
        self._key = b""
        self.message_id: str | None = None
        self.error: str | None = None

    # -- the run ---------------------------------------------------------------------------

    def begin(self, thread_id: str, message_id: str) -> None:
        """Start the run's folder. A failure is kept and every later :meth:`record` refuses."""
        with self._lock:
            self.close()
            self.message_id = message_id
            try:
                if not _SAFE_ID.match(message_id) or not _SAFE_ID.match(thread_id):
                    raise JournalError(f"unusable run id {message_id!r}")
                self._key = journal_key(self.root)
                base = _open_dirs(self.root, JOURNAL_DIR, create=True)
                try:
                    _prune(base, keep=KEEP_RUNS - 1)
                    os.mkdir(message_id, 0o700, dir_fd=base)
                    self._run_fd = os.open(message_id, _DIR_FLAGS, dir_fd=base)
                    self._seq = 0
                finally:
                    os.close(base)
                write_at(self._run_fd, "run.json", json.dumps({"threadId": thread_id, "messageId": message_id}).encode())
                self.error = None
            except (OSError, JournalError, KeyUnusable) as exc:
                self.error = _why(exc)
                self.close()

    @property
    def active(self) -> bool:
        """A run has begun and its records can be written."""
        return self._run_fd is not None

    def close(self) -> None:
        if self._run_fd is not None:
            os.close(self._run_fd)
            self._run_fd = None

    # -- the tools -------------------------------------------------------------------------

    def record(self, path: str, *, before: bytes | None, after: bytes | None, mode: int | None,
               after_mode: int | None = None, by: str | None = None, unrestorable: str | None = None,
               existed: bool | None = None, durable: bool = True, dirs: Sequence[str] = (), folder: bool = False) -> int:
        """Write (and fsync) that ``path`` (workspace-relative) is about to go from ``before`` to
        ``after``; returns the record's number. Raises :class:`ToolCallError` when it cannot: the
        caller must not change the file. A command's change (:mod:`workspace_tools.shell.command_undo`)
        is recorded after it, from the snapshot taken before it, with ``by`` (the command),
        ``after_mode`` (the mode it left) and, when its bytes before were not kept, ``unrestorable``
        (why) and ``existed``; made after the change, it need not reach the disk before returning
        (``durable=False``: each file still appears whole or not at all; :meth:`sync` once after);
        ``dirs``, the folders above a file it created that it made too; ``folder``: ``path`` is a
        folder it made that holds no file (nothing before, nothing after)."""
        with self._lock:
            if self._run_fd is None:
                why = self.error or "the run has not started"
                raise ToolCallError(
                    f"the change to {path} was not made: cog could not record it for `cog undo` ({why}); "
                    "the file was left as it was. Free some disk space (or fix .cog/) and try again",
                    code=ErrorCode.TOOL_ERROR,
                )
            self._seq += 1
            seq = self._seq
            meta: dict[str, object] = {
                "seq": seq,
                "path": path,
                "exists": before is not None if existed is None else existed,
                "mode": mode,
                "after": None if after is None else sha256(after),
            }
            for field_name, value in (("afterMode", after_mode), ("by", by), ("unrestorable", unrestorable)):
                if value is not None:
                    meta[field_name] = value
            if dirs:
                meta["dirs"] = list(dirs)
            if folder:
                meta["folder"] = True
            assert self.message_id is not None
            # signed as read back: bytes not kept (``unrestorable``) are not in the record
            meta["mac"] = sign(self._key, _signed(self.root, self.message_id, meta, before if unrestorable is None else None))
            name = f"{seq:06d}"
            try:
                if before is not None and unrestorable is None:
                    write_at(self._run_fd, f"{name}.before", before, sync=durable)
                if after is not None:
                    write_at(self._run_fd, f"{name}.after", after, sync=durable)
                write_at(self._run_fd, f"{name}.json", json.dumps(meta).encode(), sync=durable)
            except OSError as exc:
                for leftover in (f"{name}.before", f"{name}.after", f"{name}.json"):
                    try:
                        os.unlink(leftover, dir_fd=self._run_fd)
                    except OSError:
                        pass
                raise ToolCallError(
                    f"the change to {path} was not made: cog could not record it for `cog undo` ({_why(exc)}); "
                    "the file was left as it was. Free some disk space and try again",
                    code=ErrorCode.TOOL_ERROR,
                ) from None
            return seq

    def sync(self) -> None:
        """Flush the records written with ``durable=False`` to the disk (best effort)."""
        with self._lock:
            if self._run_fd is not None:
                try:
                    os.fsync(self._run_fd)
                except OSError:
                    pass

    def discard(self, seq: int) -> None:
        """Forget record ``seq``: its change was not made and the file is not as it recorded
        (another program changed it), so undo must not count it. Best effort."""
        with self._lock:
            if self._run_fd is None:
                return
            for name in (f"{seq:06d}.json", f"{seq:06d}.before", f"{seq:06d}.after"):
                try:
                    os.unlink(name, dir_fd=self._run_fd)
                except OSError:
                    pass


@dataclass(frozen=True)
class RunRecords:
    """What a run's journal holds: the records cog signed, in order, and the names of any that do
    not verify (planted, altered, or signed with a key since replaced): never acted on."""

    changes: list[Change]
    rejected: list[str]


def read_journal(root: str | Path, message_id: str) -> list[Change] | None:
    """The changes cog recorded (and signed) for the run ``message_id``, in order; None when it has
    no journal."""
    run = read_run(root, message_id)
    return None if run is None else run.changes


def read_run(root: str | Path, message_id: str) -> RunRecords | None:
    """The run's journal: its verified changes and the records set aside; None when it has none."""
    if not _SAFE_ID.match(message_id):
        return None
    resolved = Path(root).resolve()
    try:
        base = _open_dirs(resolved, JOURNAL_DIR, create=False)
    except (OSError, JournalError):
        return None
    try:
        try:
            run_fd = os.open(message_id, _DIR_FLAGS, dir_fd=base)
        except OSError:
            return None
    finally:
        os.close(base)
    try:
        names = sorted(n for n in os.listdir(run_fd) if re.fullmatch(r"\d{6}\.json", n))
        try:
            key: bytes | None = journal_key(resolved) if names else None
        except KeyUnusable:
            key = None
        changes: list[Change] = []
        rejected: list[str] = []
        for name in names:
            try:
                meta = json.loads(_read_file(run_fd, name))
                before = _read_file(run_fd, name[:-5] + ".before") if meta["exists"] and "unrestorable" not in meta else None
                if key is None or meta.get("seq") != int(name[:-5]) or not verify(key, _signed(resolved, message_id, meta, before), meta.get("mac")):
                    rejected.append(name)
                    continue
                after = _kept_after(run_fd, name[:-5] + ".after", meta.get("after"))
                changes.append(Change(int(meta["seq"]), str(meta["path"]), before, meta.get("mode"), meta.get("after"), after,
                                      meta.get("afterMode"), meta.get("by"), meta.get("unrestorable"),
                                      tuple(str(d) for d in meta.get("dirs") or ()), meta.get("folder") is True))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                # a record cut by a kill: its .json is written last (and atomically), so the
                # file change it announces was never started
                continue
        return RunRecords(changes, rejected)
    finally:
        os.close(run_fd)


def _signed(root: Path, message_id: str, meta: dict[str, object], before: bytes | None) -> dict[str, object]:
    """What a record's MAC covers: the workspace, the run, and every field undo acts on."""
    return {
        "v": 1,
        "root": str(root),
        "messageId": message_id,
        "seq": meta["seq"],
        "path": meta["path"],
        "exists": meta["exists"],
        "mode": meta["mode"],
        "before": None if before is None else sha256(before),
        "after": meta["after"],
        # a command's change (none in a tool's record, whose signature stays as it was)
        **{k: meta[k] for k in ("afterMode", "by", "unrestorable", "dirs", "folder") if k in meta},
    }


def _kept_after(run_fd: int, name: str, digest: object) -> bytes | None:
    try:
        data = _read_file(run_fd, name)
    except OSError:
        return None
    return data if isinstance(digest, str) and sha256(data) == digest else None


# --- files ----------------------------------------------------------------------------------


def _open_dirs(root: Path, parts: tuple[str, ...], *, create: bool) -> int:
    """``root/parts`` opened as :func:`workspace_tools.host.files.open_dir` opens a folder: no link
    followed, so no record is ever written outside the workspace through a ``.cog`` link."""
    try:
        return hostfiles.open_dir(root.joinpath(*parts), root, create=create, mode=0o700)
    except hostfiles.LinkRefused as exc:
        raise JournalError(f"{exc}: remove the link") from None
    except NotADirectoryError:
        where = next((parts[: i + 1] for i in range(len(parts)) if root.joinpath(*parts[: i + 1]).is_file()), parts)
        raise JournalError(f"{'/'.join(where)} is not a folder") from None


def _read_file(dir_fd: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _prune(base: int, keep: int) -> None:
    """Remove all but the ``keep`` newest run folders."""
    import shutil

    runs = []
    for entry in os.scandir(base):
        if entry.is_dir(follow_symlinks=False) and _SAFE_ID.match(entry.name):
            runs.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    for _, name in sorted(runs)[: max(0, len(runs) - keep)]:
        shutil.rmtree(name, dir_fd=base, ignore_errors=True)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)
