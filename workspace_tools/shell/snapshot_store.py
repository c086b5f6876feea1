"""The private snapshot store: the workspace's files as they were before each command, so that
``cog undo`` can put back what a command rewrote, created or deleted (:mod:`workspace_tools.shell.command_undo`).

Where: ``<state>/cog/workspaces/<workspace>/command-snapshots/`` in the person's state folder
(:func:`workspace_tools.files.journal_key.state_home`) — never in the workspace, not shown in the
sandbox, reached by no tool. Every folder on the way below ``<state>/cog`` is opened without
following a link (a link planted there is refused: nothing is read or written through it), the
store must be the person's own, and each file in it is opened with ``O_NOFOLLOW``.

What: ``objects/<sha256>``, the bytes of each file (content-addressed, so an unchanged file is
stored once, and an object whose bytes no longer hash to its name is refused as damaged), and
``index.json``, each workspace file's stat key (size, mtime, inode, mode, as the before/after scan
keeps it: :mod:`workspace_tools.shell.tree_changes`) with the object holding its bytes. Taking a
snapshot before a command compares the scan with the index: an unchanged file costs the stat the
scan made anyway; only a file new or changed since the last snapshot is read, hashed and copied —
as git's index does for ``write-tree``. Measured in ``benchmarks/undo_snapshot.py``.

Left out, each named as not restorable: files git ignores (build output, caches: they are left out
of a command's changes too), links, other non-regular files, and files over :data:`MAX_FILE` bytes
(``too large``). A run's journal keeps its own copy of each file a command changed (the snapshot's
bytes are copied into the record), so no journal record names an object: an object is kept while
the index names it — the workspace as it last was — and removed, by the first snapshot of a session
and hourly after, once no entry names it and it is older than :data:`PRUNE_AGE` (a command still
running in another session may hold one). Runs falling off the journals (the newest
:data:`~workspace_tools.files.journal.KEEP_RUNS` kept) take their copies with them; :func:`disk_use`
is what ``cog thread list`` shows.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from workspace_tools.host.files import write_at
from workspace_tools.shell.tree_changes import Key, Snapshot

#: the store's folder in the workspace's state folder
STORE = "command-snapshots"
#: files larger than this are not copied: a command's change to one is "not restorable: too large"
MAX_FILE = 16 * 1024 * 1024
IGNORED = "ignored by git"
#: unreferenced objects older than this are removed (a day: no command runs that long)
PRUNE_AGE = 86_400
#: how often a session looks for them (when it takes a snapshot): its first, then hourly
PRUNE_EVERY = 3_600
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW


class StoreUnusable(Exception):
    """The store cannot be used (a link in its path, not the person's, a full disk): the message says why."""


@dataclass(frozen=True)
class Kept:
    """A file as the snapshot holds it: its object (None when not kept) and why not."""

    sha: str | None
    why: str | None = None


@dataclass
class Taken:
    """One snapshot: each workspace file as it was before the command."""

    #: the index's entries as they were (an entry is replaced, never changed, so this stays as it was)
    entries: dict[str, list[object]] = field(default_factory=dict)
    #: files read and copied for this snapshot (the rest cost a stat)
    copied: int = 0
    seconds: float = 0.0

    def kept(self, path: str) -> Kept | None:
        entry = self.entries.get(path)
        return None if entry is None else Kept(entry[4], entry[5])  # type: ignore[arg-type]


def store_folder(root: Path) -> Path:
    """Where the workspace's store lives (made on first use)."""
    from workspace_tools.files.journal_key import WORKSPACES, state_home, workspace_key

    return state_home(root) / "cog" / WORKSPACES / workspace_key(root) / STORE


class SnapshotStore:
    """The store of one workspace; one per session (its index is kept in memory between commands)."""

    def __init__(self, root: Path, *, folder: Path | None = None, max_file: int = MAX_FILE, ignored: bool = False) -> None:
        self.root = Path(root).resolve()
        self.folder = folder
        self.max_file = max_file
        #: keep the files git ignores too (else each is "ignored by git", never copied)
        self.ignored = ignored
        self._index: dict[str, list[object]] | None = None
        self._next_prune = 0.0
        self._keys: dict[str, Key] = {}
        self._logged = 0
        self._lock = threading.Lock()

    # --- taking --------------------------------------------------------------------------------

    def take(self, scan: Snapshot) -> Taken:
        """Keep every file of ``scan`` (the scan before the command) as it is now. Raises :class:`StoreUnusable`."""
        started = time.perf_counter()
        with self._lock:
            base = self._open()
            try:
                index = self._load(base)
                keys = self._keys
                fresh = [p for p, key in scan.files.items() if keys.get(p) != key]
                ask = [p for p in fresh if p not in index]  # a known path keeps git's answer while no .gitignore changes
                if self.ignored:  # kept by a session that left them out: copied now
                    fresh += [p for p, e in index.items() if e[5] == IGNORED and p in scan.files and keys.get(p) == scan.files[p]]
                gone = [p for p in index if p not in scan.files] if len(index) + len(ask) != len(scan.files) else []
                if any(p.rpartition("/")[2] == ".gitignore" for p in [*fresh, *gone]):  # what git ignores may have changed
                    asked = set(fresh)
                    fresh += [p for p in scan.files if p not in asked and index[p][5] == IGNORED]
                    ask = fresh
                taken = Taken()
                if fresh or gone:
                    ignored = set() if self.ignored else _ignored(self.root, ask) | {p for p in fresh if p not in ask and index[p][5] == IGNORED}
                    objects = os.open("objects", _DIR_FLAGS, dir_fd=base)
                    try:
                        for path in fresh:
                            index[path] = [*scan.files[path], *self._keep(objects, path, scan.files[path], path in ignored, taken)]
                            keys[path] = scan.files[path]
                    finally:
                        os.close(objects)
                    for path in gone:
                        del index[path]
                        keys.pop(path, None)
                    self._save(base, [*fresh, *gone])
                taken.entries = dict(index)
                if time.monotonic() >= self._next_prune:  # a session's first, then hourly: what no index entry names
                    self._next_prune = time.monotonic() + PRUNE_EVERY
                    objects = os.open("objects", _DIR_FLAGS, dir_fd=base)
                    try:
                        _prune(objects, {e[4] for e in index.values() if e[4]}, time.time() - PRUNE_AGE)  # type: ignore[misc]
                    finally:
                        os.close(objects)
            finally:
                os.close(base)
        taken.seconds = time.perf_counter() - started
        return taken

    def _keep(self, objects: int, path: str, key: Key, ignored: bool, taken: Taken) -> list[str | None]:
        """``[sha, why]`` of one new or changed file, its bytes copied into ``objects``."""
        mode = key[3]
        if ignored:
            return [None, IGNORED]
        if stat.S_ISLNK(mode):
            return [None, "a link"]
        if not stat.S_ISREG(mode):
            return [None, "not a regular file"]
        if key[0] > self.max_file:
            return [None, f"too large (over {self.max_file // (1024 * 1024)} MB)"]
        data = read_workspace_file(self.root, path)
        if data is None:
            return [None, "could not be read"]
        sha = hashlib.sha256(data).hexdigest()
        try:
            os.stat(sha, dir_fd=objects, follow_symlinks=False)
        except FileNotFoundError:
            write_at(objects, sha, data, sync=False)
        taken.copied += 1
        return [sha, None]

    # --- reading -------------------------------------------------------------------------------

    def read(self, sha: str) -> bytes | None:
        """The bytes of object ``sha``; None when it is missing or damaged (its bytes no longer hash to its name)."""
        if len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
            return None
        try:
            base = self._open()
        except StoreUnusable:
            return None
        try:
            objects = os.open("objects", _DIR_FLAGS, dir_fd=base)
            try:
                data = _read(objects, sha)
            finally:
                os.close(objects)
        except OSError:
            return None
        finally:
            os.close(base)
        return data if hashlib.sha256(data).hexdigest() == sha else None

    def prune(self) -> int:
        """Remove the objects no index entry names, older than :data:`PRUNE_AGE`; returns how many."""
        with self._lock:
            base = self._open()
            try:
                named = {str(e[4]) for e in self._load(base).values() if e[4]}
                objects = os.open("objects", _DIR_FLAGS, dir_fd=base)
                try:
                    return _prune(objects, named, time.time() - PRUNE_AGE)
                finally:
                    os.close(objects)
            finally:
                os.close(base)

    # --- the folder ----------------------------------------------------------------------------

    def _open(self) -> int:
        """The store's folder, opened (and made) below the state folder with no link followed."""
        from workspace_tools.files.journal_key import KeyUnusable, state_home
        from workspace_tools.host.files import LinkRefused, open_dir

        try:
            folder = self.folder or store_folder(self.root)
            top = state_home(self.root) / "cog" if self.folder is None else folder.parent
            top.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = open_dir(folder, top, create=True, mode=0o700)
        except LinkRefused as exc:
            raise StoreUnusable(f"a link in the snapshot store's path ({exc}): cog keeps snapshots only in a folder of its own; remove the link") from None
        except (OSError, KeyUnusable) as exc:
            raise StoreUnusable(f"the snapshot store cannot be used: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid():
                raise StoreUnusable(f"the snapshot store {self.folder or store_folder(self.root)} is not yours; remove it (cog makes it again)")
            try:
                os.mkdir("objects", 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            os.close(os.open("objects", _DIR_FLAGS, dir_fd=fd))
        except OSError as exc:
            os.close(fd)
            raise StoreUnusable(f"the snapshot store cannot be used ({exc.strerror or exc}): remove a link or file named objects in it") from None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _load(self, base: int) -> dict[str, list[object]]:
        """The index: ``index.json`` and the entries appended to ``index.log`` since it was written."""
        if self._index is None:
            try:
                loaded = json.loads(_read(base, "index.json"))
            except (OSError, ValueError):
                loaded = {}
            index = {p: e for p, e in loaded.items() if _usable(e)} if isinstance(loaded, dict) else {}
            try:
                log_lines = _read(base, "index.log").splitlines()
            except OSError:
                log_lines = []
            for line in log_lines:
                try:
                    path, entry = json.loads(line)
                except (ValueError, TypeError):
                    continue  # a line cut short
                if entry is None:
                    index.pop(path, None)
                elif isinstance(path, str) and _usable(entry):
                    index[path] = entry
            self._logged = len(log_lines)
            self._index = index
            self._keys = {p: tuple(e[:4]) for p, e in index.items()}  # type: ignore[misc]
        return self._index

    def _save(self, base: int, paths: list[str]) -> None:
        """The entries of ``paths`` appended to ``index.log`` (what changed costs what changed); the
        whole index written again once the log grew to a quarter of it. A cache, not fsync'd: lost,
        the next snapshot copies every file again."""
        index = self._index
        assert index is not None
        if self._logged + len(paths) > max(1000, len(index) // 4):
            write_at(base, "index.json", json.dumps(index, separators=(",", ":")).encode(), sync=False)
            try:
                os.unlink("index.log", dir_fd=base)
            except FileNotFoundError:
                pass
            self._logged = 0
            return
        lines = "".join(json.dumps([p, index.get(p)], separators=(",", ":")) + "\n" for p in paths).encode()
        fd = os.open("index.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=base)
        try:
            os.write(fd, lines)
        finally:
            os.close(fd)
        self._logged += len(paths)


def read_workspace_file(root: Path, rel: str) -> bytes | None:
    """A workspace file's bytes, no link followed on the way (None: gone, a link, unreadable)."""
    from workspace_tools.host.files import LinkRefused, open_dir

    path = root / rel
    try:
        folder = open_dir(path.parent, root)
    except (OSError, LinkRefused):
        return None
    try:
        return _read(folder, path.name)
    except OSError:
        return None
    finally:
        os.close(folder)


def disk_use(root: Path) -> int:
    """Bytes the workspace's store takes (0 when it has none)."""
    try:
        folder = store_folder(root)
    except Exception:  # noqa: BLE001 - a state folder that cannot be named has no store
        return 0
    return folder_bytes(folder)


def folder_bytes(folder: Path) -> int:
    """Bytes of the files below ``folder`` (no link followed; 0 when it does not exist)."""
    total = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _usable(entry: object) -> bool:
    """An index entry as :meth:`SnapshotStore.take` writes it: four ints, an object name or None, a reason or None."""
    return (isinstance(entry, list) and len(entry) == 6 and all(type(n) is int for n in entry[:4])
            and (entry[4] is None or isinstance(entry[4], str)) and (entry[5] is None or isinstance(entry[5], str)))


def _ignored(root: Path, paths: list[str]) -> set[str]:
    from workspace_tools.shell.tree_changes import _ignored as ask_git

    return ask_git(root, paths, []) if paths else set()



def _read(dir_fd: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{name} is not a regular file")
        return f.read()


def _prune(objects: int, named: set[str], older: float) -> int:
    removed = 0
    for entry in os.scandir(objects):
        if entry.name not in named and entry.stat(follow_symlinks=False).st_mtime < older:
            try:
                os.unlink(entry.name, dir_fd=objects)
                removed += 1
            except OSError:
                pass
    return removed
