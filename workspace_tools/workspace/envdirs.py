"""What is an environment or a tool cache, not the project: the one place that decides.

Virtualenvs, package folders and caches (``.venv``, ``node_modules``, ``__pycache__``, …) hold
thousands of files nobody wrote for this project. ``list_files``, ``search_text``, ``git_status``
and ``git_diff`` leave them out whether or not ``.gitignore`` does (before Python 3.13 ``python -m
venv`` writes no ``.gitignore`` into the folder), name each one once, and still look inside when
a path points into one explicitly. ``.cog/`` (cog's own threads and undo records) is never shown.

A folder is a virtualenv by its content only when it really is one: a ``pyvenv.cfg`` file beside
its interpreter (``bin/python…``, ``Scripts/python.exe``) or its ``lib/pythonX.Y/site-packages``; a
``pyvenv.cfg`` planted in ``src/`` does not hide ``src/``. And a folder that holds files git tracks
is never left out of what a step changed (:func:`tracked_folders`; ``EnvDirs(tracked=…)``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

#: folder names that are always an environment or a cache, and what to call them
ENV_DIR_NAMES: dict[str, str] = {
    ".venv": "a virtualenv",
    "venv": "a virtualenv",
    ".tox": "tox environments",
    ".nox": "nox environments",
    "node_modules": "npm packages",
    "__pycache__": "Python bytecode",
    ".mypy_cache": "mypy's cache",
    ".pytest_cache": "pytest's cache",
    ".ruff_cache": "ruff's cache",
    ".cog": "cog's own state",
}
#: the folder cog keeps its threads and undo records in: never listed, searched or diffed
COG_DIR = ".cog"
#: counting the files of a left-out folder stops here (the count then reads "100,000+")
MAX_COUNTED = 100_000


def env_kind(folder: Path | str, name: str | None = None, *, probe: bool = True) -> str | None:
    """What ``folder`` is when it is an environment or a cache ("a virtualenv", …), else None.

    By name (``.venv``, ``node_modules``, …), by content (a ``pyvenv.cfg`` with an interpreter or a
    ``site-packages`` beside it: :func:`is_virtualenv`) or by its neighbour (``target/`` next to a ``Cargo.toml`` is Cargo's output).
    ``probe=False`` decides by name alone (no file system access)."""
    folder = os.fspath(folder)
    name = os.path.basename(folder) if name is None else name
    kind = ENV_DIR_NAMES.get(name)
    if kind is not None or not probe:
        return kind
    if name == "target" and os.path.isfile(os.path.join(os.path.dirname(folder), "Cargo.toml")):
        return "Cargo build output"
    if is_virtualenv(folder):
        return "a virtualenv"
    return None


def is_virtualenv(folder: str) -> bool:
    """Whether ``folder`` is shaped like a virtualenv: a regular ``pyvenv.cfg`` (not a link) and its
    interpreter (``bin/python…`` or ``Scripts/python.exe``) or ``lib/pythonX.Y/site-packages``.
    Links are not followed on the way; nothing is read."""
    try:
        if not stat.S_ISREG(os.lstat(os.path.join(folder, "pyvenv.cfg")).st_mode):
            return False
        if os.path.lexists(os.path.join(folder, "Scripts", "python.exe")):
            return True
        bin_dir, lib_dir = os.path.join(folder, "bin"), os.path.join(folder, "lib")
        if os.path.isdir(bin_dir) and not os.path.islink(bin_dir):  # bin/python is a link in most venvs: fine
            with os.scandir(bin_dir) as entries:
                if any(e.name.startswith("python") for e in entries):
                    return True
        if os.path.isdir(lib_dir) and not os.path.islink(lib_dir):
            with os.scandir(lib_dir) as entries:
                for entry in entries:
                    packages = os.path.join(entry.path, "site-packages")
                    if entry.name.startswith("python") and entry.is_dir(follow_symlinks=False) and os.path.isdir(packages) \
                            and not os.path.islink(packages):
                        return True
    except OSError:
        return False
    return False


def tracked_folders(root: Path) -> frozenset[str]:
    """The workspace-relative folders that hold (at any depth) a file git tracks (``""`` included),
    or an empty set outside a repository: such a folder is never left out as an environment of
    what a step changed. ``git ls-files`` reads the index only (no ``.gitignore``)."""
    import subprocess

    from workspace_tools.host.git import GitNotFound, run_git

    try:
        done = run_git(root, ["ls-files", "--cached", "-z"], timeout=60)
    except (OSError, LookupError, GitNotFound, subprocess.SubprocessError):
        return frozenset()
    if done.returncode != 0:
        return frozenset()
    folders: set[str] = set()
    for raw in done.stdout.split(b"\0"):
        folder = raw.decode("utf-8", "surrogateescape").rpartition("/")[0]
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    folders.add("")
    return frozenset(folders)


@dataclass(frozen=True)
class LeftOut:
    """A folder left out of a listing: its workspace-relative path, what it is, how many files."""

    path: str
    kind: str
    files: int

    @property
    def shown(self) -> str:
        count = f"{MAX_COUNTED:,}+" if self.files >= MAX_COUNTED else f"{self.files:,}"
        return f"{self.path}/ ({self.kind}, {count} file{'s' if self.files != 1 else ''})"

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path + "/", "kind": self.kind, "files": self.files}


def count_files(folder: Path | str) -> int:
    """Files under ``folder`` (links not followed), stopping at :data:`MAX_COUNTED`."""
    total = 0
    stack = [str(folder)]
    while stack and total < MAX_COUNTED:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            total += 1
                    except OSError:
                        continue
        except OSError:
            continue
    return min(total, MAX_COUNTED)


class EnvDirs:
    """Answers "is this workspace-relative folder (or a folder above it) an environment?" with a
    memo, so a listing of thousands of files costs one check per folder."""

    def __init__(self, root: Path, *, inside: str = "", tracked: frozenset[str] = frozenset(), keep_tracked: bool = False) -> None:
        self.root = root
        self._at = os.fspath(root) + os.sep
        #: a folder the caller asked about explicitly: environments at or above it are not left out
        self.inside = inside.strip("/") if inside not in (".", "") else ""
        self._memo: dict[str, str | None] = {"": None}
        self._kinds: dict[str, str] = {}
        #: folders holding files git tracks: never a virtualenv by content (a planted ``pyvenv.cfg``);
        #: with ``keep_tracked`` never left out at all (what a step changed: git_status, git_diff)
        self._tracked = tracked
        self._keep_tracked = keep_tracked

    def excluded_by(self, folder: str, *, probe: bool = True) -> str | None:
        """The environment folder that ``folder`` is or lies in, or None. ``probe=False`` looks at
        names only. A folder in ``tracked`` is judged by name only, or (``keep_tracked``) never left out."""
        found = self._memo.get(folder, "\0")
        if found != "\0":
            return found
        parent, _, name = folder.rpartition("/")
        above = self.excluded_by(parent, probe=probe)
        if above is not None:
            result: str | None = above
        elif self._is_explicit(folder):
            result = None
        else:
            if folder in self._tracked:
                kind = None if self._keep_tracked else env_kind(self._at + folder, name, probe=False)
            else:
                kind = env_kind(self._at + folder, name, probe=probe)
            if kind is not None:
                self._kinds[folder] = kind
            result = folder if kind is not None else None
        self._memo[folder] = result
        return result

    def excluded_file(self, rel: str, *, probe: bool = True) -> str | None:
        """The environment folder a workspace-relative file lies in, or None."""
        folder = rel.rpartition("/")[0]
        return self.excluded_by(folder, probe=probe) if folder else None

    def kind(self, folder: str) -> str:
        return self._kinds.get(folder) or env_kind(self._at + folder) or "an environment"

    def _is_explicit(self, folder: str) -> bool:
        """``folder`` is the one asked for or on the way to it (``.venv`` when listing ``.venv/lib``);
        ``.cog`` never is."""
        if folder.rpartition("/")[2] == COG_DIR:
            return False
        return bool(self.inside) and (self.inside == folder or self.inside.startswith(folder + "/"))


def is_cog_state(rel: str) -> bool:
    """Whether a workspace-relative path is ``.cog`` or inside it (at any depth)."""
    return COG_DIR in rel and COG_DIR in rel.split("/")
