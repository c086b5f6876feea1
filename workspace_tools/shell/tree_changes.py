"""Which files of the workspace a command changed: a scan of the tree before it and after it.

A scan records each file's size, mtime and inode (``lstat``, no link followed, ``.git/`` and
``.cog/`` left out, and environments and caches — ``.venv``, ``node_modules``, ``__pycache__``,
Cargo's ``target/``, a real virtualenv: :mod:`workspace_tools.workspace.envdirs`, as git_status
leaves them out — but never a folder holding files git tracks, so a planted ``pyvenv.cfg`` hides
nothing; at most :data:`SCAN_LIMIT` entries); comparing two scans gives the files created, modified
and deleted. Files git ignores (``__pycache__/``, ``build/``, ``node_modules/``) are left out of the
count after the fact with one ``git check-ignore`` (no program of the repository's runs:
:mod:`workspace_tools.host.git`), so a test run's caches do not read as changes; git is not asked
about a path below a ``.gitignore`` that is not a regular file (a FIFO would hold it:
:mod:`workspace_tools.workspace.git_reads`), and such a path counts as changed. What a scan skips
is still swept for setuid files (:mod:`workspace_tools.sandbox.leftovers`).

Measured on this machine (2 busy cores): cog's own checkout is 21,907 files with its ``.venv``,
1.27 s a scan when the venv was walked; with environments left out, 429 files, 3–15 ms a scan. A
small project (a few files) ≈ 0.1 ms.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from workspace_tools.workspace.envdirs import env_kind

log = logging.getLogger("cogcli")

#: entries a scan looks at before it stops (then the count says it is incomplete)
SCAN_LIMIT = 200_000
#: folders never scanned: cog's and git's own (the sandbox keeps them read-only anyway)
SKIPPED = frozenset({".git", ".cog"})

Key = tuple[int, int, int, int]  # size, mtime_ns, inode, mode


@dataclass
class Snapshot:
    """A work tree's files as seen at one moment."""
    files: dict[str, Key] = field(default_factory=dict)
    complete: bool = True
    #: the folders seen (environments too, not what is in them): undo removes a folder a command made
    dirs: set[str] = field(default_factory=set)


@dataclass
class TreeChanges:
    """The files a command created, modified and deleted."""
    created: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    #: False when a scan stopped at :data:`SCAN_LIMIT`: files further in were not compared
    complete: bool = True
    #: what a reader should know about the count (a ``.gitignore`` git was not handed)
    notes: list[str] = field(default_factory=list)

    def paths(self) -> list[str]:
        return sorted([*self.created, *self.modified, *self.deleted])

    def __len__(self) -> int:
        return len(self.created) + len(self.modified) + len(self.deleted)


def scan(root: Path, limit: int = SCAN_LIMIT, *, tracked: frozenset[str] = frozenset()) -> Snapshot:
    """Every file and link under ``root`` (relative paths, ``/`` separated) with its stat key;
    environments left out unless they are in ``tracked`` (folders holding tracked files:
    :func:`workspace_tools.workspace.envdirs.tracked_folders`)."""
    snap = Snapshot()
    stack = [""]
    seen = 0
    while stack:
        rel = stack.pop()
        try:
            entries = os.scandir(os.path.join(root, rel) if rel else root)
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > limit:
                    snap.complete = False
                    return snap
                path = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    snap.dirs.add(path)
                    if not (rel == "" and entry.name in SKIPPED) and (path in tracked or env_kind(entry.path, entry.name) is None):
                        stack.append(path)
                    continue
                snap.files[path] = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)
    return snap


def compare(before: Snapshot, after: Snapshot, root: Path, *, ignored_too: bool = False) -> TreeChanges:
    """What changed between two scans of ``root``, without the files git ignores there (unless ``ignored_too``)."""
    changes = TreeChanges(complete=before.complete and after.complete)
    for path, key in after.files.items():
        old = before.files.get(path)
        if old is None:
            changes.created.append(path)
        elif old != key:
            changes.modified.append(path)
    changes.deleted = [p for p in before.files if p not in after.files]
    ignored = set() if ignored_too else _ignored(root, [*changes.created, *changes.modified, *changes.deleted], changes.notes)
    if ignored:
        changes.created = [p for p in changes.created if p not in ignored]
        changes.modified = [p for p in changes.modified if p not in ignored]
        changes.deleted = [p for p in changes.deleted if p not in ignored]
    for part in (changes.created, changes.modified, changes.deleted):
        part.sort()
    return changes


def _ignored(root: Path, paths: list[str], notes: list[str]) -> set[str]:
    """Those of ``paths`` git ignores in the workspace (none when it is no repository). A path
    below a ``.gitignore`` git would wait on is not asked about (a note in ``notes`` says so)."""
    if not paths:
        return set()
    import subprocess

    from workspace_tools.host.git import GitNotFound, git_dir, run_git
    from workspace_tools.workspace.git_reads import blocking_above

    if git_dir(root) is None:
        return set()
    blocking = blocking_above(root, paths)
    if blocking:
        bad = sorted(blocking)
        below = tuple(b.rpartition("/")[0] + "/" for b in bad if "/" in b)
        paths = [] if any("/" not in b or b.startswith((".git/", "../")) for b in bad) else [p for p in paths if not p.startswith(below)]
        notes.append(f"{', '.join(bad[:3])} is not a regular file (git would wait on it): changed files below it are "
                     "all listed, ignored or not; remove it")
        if not paths:
            return set()
    listed = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0"
    try:
        done = run_git(root, ["check-ignore", "--no-index", "-z", "--stdin"], input=listed, timeout=60, literal_pathspecs=False)
    except (OSError, LookupError, GitNotFound, subprocess.TimeoutExpired) as exc:
        log.warning("could not ask git which changed files it ignores: %s", exc)
        return set()
    if done.returncode not in (0, 1):
        log.warning("git check-ignore failed: %s", done.stderr.decode(errors="replace").strip()[:200])
        return set()
    return {p.decode("utf-8", "surrogateescape") for p in done.stdout.split(b"\0") if p}
