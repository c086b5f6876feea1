"""Making, listing, committing in and removing cog's worktrees. Every git goes through
:func:`workspace_tools.host.git.run_git`: no hook, filter, fsmonitor or other program the
repository (or a worktree's files) name runs."""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cogcli.worktrees.place import (
    BRANCH_PREFIX,
    FOLDER,
    Place,
    WorktreeError,
    check_name,
    git,
    main_top,
    new_name,
)

log = logging.getLogger("cogcli")

#: who commits in a worktree when git knows nobody (no user.name/user.email anywhere)
FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "cog", "GIT_AUTHOR_EMAIL": "cog@localhost",
                     "GIT_COMMITTER_NAME": "cog", "GIT_COMMITTER_EMAIL": "cog@localhost"}


def head(root: Path) -> str:
    return git(root, "rev-parse", "--verify", "HEAD^{commit}").strip()


def branch_exists(root: Path, branch: str) -> bool:
    return bool(git(root, "branch", "--list", "--", branch, ok=(0, 1)).strip())


def create(root: Path, name: str | None = None, *, base: str = "HEAD", said: set[str] | None = None) -> Place:
    """A new worktree on a new branch ``cog/NAME`` from ``base`` (default: the current commit) at
    ``<top>/.cog/worktrees/NAME``; ``.worktreeinclude``'s files copied in, the person's approvals of the
    workspace's commands carried where the content is identical (:mod:`cogcli.worktrees.carried_trust`). Raises
    :class:`WorktreeError` (the name taken, no commit yet, a link in ``.cog/``)."""
    from workspace_tools.host.files import LinkRefused, exclude_from_git, open_dir

    top = main_top(root)
    where = Place(check_name(name) if name else new_name(), top)
    try:
        base_commit = git(top, "rev-parse", "--verify", "--end-of-options", f"{base}^{{commit}}").strip()
    except WorktreeError:
        raise WorktreeError("the repository has no commit yet: a worktree starts from one (git commit first)") from None
    if branch_exists(top, where.branch):
        raise WorktreeError(f"the branch {where.branch} exists already: pick another name, or cog worktree remove {where.name}")
    exclude_from_git(top)  # .cog/ stays out of git, with the worktrees in it
    try:
        os.close(open_dir(where.path.parent, top, create=True, mode=0o700))
    except LinkRefused as exc:
        raise WorktreeError(f"{exc.where} is a symbolic link: cog makes worktrees only in a real .cog/worktrees folder") from None
    if os.path.lexists(where.path):
        raise WorktreeError(f"{where.path} exists already: pick another name, or cog worktree remove {where.name}")
    git(top, "worktree", "add", "--quiet", "-b", where.branch, "--", str(where.path), base_commit)
    from cogcli.worktrees.include import copy_included

    copied, _ = copy_included(top, where.path)
    from cogcli.worktrees.venvs import own_virtualenvs

    for note in own_virtualenvs(top, where.path, copied):  # a copied .venv's editable installs: the worktree's code
        if said is None or note not in said:  # ``said``: notes given already (N attempts' worktrees: once, not N times)
            log.warning("%s", note)
        if said is not None:
            said.add(note)
    from cogcli.worktrees.carried_trust import carry_approvals

    carry_approvals(top, where.path)  # the person's approvals, where the worktree holds the same bytes
    return where


def find(root: Path, name: str) -> Place:
    """The worktree ``name`` of this repository; raises :class:`WorktreeError` when there is none."""
    top = main_top(root)
    where = Place(check_name(name), top)
    if not any(w.name == where.name for w in listed(top)):
        raise WorktreeError(f"no worktree {name!r} here (cog worktree list shows them)")
    return where


@dataclass(frozen=True)
class Listed:
    """A worktree cog made, as listed."""
    name: str
    branch: str
    path: Path
    head: str


def listed(root: Path) -> list[Listed]:
    """cog's worktrees of the repository (``git worktree list``: those under ``.cog/worktrees/``
    on a ``cog/`` branch), in name order."""
    top = main_top(root)
    folder = top.joinpath(*FOLDER)
    found: list[Listed] = []
    for block in git(top, "worktree", "list", "--porcelain", "-z").split("\0\0"):
        fields = dict(line.partition(" ")[::2] for line in block.split("\0") if line)
        path, ref = Path(fields.get("worktree", "")), fields.get("branch", "")
        if path.parent != folder or ref != f"refs/heads/{BRANCH_PREFIX}{path.name}":
            continue
        found.append(Listed(path.name, ref.removeprefix("refs/heads/"), path, fields.get("HEAD", "")))
    return sorted(found, key=lambda w: w.name)


def dirty(path: Path) -> list[str]:
    """What ``git status`` shows changed in the worktree at ``path`` (paths, untracked ones too; ignored ones not)."""
    out = git(path, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    return [item[3:] for item in out.split("\0") if len(item) > 3 and item[2] == " "]


def identity(root: Path) -> dict[str, str] | None:
    """An environment for a commit when git knows nobody (cog's fallback name); None: git knows someone."""
    from workspace_tools.host.git import run_git

    if run_git(root, ["var", "GIT_AUTHOR_IDENT"]).returncode == 0 and run_git(root, ["var", "GIT_COMMITTER_IDENT"]).returncode == 0:
        return None
    return {**os.environ, **FALLBACK_IDENTITY}


def commit(path: Path, message: str, paths: Sequence[str] | None = None) -> str | None:
    """Commit in the worktree at ``path``: the ``paths`` given (a run's changed files), or
    everything git does not ignore (``paths`` None); the commit's id, None when nothing changed."""
    pathspec = ["--", *paths] if paths is not None else []
    if paths is not None and not paths:
        return None
    git(path, "add", "--all", *pathspec)
    if not git(path, "diff", "--cached", "--name-only", "-z").strip("\0"):
        return None
    git(path, "commit", "--quiet", "--no-verify", "-m", message, environ=identity(path))
    return head(path)


def remove(root: Path, name: str, *, force: bool = False) -> tuple[Place, str | None]:
    """Remove the worktree ``name`` and its branch. Refuses (:class:`WorktreeError`) when it has
    uncommitted changes, unless ``force``. Returns the place and the branch's last commit when it
    held commits the current branch does not (so it can be brought back: ``git branch cog/NAME SHA``)."""
    where = find(root, name)
    if where.path.is_dir() and not force:
        changed = dirty(where.path)
        if changed:
            shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
            raise WorktreeError(
                f"worktree {name} has uncommitted changes ({shown}): commit them there, merge it "
                f"(cog worktree merge {name}), or remove it anyway with --force"
            )
    tip = git(where.top, "rev-parse", "--verify", f"refs/heads/{where.branch}").strip()
    merged = _is_ancestor(where.top, tip)
    _remove_folder(where.path)
    git(where.top, "worktree", "prune")
    git(where.top, "branch", "-D", "--", where.branch)
    return where, None if merged else tip


def _is_ancestor(top: Path, commit: str) -> bool:
    from workspace_tools.host.git import run_git

    return run_git(top, ["merge-base", "--is-ancestor", commit, "HEAD"]).returncode == 0


def _remove_folder(path: Path) -> None:
    """Remove the worktree's folder, never following a link in it (a test may have left read-only folders)."""

    def retry(func, failed, exc):  # type: ignore[no-untyped-def]
        try:
            os.chmod(os.path.dirname(failed), stat.S_IRWXU)
            func(failed)
        except OSError:
            pass

    if path.is_symlink():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path, onerror=retry)


def diff_stats(root: Path, base: str, rev: str) -> tuple[int, int, int]:
    """(files, lines added, lines removed) from ``base`` to ``rev`` (a binary file counts as a file, no lines)."""
    files = added = removed = 0
    for line in git(root, "diff", "--numstat", "-z", "--no-renames", base, rev).split("\0"):
        counts = line.split("\t")
        if len(counts) >= 3:
            files += 1
            added += int(counts[0]) if counts[0].isdigit() else 0
            removed += int(counts[1]) if counts[1].isdigit() else 0
    return files, added, removed
