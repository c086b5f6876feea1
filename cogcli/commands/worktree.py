"""``cog worktree list|merge|remove``: cog's worktrees shown, one brought into the current branch,
one removed (docs/worktrees.md). The git work is :mod:`cogcli.worktrees`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cogcli.shown.visible import say, visible
from cogcli.wire.exit_codes import EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE


def stats(root: Path, branch: str, path: Path) -> dict[str, Any]:
    """One worktree's row: its commits and diff stats against its base (where it left the current
    branch: their merge base), and the files changed but not committed in it."""
    from cogcli.worktrees.git_ops import diff_stats, dirty
    from cogcli.worktrees.place import git

    base = git(root, "merge-base", "HEAD", f"refs/heads/{branch}", ok=(0, 1)).strip()
    files = added = removed = 0
    commits = 0
    if base:
        files, added, removed = diff_stats(root, base, f"refs/heads/{branch}")
        commits = int(git(root, "rev-list", "--count", f"refs/heads/{branch}", f"^{base}").strip() or 0)
    uncommitted = dirty(path) if path.is_dir() else []
    return {"base": base or None, "commits": commits, "files": files, "added": added, "removed": removed, "uncommitted": len(uncommitted)}


def list_command(root: Path, *, as_json: bool = False) -> int:
    from cogcli.worktrees.git_ops import listed
    from cogcli.worktrees.place import WorktreeError

    try:
        rows = [{"name": w.name, "branch": w.branch, "path": str(w.path), **stats(root, w.branch, w.path)} for w in listed(root)]
    except WorktreeError as exc:
        say(exc.message)
        return EXIT_USAGE
    if as_json:
        sys.stdout.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        return EXIT_OK
    if not rows:
        sys.stdout.write("no cog worktrees here (cog edit --worktree \"…\" or --worktree-name NAME makes one)\n")
        return EXIT_OK
    lines = [f"{'name':<20} {'branch':<24} {'commits':>7} {'files':>5} {'lines':>11}  state  path"]
    for r in rows:
        state = f"{r['uncommitted']} uncommitted" if r["uncommitted"] else "clean"
        change = f"+{r['added']} -{r['removed']}"
        lines.append(f"{r['name']:<20} {r['branch']:<24} {r['commits']:>7} {r['files']:>5} {change:>11}  {state}  {r['path']}")
    sys.stdout.write("".join(visible(line, one_line=True) + "\n" for line in lines))
    return EXIT_OK


def _unknown(root: Path, name: str, refused: str) -> bool:
    """True (said) when ``name`` is no worktree name or no worktree of this repository: bad input,
    exit 2 like ``cog undo`` for no such run; a refusal of a real worktree stays exit 1."""
    from cogcli.worktrees.git_ops import find
    from cogcli.worktrees.place import WorktreeError

    try:
        find(root, name)
    except WorktreeError as exc:
        say(f"{refused}: {exc.message}")
        return True
    return False


def merge_command(root: Path, name: str) -> int:
    from cogcli.worktrees.merge import merge
    from cogcli.worktrees.place import WorktreeError

    if _unknown(root, name, "merge refused"):
        return EXIT_USAGE
    try:
        done = merge(root, name)
    except WorktreeError as exc:
        say(f"merge refused: {exc.message}")
        return EXIT_TASK_FAILED
    if done.commits == 0:
        say(f"{done.branch} has nothing the current branch lacks: nothing to merge")
    else:
        how = "fast-forward" if done.fast_forward else "merge commit"
        say(f"merged {done.branch} ({done.commits} commit{'s' if done.commits != 1 else ''}, {how}): now at {done.head[:10]}")
    return EXIT_OK


def remove_command(root: Path, name: str, *, force: bool = False) -> int:
    from cogcli.worktrees.git_ops import remove
    from cogcli.worktrees.place import WorktreeError

    if _unknown(root, name, "not removed"):
        return EXIT_USAGE
    try:
        where, unmerged = remove(root, name, force=force)
    except WorktreeError as exc:
        say(f"not removed: {exc.message}")
        return EXIT_TASK_FAILED
    say(f"removed worktree {where.name} ({where.path}) and its branch {where.branch}")
    if unmerged:
        say(f"its commits were not merged; to get them back: git branch {where.branch} {unmerged[:12]}")
    return EXIT_OK
