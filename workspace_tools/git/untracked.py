"""Untracked files as git would show them new: which there are (environments and caches left out
and counted, git's collapsed folders opened), and each one's stat entry and diff (``git add -N``
then ``git diff``) within a budget. For :func:`workspace_tools.git.changes.session_change`.
"""

from __future__ import annotations

import os
from typing import Any

from cogcli.contract.errors import ToolCallError
from workspace_tools.workspace.envdirs import EnvDirs, count_files, is_cog_state
from workspace_tools.workspace.listing import untracked_files
from workspace_tools.workspace.paths import Workspace
from workspace_tools.text.textfile import BOM, NotText, TextFile, new_file_mode, read_bytes

#: an untracked file bigger than this is counted, not read into the diff
MAX_UNTRACKED_BYTES = 2_000_000


def untracked_paths(
    workspace: Workspace, raw: bytes, envs: EnvDirs, left: dict[str, int], inside: str
) -> tuple[list[str], list[str]]:
    """Untracked files (environments left out and counted in ``left``) and the untracked
    folders git collapsed them into."""
    files: list[str] = []
    folders: list[str] = []
    for item in raw.split(b"\0"):
        if not item:
            continue
        rel = os.fsdecode(item)
        if is_cog_state(rel):
            continue
        if rel.endswith("/"):
            folder = rel.rstrip("/")
            env = envs.excluded_by(folder)
            if env is None:
                folders.append(rel)
            elif env == folder:
                left[env] = left.get(env, 0) + count_files(os.path.join(workspace.root, env))
            continue
        env = envs.excluded_file(rel)
        if env is not None:
            left[env] = left.get(env, 0) + 1
            continue
        files.append(rel)
    if folders:
        files += [f for f in untracked_files(workspace.root, "", folders, envs, left) if not is_cog_state(f)]
    return sorted(files), folders


def untracked_entry(workspace: Workspace, rel: str, *, budget: int) -> tuple[dict[str, Any], str | None]:
    """The stat entry of an untracked file and its diff (None when it does not fit ``budget``)."""
    try:
        size = os.lstat(os.path.join(workspace.root, rel)).st_size
    except OSError:
        size = 0
    if size > MAX_UNTRACKED_BYTES or size > budget:
        added = -1
        try:
            if size <= MAX_UNTRACKED_BYTES * 10:  # read without following a link out (or into a pipe)
                data = read_bytes(workspace.resolve(rel), rel, root=workspace.root)
                added = 0 if b"\0" in data[:8192] else data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        except (ToolCallError, OSError):
            pass
        return {"path": rel, "status": "untracked", "added": max(added, 0), "removed": 0, "binary": added == 0 and size > 0}, None
    text = untracked_diff(workspace, rel)
    stats = file_stats(text, {rel}) if text else []
    entry = stats[0] if stats else {"path": rel, "status": "untracked", "added": 0, "removed": 0, "binary": False}
    if len(text) > budget:
        return entry, None
    return entry, text


def untracked_diff(workspace: Workspace, rel: str) -> str:
    """An untracked file as git shows a new one (``git add -N`` then ``git diff``)."""
    from workspace_tools.text.diffs import file_header, format_hunks, quote_path, text_blocks  # when a diff is made

    try:
        path = workspace.resolve(rel)
        data = read_bytes(path, rel, root=workspace.root)
    except (ToolCallError, OSError):
        return ""  # a link out of the workspace, or gone meanwhile: not part of the change we show
    mode = path.stat().st_mode
    try:
        file = TextFile.decode(data)
    except NotText:
        a, b = quote_path(f"a/{rel}"), quote_path(f"b/{rel}")
        return f"diff --git {a} {b}\nnew file mode {'100755' if mode & 0o111 else '100644'}\nBinary files /dev/null and {b} differ\n"
    text = (BOM if file.bom else "") + file.text
    hunks = format_hunks(text_blocks("", text), disk_line=file.disk_line)
    return file_header(rel, new_mode=mode & 0o777 or new_file_mode(), empty=not hunks) + hunks


def file_stats(diff: str, untracked: set[str]) -> list[dict[str, Any]]:
    """The stat entry of each file in ``diff`` (those in ``untracked`` marked so)."""
    if not diff:
        return []
    from unidiff import PatchSet

    files = []
    for f in PatchSet(diff):
        if f.path in untracked:
            status = "untracked"
        elif f.is_added_file:
            status = "added"
        elif f.is_removed_file:
            status = "deleted"
        else:
            status = "modified"
        files.append(
            {"path": f.path, "status": status, "added": f.added, "removed": f.removed, "binary": bool(f.is_binary_file)}
        )
    return files
