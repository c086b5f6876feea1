"""A path from the workspace, opened on the host.

cog's own process writes in the workspace (``.cog/``: threads, undo journal, test reports; the
repository's ``info/exclude``) and decides by what it finds there (which repository git works
on). The workspace is hostile: a committed link, an unpacked tarball or a test run without the
sandbox can put a link where cog writes, or a ``.git`` that names another repository. Every such
step goes through this module, which follows no link:

- :func:`open_dir` / :func:`open_file`: every folder below a trusted root is opened with
  ``O_NOFOLLOW``, one at a time (:func:`open_below`, the one step of every such walk), then the
  file with ``O_NOFOLLOW``; a link on the way raises :class:`LinkRefused` naming it, and nothing is
  opened (or created) through it. The file tools' writes and reads open their folders this way too
  (:func:`workspace_tools.text.textfile.open_dir`); ``search_text`` keeps the folders it opened in a
  :class:`FolderCache`.
- :func:`refuse_link`: for what is opened by path (SQLite's database and its ``-wal`` /
  ``-journal`` siblings), a check with ``lstat`` in the folder's descriptor right before.
- :func:`repository`: whether a folder is in a git repository, and which, decided once per
  process from the host's view when the workspace is first looked at (:class:`Workspace` does it
  when it is made, before any test ran) and kept: a ``.git`` a test writes later is just a file.

A ``.git`` is accepted only when its git dir (and common dir) is inside the work tree holding it,
or it is a linked worktree or a submodule that git made, which points back at that work tree:

- worktree: ``.git`` says ``gitdir: <main>/.git/worktrees/<name>``, whose ``commondir`` leads
  to ``<main>/.git`` and whose ``gitdir`` file names this work tree's ``.git``;
- submodule: ``gitdir: <super>/.git/modules/<name>``, whose config's ``core.worktree`` is this
  work tree.

A test cannot write those files (they are outside the workspace). Anything else pointing outside
(``gitdir: /some/other/repo/.git``, a ``.git`` link, a ``commondir`` leading out) is not a
repository: git tools say so, and cog writes nothing there.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("cogcli")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class LinkRefused(OSError):
    """A folder or file on the way is a symbolic link: it was not followed and nothing was opened,
    created or written through it. ``where`` is the link (relative to the root it was met under)."""

    def __init__(self, where: str, target: str | None = None) -> None:
        super().__init__(errno.ELOOP, "is a symbolic link", where)
        self.where = where
        self.target = target

    def __str__(self) -> str:
        to = f" (to {self.target})" if self.target else ""
        return f"{self.where} is a symbolic link{to}; cog does not follow links there"


def link_target(name: str, dir_fd: int) -> str | None:
    """Where ``name`` in ``dir_fd`` points, when it is a symbolic link; None when it is not (or is missing)."""
    try:
        if not stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return None
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def open_dir(directory: Path, root: Path, *, create: bool = False, mode: int = 0o777) -> int:
    """A descriptor of ``directory`` (under ``root``, both resolved): ``root`` opened as it is
    (the caller trusts it), every folder below it with ``O_NOFOLLOW`` one at a time (``create``
    makes missing ones with ``mode``), so the descriptor is the folder the path names and never a
    link's target. A link in the way raises :class:`LinkRefused`, a file ``NotADirectoryError``."""
    parts = directory.relative_to(root).parts
    fd = os.open(root, _DIR_FLAGS)
    try:
        for i, part in enumerate(parts):
            if create:
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                inner = open_below(fd, part)
            except LinkRefused as refused:
                raise LinkRefused(Path(*parts[: i + 1]).as_posix(), refused.target) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_below(dir_fd: int, name: str) -> int:
    """The folder ``name`` inside the open folder ``dir_fd``, opened with ``O_NOFOLLOW``: the one
    step every walk below a trusted root takes (:func:`open_dir`, :class:`FolderCache`). A link
    raises :class:`LinkRefused`, a file ``NotADirectoryError``."""
    try:
        return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        target = link_target(name, dir_fd) if exc.errno in (errno.ELOOP, errno.ENOTDIR) else None
        if target is None:
            raise
        raise LinkRefused(name, target) from None


class FolderCache:
    """Open descriptors of the folders under a trusted ``root``, for a walk that opens many files
    (``search_text``): ``get("a/b")`` opens ``a/b`` from ``a``'s descriptor with
    :func:`open_below` (and ``a`` from the root's), never through a link, and keeps it for the next
    file there, so a folder costs one ``open`` however many files it holds. At most ``limit`` stay
    open, the least recently used closed first. A folder swapped for a link after it was opened
    changes nothing: its descriptor still names the folder that was there."""

    def __init__(self, root: Path, limit: int = 64) -> None:
        self._root = os.fspath(root)
        self._limit = limit
        self._open: OrderedDict[str, int | None] = OrderedDict()

    def get(self, folder: str) -> int | None:
        """The descriptor of ``folder`` (relative to the root with ``/``, ``""`` for the root); None
        when a part of it is a link, is not a folder or is gone (and so for the rest of the walk)."""
        found = self._open.get(folder, _UNSEEN)
        if found is not _UNSEEN:
            self._open.move_to_end(folder)
            return found
        fd: int | None
        try:
            if not folder:
                fd = os.open(self._root, _DIR_FLAGS)
            else:
                parent, _, name = folder.rpartition("/")
                parent_fd = self.get(parent)
                fd = None if parent_fd is None else open_below(parent_fd, name)
        except OSError:
            fd = None
        self._open[folder] = fd
        while len(self._open) > self._limit:
            _, old = self._open.popitem(last=False)
            if old is not None:
                os.close(old)
        return fd

    def close(self) -> None:
        for fd in self._open.values():
            if fd is not None:
                os.close(fd)
        self._open.clear()


_UNSEEN: Any = object()


def open_file(path: Path, root: Path, flags: int, mode: int = 0o666, *, create_dirs: bool = False) -> int:
    """A descriptor of the file ``path`` (under ``root``, both resolved), its folders opened as
    :func:`open_dir` opens them and the file itself with ``O_NOFOLLOW``: a link anywhere raises
    :class:`LinkRefused` naming it. ``flags`` are :func:`os.open`'s (``O_NOFOLLOW`` and
    ``O_CLOEXEC`` are added)."""
    dir_fd = open_dir(path.parent, root, create=create_dirs)
    try:
        return open_at(dir_fd, path.name, flags, mode, where=path.relative_to(root).as_posix())
    finally:
        os.close(dir_fd)


def open_at(dir_fd: int, name: str, flags: int, mode: int = 0o666, *, where: str | None = None) -> int:
    """``name`` in the folder ``dir_fd`` opened with ``O_NOFOLLOW``; a link raises :class:`LinkRefused`."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(where or name, link_target(name, dir_fd)) from None
        raise


def write_at(dir_fd: int, name: str, data: bytes, *, sync: bool = True) -> None:
    """``name`` in ``dir_fd`` holding ``data``, fsync'd (unless not ``sync``), appearing whole or not at
    all: written to a temporary name of this process (never through a link) and renamed over it."""
    tmp = f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    if sync:
        os.fsync(dir_fd)


def refuse_link(dir_fd: int, name: str, *, where: str | None = None) -> None:
    """Raise :class:`LinkRefused` when ``name`` in ``dir_fd`` is a symbolic link. For what is
    opened by path (SQLite opens its database and the ``-wal``/``-journal`` beside it by name),
    checked right before it is opened, in a folder opened by :func:`open_dir`."""
    target = link_target(name, dir_fd)
    if target is not None:
        raise LinkRefused(where or name, target)


# --- which repository -----------------------------------------------------------------------


@dataclass(frozen=True)
class Repository:
    """A git repository as cog runs git on it: ``GIT_DIR`` and ``GIT_WORK_TREE``."""

    #: the folder holding ``.git``: the workspace or a folder above it
    work_tree: Path
    #: the git dir (resolved); a linked worktree's own, under the main repository's ``worktrees/``
    git_dir: Path
    #: where the shared files are (``info/exclude``, ``config``, ``hooks``): ``git_dir`` but for a linked worktree
    common_dir: Path


_decided: dict[Path, Repository | None] = {}
_decided_lock = threading.Lock()


def repository(path: str | Path) -> Repository | None:
    """The repository whose work tree holds ``path``, None when there is none (or the ``.git``
    found is refused: see the module). Decided once per process: the first look at a folder (the
    workspace, when its :class:`Workspace` is made) is the answer for it from then on, whatever a
    test writes there later. A folder under it with a ``.git`` of its own (a nested checkout, a
    submodule) is that repository, when its ``.git`` passes the same rule."""
    here = Path(path).resolve()
    with _decided_lock:
        decided_at = next((f for f in (here, *here.parents) if f in _decided), None)
        if decided_at is None:
            found = _find_repository(here, stop=None)
            _decided[here] = found
            return found
        decision = _decided[decided_at]
    if decided_at == here:
        return decision
    nested = _find_repository(here, stop=decided_at)
    return decision if nested is _NOT_FOUND else nested


class _NotFound:
    pass


_NOT_FOUND: Any = _NotFound()
_warned: set[Path] = set()


def _find_repository(here: Path, *, stop: Path | None) -> Repository | None:
    """The repository of the first ``.git`` from ``here`` up (None when it is refused), up to but
    not including ``stop``; :data:`_NOT_FOUND` when ``stop`` was reached without one."""
    for folder in (here, *here.parents):
        if folder == stop:
            return _NOT_FOUND
        dot_git = folder / ".git"
        try:
            info = os.lstat(dot_git)
        except OSError:
            continue
        found, why = _accept(folder, dot_git, info)
        if found is None and dot_git not in _warned:
            _warned.add(dot_git)
            log.warning("%s is not used as a git repository: %s", _shown(dot_git), why)
        return found
    return None if stop is None else _NOT_FOUND


def _accept(tree: Path, dot_git: Path, info: os.stat_result) -> tuple[Repository | None, str]:
    """The repository ``tree/.git`` makes, or None and why it is refused."""
    if stat.S_ISLNK(info.st_mode):
        target = Path(os.path.realpath(dot_git))
        if not _within(target, tree):
            return None, f"it is a symbolic link to {_shown(target)}, outside {_shown(tree)}"
        git_dir = target
    elif stat.S_ISDIR(info.st_mode):
        git_dir = Path(os.path.realpath(dot_git))
    elif stat.S_ISREG(info.st_mode):
        named = _gitdir_line(dot_git)
        if named is None:
            return None, "it is a file without a 'gitdir:' line"
        git_dir = Path(os.path.realpath(tree / named))
        if not git_dir.is_dir():
            return None, f"the git dir it names, {_shown(git_dir)}, is not a folder"
        if not _within(git_dir, tree):
            linked = _linked_back(tree, git_dir)
            if linked is None:
                return None, (
                    f"it names the git dir {_shown(git_dir)}, outside {_shown(tree)}, which is neither a worktree "
                    "nor a submodule of this folder"
                )
            return linked, ""
    else:
        return None, "it is neither a folder nor a file"
    common = _common_dir(git_dir)
    if common is None or not _within(common, tree):
        return None, f"its commondir leads to {_shown(common) if common else 'nowhere'}, outside {_shown(tree)}"
    return Repository(tree, git_dir, common), ""


def _linked_back(tree: Path, git_dir: Path) -> Repository | None:
    """A git dir outside ``tree`` that git made for it: a linked worktree's or a submodule's."""
    real_dot_git = Path(os.path.realpath(tree / ".git"))
    if git_dir.parent.name == "worktrees":
        common = _common_dir(git_dir)
        back = _read_line(git_dir / "gitdir")
        if common is not None and common == git_dir.parent.parent and back and Path(os.path.realpath(git_dir / back)) == real_dot_git:
            return Repository(tree, git_dir, common)
    worktree = _core_worktree(git_dir / "config")
    if worktree is not None and Path(os.path.realpath(git_dir / worktree)) == tree:
        common = _common_dir(git_dir)
        if common is not None:
            return Repository(tree, git_dir, common)
    return None


def _common_dir(git_dir: Path) -> Path | None:
    """``git_dir`` itself, or where its ``commondir`` file leads (None when that cannot be read)."""
    pointer = git_dir / "commondir"
    if not os.path.lexists(pointer):
        return git_dir
    named = _read_line(pointer)
    return Path(os.path.realpath(git_dir / named)) if named else None


def _gitdir_line(dot_git: Path) -> str | None:
    text = _read_line(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    return text.split(":", 1)[1].strip() or None


def _read_line(path: Path) -> str | None:
    """The first line of a small file (``.git``, ``commondir``, ``gitdir``), not through a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, 8192)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "surrogateescape").strip().splitlines()
    return lines[0].strip() if lines else None


def _core_worktree(config: Path) -> str | None:
    """``core.worktree`` of a git config file git wrote (a submodule's): read, never run."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line[1:].split("]", 1)[0].strip().lower()
            continue
        key, sep, value = line.partition("=")
        if sep and section == "core" and key.strip().lower() == "worktree":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value or None
    return None


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def resolves_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``folder`` or below it with every link followed: where a read or a write on
    the host really lands (a state folder, a search path, a bind), whatever the names say."""
    return _within(Path(os.path.realpath(path)), Path(os.path.realpath(folder)))


def _shown(path: Path) -> str:
    return repr(str(path))[1:-1]


def exclude_from_git(workspace: Path, pattern: str | None = None) -> bool:
    """Add ``pattern`` (by default the workspace's ``.cog/``, as a path from the top of the work
    tree) to the repository's ``info/exclude`` once; False when ``workspace`` is in no git repository
    (:func:`workspace_tools.repository`: decided once per process, a ``.git`` naming
    another repository is none) or the file cannot be written. The file and the folders on the way
    are opened without following links: a link there is refused with a one-line warning and
    nothing is written through it."""
    root = Path(workspace).resolve()
    repo = repository(root)
    if repo is None:
        return False
    if pattern is None:
        pattern = _exclude_pattern(root.relative_to(repo.work_tree).as_posix())
        if pattern is None:
            return False
    common = repo.common_dir
    # the walk starts at the work tree when the git dir is in it (so a .git link is not followed);
    # a worktree's or submodule's git dir outside it was checked to be one git made
    base = repo.work_tree if repo.work_tree in (common, *common.parents) else common
    exclude = common / "info" / "exclude"
    shown = exclude.relative_to(base).as_posix() if base == repo.work_tree else str(exclude)
    try:
        os.close(open_dir(common, base))  # the git dir itself is never made here
        fd = open_file(exclude, base, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, create_dirs=True)
        with os.fdopen(fd, "r+b") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise OSError(f"{shown} is not a regular file")
            text = f.read().decode("utf-8", "replace")
            lines = {line.strip() for line in text.splitlines()}
            if pattern in lines or pattern.strip("/") + "/" in lines:
                return True
            f.write((("" if not text or text.endswith("\n") else "\n") + pattern + "\n").encode("utf-8"))
    except LinkRefused as exc:
        where = exc.where if base == repo.work_tree else str(base / exc.where)
        log.warning("not adding %s to %s: %s is a symbolic link; cog writes in .git/ only without following links", pattern, shown, where)
        return False
    except OSError as exc:
        log.warning("could not add %s to %s: %s", pattern, shown, exc.strerror or exc)
        return False
    return True


def _exclude_pattern(rel: str) -> str | None:
    """``/<rel>/.cog/`` as a gitignore line matching only that folder; None when ``rel`` holds a
    control character (a line break would make two lines)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel):
        return None
    if rel == ".":
        return f"/.cog/"
    escaped = "".join("\\" + c if c in "\\*?[" else c for c in rel)
    return f"/{escaped}/.cog/"
