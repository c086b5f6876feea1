"""An ACP session in a new git worktree: the editor asks for one in ``session/new``'s ``_meta``,
``{"cog": {"worktree": "NAME"}}`` (``""`` or ``true``: cog names it), as ``cog chat --worktree``
does on a terminal. The session then works in the worktree on its own branch (its own threads and
undo journal), the response's ``_meta.cog.worktree`` says where (name, path, branch), and each
turn's changes are committed on the branch when the turn ends (``cog worktree merge NAME`` brings
them back). ``_meta`` is ACP's place for what an agent adds to a request (the SDK hands its keys
to ``new_session`` as keyword arguments); session config options, the other way, are set only
after a session exists — too late to choose where it runs.

The worktree itself is made by :mod:`cogcli.worktrees` (a package beside this one), given as
``AcpOptions.worktree`` by ``cog acp``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogcli.acp.errors import INVALID_PARAMS, _error


@dataclass
class InWorktree:
    """The worktree a session runs in."""

    #: name, path and branch, for the client
    info: dict[str, str]
    #: commits what changed on the worktree's branch, the message given
    commit: Callable[[str], None]


def requested(meta: Mapping[str, Any]) -> str | None:
    """The worktree name ``session/new``'s ``_meta`` asks for ("": cog names it), None when none."""
    ours = meta.get("cog")
    if not isinstance(ours, Mapping) or "worktree" not in ours:
        return None
    name = ours["worktree"]
    if name is True:
        return ""
    if not isinstance(name, str):
        raise _error(INVALID_PARAMS, '_meta.cog.worktree must be a name (a string; "" or true lets cog name it)', worktree=repr(name))
    return name


def enter_worktree(maker: Any, cwd: str, meta: Mapping[str, Any]) -> tuple[str, InWorktree | None]:
    """The cwd the session opens in, and its worktree when ``_meta`` asks for one (else ``cwd`` as given)."""
    from cogcli.contract.errors import CogError
    from workspace_tools.host.files import repository

    name = requested(meta)
    if name is None:
        return cwd, None
    if maker is None:
        raise _error(INVALID_PARAMS, "this agent cannot open sessions in worktrees (started without cog acp's worktree support)")
    where = Path(cwd).expanduser().resolve()
    found = repository(where) if where.is_dir() else None
    if found is None:
        return cwd, None  # session/new says what is wrong with this cwd
    try:
        inside, info, commit = maker(Path(found.work_tree), where, name)
    except CogError as exc:
        raise _error(INVALID_PARAMS, exc.message, errorCode=exc.code) from None
    return str(inside), InWorktree(info, commit)


async def commit_turn(worktree: InWorktree | None, instruction: str) -> None:
    """After a turn of a session in a worktree: its changes committed on the worktree's branch."""
    if worktree is None:
        return
    import anyio

    await anyio.to_thread.run_sync(worktree.commit, instruction)


def response_meta(worktree: InWorktree | None) -> dict[str, Any] | None:
    """``session/new``'s answer's ``_meta``: where the session runs, when in a worktree."""
    return {"cog": {"worktree": worktree.info}} if worktree is not None else None
