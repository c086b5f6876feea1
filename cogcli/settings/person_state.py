"""Where cog keeps what belongs to the person rather than to a workspace: the person's state
folder, ``$XDG_STATE_HOME/cog`` (default ``~/.local/state/cog``), one folder per workspace under
``workspaces/`` keyed by the workspace's real path (its name, for a person looking, and a hash of
the path, so two checkouts of one project never share).

Nothing in the workspace can reach it: no tool resolves a path outside the workspace, the sandbox
does not show it, and a repository cannot commit a file into it; and it is never inside the
workspace (an ``$XDG_STATE_HOME`` there is set aside for the default, with a warning). What is kept here is made
readable by its owner only (folders 0700, files 0600). The chat history lives here
(:mod:`cogcli.chat.line_history`); the thread store, undo journals and test reports stay in the
workspace's ``.cog/`` (see ``docs/security.md``: refused to every tool, read-only in the sandbox,
never written through a link, never a tracked file).
"""

from __future__ import annotations

import os
from pathlib import Path

from workspace_tools.files.journal_key import WORKSPACES, workspace_key

__all__ = ["WORKSPACES", "state_home", "workspace_key", "workspace_state"]


def state_home(workspace: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/cog`` when it is an absolute path, else ``~/.local/state/cog`` (where the
    undo key lives too: :func:`workspace_tools.files.journal_key.state_home`) — never inside
    ``workspace``: an ``$XDG_STATE_HOME`` there gives way to the default (said once), a default
    there too raises :class:`~workspace_tools.files.journal_key.KeyUnusable` naming the fix."""
    from workspace_tools.files.journal_key import state_home as person_state

    return person_state(workspace) / "cog"


def workspace_state(root: Path, *, create: bool = True) -> Path:
    """The person's state folder for the workspace at ``root``, made (0700, each new folder on the
    way) when ``create``."""
    folder = state_home(root) / WORKSPACES / workspace_key(root)
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
    return folder
