"""``cog edit --worktree [NAME]`` and ``cog chat --worktree [NAME]``: the session moved into a new
git worktree before it starts, and its changes committed on the worktree's branch when it ends
(docs/worktrees.md). The worktree's ``.cog/`` is its own: its own threads and undo journal."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cogcli.contract.errors import ConfigError
from cogcli.shown.visible import say
from cogcli.worktrees.place import Place, WorktreeError


@dataclass(frozen=True)
class Entered:
    """A worktree a session runs in: its place, and the session's root and folder there."""

    place: Place
    root: Path
    cwd: Path


def enter(root: Path, cwd: Path | None, name: str | None) -> Entered:
    """Make the worktree (``name`` empty or None: cog names it) and say where it is; the session's
    root and current folder are the same folders inside it. Raises :class:`ConfigError` with why."""
    from cogcli.worktrees.git_ops import create

    try:
        made = create(root, name or None)
    except WorktreeError as exc:
        raise ConfigError(exc.message, code="USAGE") from None
    inside = root.resolve().relative_to(made.top)
    new_root = made.path / inside
    here = (cwd or root).resolve()
    new_cwd = made.path / here.relative_to(made.top) if here.is_relative_to(made.top) else new_root
    say(f"worktree {made.name}: {made.path} (branch {made.branch})")
    from cogcli.worktrees.include import environment_notes

    for note in environment_notes(made.top):
        say(note)
    return Entered(made, new_root, new_cwd if new_cwd.is_dir() else new_root)


def finish(entered: Entered, message: str, paths: Sequence[str] | None) -> None:
    """Commit the session's changes on the worktree's branch (``paths``: the files the run changed;
    None: everything git does not ignore) and say how to bring them back."""
    from cogcli.worktrees.git_ops import commit

    place = entered.place
    name = place.name
    subject = " ".join(message.split())[:72] or "cog session"
    try:
        prefix = entered.root.relative_to(place.path)
        files = None if paths is None else [(prefix / p).as_posix() for p in paths]
        sha = commit(place.path, f"{subject}\n\nMade by cog in worktree {name}.", files)
    except WorktreeError as exc:
        say(f"worktree {name}: the changes were not committed: {exc.message}")
        return
    if sha is None:
        say(f"worktree {name}: nothing changed (cog worktree remove {name} removes it)")
    else:
        say(f"worktree {name}: committed {sha[:10]} on {place.branch} (bring it here: cog worktree merge {name})")


def enter_session(root: Path, cwd: Path, name: str) -> tuple[Path, dict[str, str], Callable[[str], None]]:
    """For a front end that opens sessions itself (``cog acp``'s ``session/new``): enter a new
    worktree as :func:`enter` does; answers the session's folder there, what to tell the client
    (name, path, branch), and what commits a turn's changes on the branch (its instruction the message)."""
    entered = enter(root, cwd, name)
    place = entered.place
    info = {"name": place.name, "path": str(place.path), "branch": place.branch}
    return entered.cwd, info, lambda message: finish(entered, message, None)
