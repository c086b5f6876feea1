"""The files of the workspace as a person would list them: .gitignore respected, environments,
caches and junk left out (a folder git tracks files in is one by its name only, never by a planted
``pyvenv.cfg``), and walked without git when git would wait on a FIFO ``.gitignore``."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from workspace_tools.workspace.envdirs import EnvDirs, LeftOut, count_files, is_cog_state
from workspace_tools.workspace.git_reads import blocking_git_files
from workspace_tools.host.git import GitNotFound, one_config_read, run_git, start_git
from workspace_tools.workspace.paths import Workspace

JUNK_SUFFIXES = (".pyc", ".pyo")
JUNK_NAMES = frozenset({".DS_Store", "Thumbs.db"})
#: version-control folders, never listed by a walk (git ls-files never lists its own either)
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass
class Listing:
    """The files under a folder (sorted posix paths relative to the workspace root), and the
    environment/cache folders left out of them (:mod:`workspace_tools.workspace.envdirs`)."""

    files: list[str]
    left_out: list[LeftOut] = field(default_factory=list)
    #: the files that git tracks (empty outside a repository): the project's own, listed first
    tracked: frozenset[str] = frozenset()

    def left_out_text(self) -> str:
        """One line naming every left-out folder, or ''."""
        if not self.left_out:
            return ""
        named = ", ".join(f.shown for f in self.left_out[:10])
        more = f" and {len(self.left_out) - 10} more" if len(self.left_out) > 10 else ""
        first = self.left_out[0].path
        return f"[not shown: {named}{more}: environments and caches, not the project; pass path={first} to look inside]\n"


def workspace_files(workspace: Workspace, base: Path) -> Listing:
    """Files under ``base`` (a resolved path inside the workspace), as sorted posix paths
    relative to the workspace root, environments and caches left out (and named) unless ``base``
    is inside one. Read from git's index plus its untracked files in a repository (as fast as
    ``git ls-files``), by a walk otherwise. ``.cog/`` is never listed."""
    return StagedListing(workspace, base).finish()


class StagedListing:
    """:func:`workspace_files` in two stages, so a caller can work on the tracked files while git
    still walks the work tree for untracked ones: :meth:`first` gives the files known early (the
    tracked ones in a repository; all of them otherwise), :meth:`finish` the whole listing."""

    def __init__(self, workspace: Workspace, base: Path) -> None:
        self.workspace, self.base = workspace, base
        prefix = workspace.relative(base)
        self.prefix = "" if prefix == "." else prefix
        self._at = self.prefix + "/" if self.prefix else ""
        self._envs = EnvDirs(workspace.root, inside=self.prefix)
        self._done: Listing | None = None
        self._runs: tuple[subprocess.Popen[bytes], ...] = ()
        self._tracked: list[str] | None = None
        self._left: dict[str, int] = {}
        if is_cog_state(self.prefix) or not base.exists():
            self._done = Listing([])
        elif base.is_file():
            self._done = Listing([self.prefix])
        elif not base.is_dir():
            self._done = Listing([])
        elif self.prefix and EnvDirs(workspace.root).excluded_by(self.prefix) is not None:
            self._done = self._walk()  # asked for explicitly; git may ignore all of it
        elif blocking_git_files(workspace.root):
            self._done = self._walk()  # a FIFO .gitignore would hold git: listed without it (git_reads)
        else:
            self._start()

    @property
    def from_git(self) -> bool:
        """Whether the listing comes from git (so ``git grep`` sees the same tracked files)."""
        return bool(self._runs)

    def _start(self) -> None:
        try:
            with one_config_read():
                self._runs = (
                    start_git(self.base, ["ls-files", "--others", "--exclude-standard", "--directory", "--no-empty-directory", "-z", "--", "."]),
                    # tagged: "H path" for every tracked file ("S", "M": sparse, unmerged), "R path" again for one deleted since
                    start_git(self.base, ["ls-files", "--cached", "--deleted", "-t", "-z", "--", "."]),
                )
        except (OSError, LookupError, GitNotFound):  # no repository (a folder that only looks like one is not), or no git
            self._stop()
            self._done = self._walk()

    def _stop(self) -> None:
        for run in self._runs:
            if run.poll() is None:
                run.kill()
            if run.stdout is not None and not run.stdout.closed:
                run.stdout.close()
            run.wait()
        self._runs = ()

    def first(self) -> list[str]:
        """The files known early: the tracked ones (environments left out) in a repository."""
        if self._done is not None:
            return self._done.files
        if self._tracked is None:
            self._tracked = self._read_tracked()
            if self._tracked is None:
                self._stop()
                self._done = self._walk()  # not a repository (or git refused it)
                return self._done.files
        return self._tracked

    def finish(self) -> Listing:
        tracked = self.first()
        if self._done is not None:
            return self._done
        untracked_out, _ = self._runs[0].communicate()
        if self._runs[0].returncode != 0:
            self._done = self._walk()
            return self._done
        files = tracked + self._untracked(untracked_out)
        files = [f for f in files if not is_cog_state(f)]
        left_out = [LeftOut(path, self._envs.kind(path), n) for path, n in sorted(self._left.items()) if not is_cog_state(path)]
        self._done = Listing(sorted(set(files)), left_out, frozenset(tracked))
        return self._done

    def _read_tracked(self) -> list[str] | None:
        tracked_out, _ = self._runs[1].communicate()
        if self._runs[1].returncode != 0:
            return None
        at, left = self._at, self._left
        names = tracked_out.split(b"\0")
        deleted = {raw[2:] for raw in names if raw[:2] == b"R "}
        # a folder holding tracked files is an environment by its name only, never by a planted pyvenv.cfg
        envs = self._envs = EnvDirs(self.workspace.root, inside=self.prefix, tracked=_folders_of(at, names))
        tracked: list[str] = []
        for raw in names:
            if len(raw) < 3 or raw[:2] == b"R " or (deleted and raw[2:] in deleted):
                continue
            rel = at + _decode(raw[2:])
            env = envs.excluded_file(rel, probe=False)
            if env is not None:
                left[env] = left.get(env, 0) + 1
                continue
            tracked.append(rel)
        return [f for f in tracked if not is_cog_state(f)] if b".cog" in tracked_out else tracked

    def _untracked(self, out: bytes) -> list[str]:
        at, left, envs = self._at, self._left, self._envs
        files: list[str] = []
        counted: set[str] = set()
        more_dirs: list[str] = []
        for raw in out.split(b"\0"):
            if not raw:
                continue
            rel = at + os.fsdecode(raw)
            if rel.endswith("/"):
                folder = rel.rstrip("/")
                env = envs.excluded_by(folder)
                if env is None:
                    more_dirs.append(os.fsdecode(raw))  # a new folder of the project: list what is in it
                elif env == folder:
                    counted.add(env)
                    left[env] = left.get(env, 0) + count_files(os.path.join(self.workspace.root, env))
                elif env not in counted:
                    left.setdefault(env, 0)
                continue
            env = envs.excluded_file(rel)
            if env is not None:
                left[env] = left.get(env, 0) + 1
                continue
            files.append(rel)
        if more_dirs:
            files += untracked_files(self.base, at, more_dirs, envs, left)
        return files

    def _walk(self) -> Listing:
        return _walk_listing(self.workspace, self.base, self.prefix, self._envs)


def _folders_of(at: str, names: list[bytes]) -> frozenset[str]:
    """The folders (workspace-relative) that hold the files of git's tagged ``ls-files -t`` lines."""
    folders: set[str] = {at.rstrip("/")}
    for raw in names:
        folder = at + _decode(raw[2:]).rpartition("/")[0] if b"/" in raw else at.rstrip("/")
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    return frozenset(folders)


def _decode(raw: bytes) -> str:
    """A path git printed, as :func:`os.fsdecode` gives it (UTF-8, undecodable bytes escaped)."""
    return raw.decode("utf-8", "surrogateescape")


def untracked_files(base: Path, at: str, folders: list[str], envs: EnvDirs, left: dict[str, int]) -> list[str]:
    """The untracked files in new project folders (git collapsed each to ``folder/``), without
    the environments inside them."""
    try:
        done = run_git(base, ["ls-files", "--others", "--exclude-standard", "-z", "--", *folders])
    except (OSError, subprocess.SubprocessError, LookupError, GitNotFound):
        return []
    if done.returncode != 0:
        return []
    files: list[str] = []
    for raw in done.stdout.split(b"\0"):
        if not raw:
            continue
        rel = at + os.fsdecode(raw)
        env = envs.excluded_file(rel)
        if env is None:
            files.append(rel)
        else:
            left[env] = left.get(env, 0) + 1
    return files


def _walk_listing(workspace: Workspace, base: Path, prefix: str, envs: EnvDirs) -> Listing:
    """A walk of ``base`` outside a repository: version-control folders and junk skipped,
    environments and caches left out and counted."""
    at = prefix + "/" if prefix else ""
    found: list[str] = []
    left: list[LeftOut] = []
    for folder, dirs, names in os.walk(base):
        rel_folder = Path(folder).relative_to(base).as_posix()
        rel_folder = at + ("" if rel_folder == "." else rel_folder + "/")
        kept = []
        for d in dirs:
            rel = rel_folder + d
            if d in VCS_DIRS or d.endswith(".egg-info"):
                continue
            if envs.excluded_by(rel) is not None:
                if not is_cog_state(rel):
                    left.append(LeftOut(rel, envs.kind(rel), count_files(os.path.join(workspace.root, rel))))
                continue
            kept.append(d)
        dirs[:] = kept
        for name in names:
            if name in JUNK_NAMES or name.endswith(JUNK_SUFFIXES):
                continue
            found.append(rel_folder + name)
    return Listing(sorted(found), sorted(left, key=lambda f: f.path))


@lru_cache(maxsize=64)
@lru_cache(maxsize=512)
def glob_regex(pattern: str, *, ignore_case: bool = False) -> Any:
    """A glob as a regex over posix paths: ``*`` and ``?`` stay within one folder, ``**`` spans
    folders (``**/`` may match none), ``[...]`` is a character class.

    Compiled for RE2, so matching is linear in the name: with Python's backtracking engine
    ``*a*a*a*a*b`` (a model's ``list_files`` pattern, or a workspace's ``secret_globs``) took
    minutes on one 255-character file name. A glob RE2 cannot read raises :class:`re.error`."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = pattern.find("]", i + 2)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = close + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return linear_regex("".join(out) + r"\z", ignore_case=ignore_case)


def linear_regex(source: str, *, ignore_case: bool = False) -> Any:
    """``source`` (RE2 syntax: ``\\z`` for the end) compiled for RE2, whose matching is linear in the
    text; :class:`re.error` when RE2 cannot read it. Glob regexes are joined with ``|`` through here."""
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    options.case_sensitive = not ignore_case
    try:
        return _LinearPattern(re2.compile(source, options))
    except re2.error as exc:
        raise re.error(f"not a glob cog can read: {exc}") from None


class _LinearPattern:
    """An RE2 pattern that also matches names which are not UTF-8 (``caf\\udce9.txt``, as
    ``os.fsdecode`` gives them): RE2 takes only encodable text, so each such character is matched
    as a ``?`` (one character for one: ``?`` and ``*`` in a glob still line up)."""

    __slots__ = ("_re", "pattern")

    def __init__(self, compiled: Any) -> None:
        self._re = compiled
        self.pattern: str = compiled.pattern

    def match(self, text: str) -> Any:
        try:
            return self._re.match(text)
        except UnicodeEncodeError:
            return self._re.match(text.encode("utf-8", "replace").decode("utf-8"))


def matches_glob(rel: str, pattern: str, *, base: str = "") -> bool:
    """Whether ``rel`` (relative to the workspace) matches ``pattern``: a pattern without ``/``
    is matched against the file name, one with ``/`` against the path from the workspace root
    or from ``base``."""
    regex = glob_regex(pattern.lstrip("/") if "/" in pattern else pattern)
    if "/" not in pattern:
        return regex.match(rel.rsplit("/", 1)[-1]) is not None
    if regex.match(rel):
        return True
    if base and base != "." and rel.startswith(base + "/"):
        return regex.match(rel[len(base) + 1 :]) is not None
    return False
