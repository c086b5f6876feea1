"""The files a project needs but git ignores, copied into a new worktree: ``.worktreeinclude``.

The rule (Claude Code's convention): ``.worktreeinclude`` at the top of the main work tree holds
gitignore-style patterns (``.env``, ``config/local.*``, ``!secret.key``); every file that matches
one of them **and** is ignored by git is copied into the worktree at the same path, with its
mode. Tracked files are in the worktree already; files git does not ignore are not copied.

Nothing leads out of the repository: ``.worktreeinclude`` itself must be a regular file (a link is
refused, never read through); the folders on the way to a file are opened without following links;
a file that is a symbolic link is copied as that link only when it is relative and stays inside the
repository, otherwise it is skipped and said (``log.warning``). Nothing under ``.cog/`` is copied.
A virtualenv is copied file by file like anything else (a big one takes a while; listing ``.venv/``
is the person's choice), then made the worktree's own (:mod:`cogcli.worktrees.venvs`: its
interpreter links made again, its editable installs pointed at the worktree's source).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("cogcli")

INCLUDE_FILE = ".worktreeinclude"
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def patterns(top: Path) -> list[str]:
    """The patterns of ``top/.worktreeinclude`` (none when it is missing, or is no regular file)."""
    path = top / INCLUDE_FILE
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return []
    if not stat.S_ISREG(info.st_mode):
        log.warning("%s is not a regular file (a link?): no file is copied into the worktree", INCLUDE_FILE)
        return []
    fd = os.open(path, _FILE_FLAGS)
    with os.fdopen(fd, "rb") as f:
        text = f.read(1 << 20).decode("utf-8", "replace")
    return [line.rstrip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def included(top: Path) -> list[str]:
    """The paths (relative to ``top``) ``.worktreeinclude`` names that git ignores."""
    from cogcli.worktrees.place import git

    wanted = patterns(top)
    if not wanted:
        return []
    matched = [p for p in git(top, "ls-files", "--others", "--ignored", "-z", *(arg for p in wanted for arg in ("-x", p))).split("\0")
               if p and not (p == ".cog" or p.startswith(".cog/"))]
    if not matched:
        return []
    # of those, the ones git ignores (asked for these paths only: a big ignored node_modules is never listed)
    from workspace_tools.host.git import run_git

    done = run_git(top, ["check-ignore", "-z", "--stdin"], input="".join(p + "\0" for p in matched).encode(), literal_pathspecs=False)
    if done.returncode in (0, 1):
        ignored = set(done.stdout.decode("utf-8", "replace").split("\0"))
    else:  # a name git reads as pathspec magic (":(top)…"): every ignored file listed instead
        ignored = set(git(top, "ls-files", "--others", "--ignored", "--exclude-standard", "-z").split("\0"))
    return sorted(p for p in matched if p in ignored)


def copy_included(top: Path, dest: Path) -> tuple[list[str], list[str]]:
    """Copy what ``.worktreeinclude`` names from ``top`` into the worktree ``dest``; returns (copied, skipped)."""
    copied: list[str] = []
    skipped: list[str] = []
    for rel in included(top):
        why = _copy_one(top, dest, rel)
        if why is None:
            copied.append(rel)
        else:
            skipped.append(rel)
            if not _interpreter_link(top, rel):  # a virtualenv's: made again (cogcli.worktrees.venvs)
                log.warning("%s: %s not copied into the worktree: %s", INCLUDE_FILE, rel, why)
    return copied, skipped


def _interpreter_link(top: Path, rel: str) -> bool:
    from cogcli.worktrees.venvs import INTERPRETER

    path = top / rel
    return path.parent.name == "bin" and bool(INTERPRETER.match(path.name)) and (path.parent.parent / "pyvenv.cfg").is_file()


def _copy_one(top: Path, dest: Path, rel: str) -> str | None:
    """Copy one file (or an in-repository relative link); None when done, else why not."""
    from workspace_tools.host.files import LinkRefused, open_dir, resolves_inside

    source = top / rel
    try:
        src_dir = open_dir(source.parent, top)
    except LinkRefused as exc:
        return f"{exc.where} is a symbolic link"
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        info = os.stat(source.name, dir_fd=src_dir, follow_symlinks=False)
        dst_dir = open_dir(dest / Path(rel).parent, dest, create=True)
        try:
            if stat.S_ISLNK(info.st_mode):
                target = os.readlink(source.name, dir_fd=src_dir)
                if os.path.isabs(target) or not resolves_inside(source, top):
                    return f"it is a symbolic link to {target}, which leads out of the repository"
                os.symlink(target, source.name, dir_fd=dst_dir)
                return None
            if not stat.S_ISREG(info.st_mode):
                return "it is not a regular file"
            fd = os.open(source.name, _FILE_FLAGS, dir_fd=src_dir)
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            out = os.open(source.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                          stat.S_IMODE(info.st_mode), dir_fd=dst_dir)
            with os.fdopen(out, "wb") as f:
                f.write(data)
            return None
        finally:
            os.close(dst_dir)
    except LinkRefused as exc:
        return f"{exc.where} is a symbolic link in the worktree"
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(src_dir)


#: a project's own environment folders, which git usually ignores
ENVIRONMENTS = (".venv", "venv", "node_modules")


def environments_left_out(top: Path) -> list[str]:
    """The environment folders (``.venv``, ``venv``, ``node_modules``) of the main work tree that
    git ignores and ``.worktreeinclude`` does not name: a new worktree starts without them, so its
    tests run without the project's environment (cog's own Python, no node_modules)."""
    from cogcli.worktrees.place import git

    here = [name for name in ENVIRONMENTS if (top / name).is_dir() and not (top / name).is_symlink()]
    if not here:
        return []
    ignored = set(git(top, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z", "--", *here).split("\0"))
    left = [name for name in here if f"{name}/" in ignored]
    wanted = patterns(top)
    if not left or not wanted:
        return left
    excludes = [arg for p in wanted for arg in ("-x", p)]
    return [name for name in left if not git(top, "ls-files", "--others", "--ignored", "-z", *excludes, "--", f"{name}/").strip("\0")]


def environment_notes(top: Path, whose: str = "the worktree") -> list[str]:
    """A note for each of :func:`environments_left_out`: what it means and the fix."""
    return [f"note: git ignores {name}/, so {whose} starts without it and its tests run without the project's "
            f"environment; list {name}/ in .worktreeinclude to copy it (a copied virtualenv is made the worktree's: "
            "its editable installs import the worktree's code)" for name in environments_left_out(top)]
