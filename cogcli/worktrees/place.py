"""Where cog's worktrees live, what they may be called, and the one way this package runs git
(:func:`git`, through :func:`workspace_tools.host.git.run_git`).

A worktree NAME is the folder ``<top>/.cog/worktrees/NAME`` on the branch ``cog/NAME``, where
``<top>`` is the main work tree of the repository (the folder holding the ``.git`` folder; from
inside a linked worktree, still the main one). ``.cog/`` is cog's state folder, which cog keeps out
of git (``info/exclude``) and the model's file tools refuse, so a session in the main tree does not
see the worktrees as its files. The path is never the model's: only a NAME the person typed (or
one cog made) is used, checked by :func:`check_name` first.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cogcli.contract.errors import CogError

#: the branch prefix of every cog worktree
BRANCH_PREFIX = "cog/"
#: below the main work tree
FOLDER = (".cog", "worktrees")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


class WorktreeError(CogError):
    """A worktree that cannot be made, found, merged or removed; the message says why and the fix."""

    code = "WORKTREE_ERROR"


def check_name(name: str) -> str:
    """``name`` when it is a usable worktree name: ASCII letters, digits, ``.``, ``_``, ``-``,
    starting with a letter or digit, at most 63 characters, no ``..`` and not ending in ``.lock``
    or ``.`` (what a branch name and one folder name both take). Raises :class:`WorktreeError`."""
    if not _NAME.match(name) or ".." in name or name.endswith((".lock", ".")):
        from cogcli.shown.visible import visible

        shown = visible(unicodedata.normalize("NFC", name), one_line=True)[:80]
        raise WorktreeError(
            f"{shown!r} is not a worktree name: use ASCII letters, digits, '.', '_' and '-', starting with a "
            "letter or digit (at most 63 characters, no '..'), e.g. fix-login"
        )
    return name


def new_name(prefix: str = "wt") -> str:
    """A fresh name: ``wt-3fa9c1``."""
    return f"{prefix}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class Place:
    """One worktree's name, branch and folder."""

    name: str
    top: Path

    @property
    def branch(self) -> str:
        return BRANCH_PREFIX + self.name

    @property
    def path(self) -> Path:
        return self.top.joinpath(*FOLDER, self.name)


def main_top(root: Path) -> Path:
    """The main work tree of the repository holding ``root`` (the folder whose ``.git`` is the
    common git dir). Raises :class:`WorktreeError` outside a git repository."""
    from workspace_tools.host.files import repository

    repo = repository(Path(root).resolve())
    if repo is None:
        raise WorktreeError(f"{root} is not in a git repository: worktrees need one (git init, and a first commit)")
    common = repo.common_dir
    if common.name == ".git" and common.parent.is_dir():
        return common.parent
    return repo.work_tree


def place(root: Path, name: str) -> Place:
    return Place(check_name(name), main_top(root))


def git(root: Path, *args: str, ok: Sequence[int] = (0,), environ: Mapping[str, str] | None = None) -> str:
    """``git ARGS`` on the repository of ``root``, its stdout; a failure raises :class:`WorktreeError`."""
    from workspace_tools.host.git import GitNotFound, run_git

    try:
        done = run_git(root, list(args), environ=environ)
    except (LookupError, GitNotFound) as exc:
        raise WorktreeError(str(exc)) from None
    if done.returncode not in ok:
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-1500:]
        raise WorktreeError(f"git {args[0]} failed: {said or f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "replace")
