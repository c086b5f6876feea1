"""``cog worktree merge NAME``: the branch ``cog/NAME`` brought into the current branch.

First asked of git without touching anything (``git merge-tree --write-tree``): a conflict is
refused with the files it is in, and the work tree, the index and the branch stay as they were.
Only a clean merge runs ``git merge`` (a fast-forward when the current branch has not moved, else a
merge commit); git itself refuses — before changing anything — when the person's uncommitted
changes are in files the merge would write. The worktree must have no uncommitted changes: cog
commits a session's changes on its branch when the session ends, so what is left uncommitted was
made by hand there, and the person decides (commit it there, or remove it with ``--force``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cogcli.worktrees.git_ops import dirty, find, identity
from cogcli.worktrees.place import WorktreeError, git


@dataclass(frozen=True)
class Merged:
    """A worktree's branch merged into the current branch."""
    name: str
    branch: str
    #: the current branch's commit after the merge
    head: str
    #: commits the merge brought in (0: the branch had nothing new)
    commits: int
    fast_forward: bool


def merge(root: Path, name: str) -> Merged:
    """Merge ``cog/NAME`` into the branch checked out at ``root``; raises :class:`WorktreeError`
    (a conflict, uncommitted changes in the worktree, or git's refusal) with nothing changed."""
    where = find(root, name)
    if where.path.is_dir():
        changed = dirty(where.path)
        if changed:
            raise WorktreeError(
                f"worktree {name} has uncommitted changes ({', '.join(changed[:5])}): commit them in "
                f"{where.path} first (or remove the worktree with --force); nothing was merged"
            )
    tip = git(root, "rev-parse", "--verify", f"refs/heads/{where.branch}^{{commit}}").strip()
    current = git(root, "rev-parse", "--verify", "HEAD^{commit}").strip()
    new = int(git(root, "rev-list", "--count", tip, f"^{current}").strip() or 0)
    if new == 0:
        return Merged(name, where.branch, current, 0, False)
    probe = git(root, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", current, tip, ok=(0, 1))
    parts = probe.split("\0")
    conflicted = list(dict.fromkeys(p for p in parts[1:] if p))
    if conflicted:
        shown = ", ".join(conflicted[:10]) + (f" and {len(conflicted) - 10} more" if len(conflicted) > 10 else "")
        raise WorktreeError(
            f"{where.branch} conflicts with the current branch in {shown}: nothing was merged, your files are as "
            f"they were. Merge it yourself (git merge {where.branch}) and resolve, or remove it: cog worktree remove {name} --force"
        )
    fast = _ancestor(root, current, tip)
    args = ["merge", "--quiet", "--no-edit", "--no-verify", "-m", f"Merge {where.branch} (cog worktree {name})", tip]
    try:
        git(root, *(args if not fast else ["merge", "--quiet", "--ff-only", tip]), environ=identity(root))
    except WorktreeError as exc:  # git refused before writing (the person's changes in the way)
        raise WorktreeError(f"{exc.message}; nothing was merged (commit or stash your changes, then again)") from None
    return Merged(name, where.branch, git(root, "rev-parse", "HEAD").strip(), new, fast)


def _ancestor(root: Path, older: str, newer: str) -> bool:
    from workspace_tools.host.git import run_git

    return run_git(root, ["merge-base", "--is-ancestor", older, newer]).returncode == 0
