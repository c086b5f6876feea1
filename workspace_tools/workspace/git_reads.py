"""The files git reads from the work tree by their name — ``.gitignore`` and ``.gitattributes`` in
every folder it looks at — checked before cog hands git the workspace.

git opens them without following a link but also without ``O_NONBLOCK``: a named pipe (FIFO) there
holds ``git status``, ``git diff``, ``git ls-files --others`` and ``git check-ignore`` until
something writes to it, so one ``mkfifo src/.gitignore`` by a test stalled every step that asks
git about the tree. Here cog finds such a file first, from the host's view, without opening it
(``lstat`` only): a link, a regular file or a missing one is fine; anything else (a FIFO, a device,
a socket) is *blocking*, and the caller refuses (git_status, git_diff: the error names the file and
the fix), walks without git (list_files), or does not ask git about the paths below it (the files
a command changed).

Measured here (2 busy cores): cog's own checkout, 632 entries without its ``.venv``, 0.6 ms a walk;
25,254 with it, 0.13 s. So environments and caches found by name (``.venv``, ``node_modules``) are
walked only when git does not ignore them (one ``git check-ignore``: about 10 ms in all), or when
they hold tracked files (git reads their ``.gitattributes`` for a diff).
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

from workspace_tools.workspace.envdirs import ENV_DIR_NAMES

#: the names git opens in every folder of the work tree it reads
GIT_READS = (".gitignore", ".gitattributes")
#: folders at the top that git does not read as work tree (cog's state, git's own)
_TOP_SKIPPED = frozenset({".git", ".cog"})
#: entries a walk looks at, at most
WALK_LIMIT = 400_000


def kind_of(mode: int) -> str:
    """What a special file is, in words a person knows."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _blocking(path: str) -> str | None:
    """What ``path`` is when git would wait on it (see the module), else None."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
        return None
    return kind_of(mode)


def blocking_above(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """The blocking ``.gitignore`` files (workspace-relative path → what it is) in the folders from
    the root down to each of ``paths``: what ``git check-ignore`` reads for them."""
    found = _in_git_dir(root)
    seen: set[str] = set()
    base = os.fspath(root)
    for rel in paths:
        folder = rel.rpartition("/")[0]
        while True:
            if folder in seen:
                break
            seen.add(folder)
            name = f"{folder}/.gitignore" if folder else ".gitignore"
            what = _blocking(os.path.join(base, name))
            if what is not None:
                found[name] = what
            if not folder:
                break
            folder = folder.rpartition("/")[0]
    return found


def blocking_git_files(root: Path, *, tracked: frozenset[str] = frozenset()) -> dict[str, str]:
    """Every blocking ``.gitignore``/``.gitattributes`` git could open in the workspace
    (workspace-relative path → what it is), links not followed. Folders named like an environment
    are walked only when ``git check-ignore`` says git reads them (or they are in ``tracked``)."""
    from workspace_tools.host.git import git_dir

    if git_dir(root) is None:  # no repository: cog starts no git that reads the tree
        return {}
    found = _in_git_dir(root)
    later: list[str] = []
    _walk(root, "", found, later, tracked)
    if later and not found:
        for folder in _not_ignored(root, later):
            _walk(root, folder, found, [], tracked, names=False)
    return found


def _in_git_dir(root: Path) -> dict[str, str]:
    """``info/exclude`` and ``info/attributes`` of the git dir, and the files of the folders between
    the work tree's top and the workspace, when blocking (git reads them too; the sandbox keeps
    ``.git/`` read-only, a run with ``--sandbox off`` does not)."""
    from workspace_tools.host.git import git_dir, work_tree

    found: dict[str, str] = {}
    gitdir, top = git_dir(root), work_tree(root)
    places = [os.path.join(gitdir, "info", name) for name in ("exclude", "attributes")] if gitdir is not None else []
    folder = Path(root).parent
    while top is not None and folder != folder.parent and (folder == top or top in folder.parents):
        places += [os.path.join(folder, name) for name in GIT_READS]
        folder = folder.parent
    for place in places:
        what = _blocking(place)
        if what is not None:
            found[os.path.relpath(place, root)] = what
    return found


def _walk(root: Path, start: str, found: dict[str, str], later: list[str], tracked: frozenset[str], *, names: bool = True) -> None:
    stack = [start]
    seen = 0
    base = os.fspath(root)
    while stack:
        rel = stack.pop()
        try:
            entries = os.scandir(os.path.join(base, rel) if rel else base)
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > WALK_LIMIT:
                    return
                path = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    if entry.name in GIT_READS:
                        what = _blocking(entry.path)
                        if what is not None:
                            found[path] = what
                    if not entry.is_dir(follow_symlinks=False) or (not rel and entry.name in _TOP_SKIPPED):
                        continue
                except OSError:
                    continue
                if names and entry.name in ENV_DIR_NAMES and path not in tracked:
                    for inner in GIT_READS:  # what git reads first when it asks about this folder
                        what = _blocking(os.path.join(entry.path, inner))
                        if what is not None:
                            found[f"{path}/{inner}"] = what
                    later.append(path)
                    continue
                stack.append(path)


def _not_ignored(root: Path, folders: list[str]) -> list[str]:
    """Those of ``folders`` git does not ignore (all of them when git cannot say)."""
    from workspace_tools.host.git import GitNotFound, run_git

    listed = b"\0".join(f"{f}/".encode("utf-8", "surrogateescape") for f in folders) + b"\0"
    try:
        done = run_git(root, ["check-ignore", "--no-index", "-z", "--stdin"], input=listed, timeout=30, literal_pathspecs=False)
    except (OSError, LookupError, GitNotFound, subprocess.SubprocessError):
        return folders
    if done.returncode not in (0, 1):
        return folders
    ignored = {p.decode("utf-8", "surrogateescape").rstrip("/") for p in done.stdout.split(b"\0") if p}
    return [f for f in folders if f not in ignored]


def refusal(found: dict[str, str]) -> str:
    """The sentence that names the blocking files and the fix."""
    named = ", ".join(f"{path} ({what})" for path, what in sorted(found.items())[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    first = sorted(found)[0]
    return (f"{named}{more} is not a regular file, and git would wait on it forever (git reads every .gitignore and "
            f".gitattributes); a test or a command may have made it. Remove it (rm {first!r}) and call again")
