"""A repository's content sent to another machine for an attempt, and the attempt's change brought
back as a branch (``cog edit --attempts N --ray``, :mod:`cogcli.commands.attempts_ray`).

    base = snapshot(root)            # HEAD, or a commit of HEAD plus the uncommitted changes
    data = bundle(root, base)        # that commit and its history, as one git bundle (bytes)
    ... on the node: clone the bundle, run the attempt, commit, patch_between(checkout, base, commit)
    sha = land(place, patch, message)  # the patch committed on the attempt's local branch

The snapshot holds what ``git status`` shows: staged and unstaged changes of tracked files and
the untracked files git does not ignore; it is made in a scratch worktree (removed after), never
touching the person's index or work tree. Ignored files (``.env``, ``node_modules``) are not in it.
Every git goes through :func:`workspace_tools.host.git.run_git` (no hooks, filters or drivers).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path

from cogcli.worktrees.place import Place, WorktreeError, git, main_top

#: the message of the commit holding the uncommitted changes the attempts start from
SNAPSHOT_MESSAGE = "Uncommitted changes when cog edit --attempts --ray started"


def _run(top: Path, args: list[str], *, input: bytes | None = None) -> bytes:
    from workspace_tools.host.git import run_git

    done = run_git(top, args, input=input, timeout=600)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-1500:]
        raise WorktreeError(f"git {args[0]} failed: {said or f'exit {done.returncode}'}")
    return done.stdout


def snapshot(root: Path) -> str:
    """The commit the attempts start from: HEAD when nothing is uncommitted, else a new commit
    (child of HEAD, on no branch) of the work tree as ``git status`` sees it (see the module)."""
    from cogcli.worktrees.git_ops import commit, dirty, head

    top = work_tree_top(root)  # the work tree the person is in (a linked worktree is its own)
    base = head(top)
    if not dirty(top):
        return base
    tracked = _run(top, ["diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "HEAD"])
    untracked = [p for p in _run(top, ["ls-files", "--others", "--exclude-standard", "-z"]).decode("utf-8", "surrogateescape").split("\0") if p]
    scratch = Path(tempfile.mkdtemp(prefix="cog-snapshot-"))
    where = scratch / "tree"
    git(top, "worktree", "add", "--quiet", "--detach", "--", str(where), base)
    try:
        if tracked:
            _run(where, ["apply", "--binary", "--whitespace=nowarn", "-"], input=tracked)
        for rel in untracked:
            source, dest = top / rel, where / rel
            if not (source.is_symlink() or source.is_file()):
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest, follow_symlinks=False)  # a link stays a link, as git keeps it
        made = commit(where, SNAPSHOT_MESSAGE)
    finally:
        git(top, "worktree", "remove", "--force", "--", str(where), ok=(0, 128))
        shutil.rmtree(scratch, ignore_errors=True)
    return made or base


def work_tree_top(root: Path) -> Path:
    """The top folder of the work tree holding ``root`` (``git rev-parse --show-toplevel``)."""
    return Path(git(root, "rev-parse", "--show-toplevel").strip())


def bundle(root: Path, base: str) -> bytes:
    """``base`` and its history as a git bundle (a clone's source: ``git clone FILE``). A bundle
    holds refs, and a clone takes branches: a branch ``cog/ship-XXXXXXXX`` names ``base`` while the
    bundle is written, and is deleted after."""
    top = main_top(root)
    ref = f"refs/heads/cog/ship-{secrets.token_hex(4)}"
    git(top, "update-ref", ref, base)
    try:
        with tempfile.TemporaryDirectory(prefix="cog-bundle-") as tmp:
            path = Path(tmp) / "repo.bundle"
            _run(top, ["bundle", "create", "--quiet", str(path), ref])
            return path.read_bytes()
    finally:
        git(top, "update-ref", "-d", ref)


def patch_between(top: Path, base: str, rev: str) -> bytes:
    """The change from ``base`` to ``rev`` as ``git apply --binary`` takes it (new, deleted, binary
    files and modes included; a rename is a delete and a create)."""
    return _run(top, ["diff", "--binary", "--full-index", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", base, rev])


def land(place: Place, patch: bytes, message: str) -> str | None:
    """``patch`` applied in the worktree ``place`` (at the attempts' base) and committed on its
    branch; the commit, None for an empty patch. Raises :class:`WorktreeError` when it does not apply."""
    from cogcli.worktrees.git_ops import commit

    if not patch.strip():
        return None
    _run(place.path, ["apply", "--binary", "--index", "--whitespace=nowarn", "-"], input=patch)
    return commit(place.path, message)


def write_bundle(data: bytes, folder: Path) -> Path:
    """``data`` (a bundle) as a file in ``folder``, readable by its owner only."""
    path = folder / "repo.bundle"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path
