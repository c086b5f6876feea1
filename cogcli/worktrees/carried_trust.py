"""The person's approvals of the workspace's commands (MCP servers, hooks: :mod:`cogcli.settings.trust`)
carried into a worktree cog makes, where they hold for the same bytes.

An approval is remembered for a workspace's real path (``~/.config/cog/trusted-commands.json``), so a
new worktree — another path — would start with none, and a session there (``--worktree``, each of
``--attempts N``) would end at once with "not starting … approve it with cog trust". An approval is
of content, not of a path: the command line and the sha256 of every workspace file it runs. So when
cog makes a worktree, each approval of the main workspace (and of workspaces below it) is copied to
the same place in the worktree **only** when

- the workspace's settings files (``cog.toml``, ``pyproject.toml``) are byte for byte the same there
  (or missing in both), and
- every file the command runs, fingerprinted in the worktree, is what was approved
  (:func:`cogcli.settings.trust.command_files`, the check every session makes).

Anything else — a settings file or a server's script that differs in the worktree's commit — is not
carried: the session there asks (on a terminal) or refuses naming ``cog trust``, as for any changed
workspace.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("cogcli")

#: the workspace's settings files: the commands approved are named there
SETTINGS_FILES = ("cog.toml", "pyproject.toml")


def carry_approvals(top: Path, worktree: Path) -> list[str]:
    """Copy the approvals of ``top`` (the main working tree) and of its folders to the same folders of
    ``worktree`` where the content is identical (see the module's doc); answers the settings carried
    (``mcp_servers: python srv.py``). Never raises: an approval not carried is asked for later."""
    from cogcli.contract.errors import ConfigError
    from cogcli.settings.trust import (
        approve,
        command_files,
        differences,
        load_store,
        save_store,
    )

    top, worktree = top.resolve(), worktree.resolve()
    try:
        store = load_store()
    except ConfigError as exc:
        log.warning("the approved commands were not carried into the worktree: %s", exc.message)
        return []
    carried: list[str] = []
    others = top / ".cog"  # the worktrees of this repository and cog's own state: never a source
    for entry in list(store.commands):
        source = Path(entry.workspace)
        if not source.is_relative_to(top) or source.is_relative_to(others) or entry.files is None:
            continue
        target = worktree / source.relative_to(top)
        if not target.is_dir() or not _same_settings(source, target):
            continue
        now = command_files(target, entry.command)
        if differences(entry.files, now):
            continue
        approve(store, target, entry.setting, entry.command, now)
        carried.append(f"{entry.setting}: {entry.command}")
    if carried:
        save_store(store)
    return carried


def _same_settings(source: Path, target: Path) -> bool:
    return all(_bytes(source / name) == _bytes(target / name) for name in SETTINGS_FILES)


def _bytes(path: Path) -> bytes | None:
    """The file's bytes (None: no regular file there), read without following a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read() if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else None
    except OSError:
        return None
