"""What move_file and delete_file share: which paths they may touch, and the diffs they show.

A path is refused when :meth:`Workspace.resolve` refuses it (outside, ``.git/``), when it is in
``.cog/`` (cog's own state), when it is a secret (:mod:`workspace_tools.workspace.secret_files`), and when it
or a folder on it is a symbolic link (moving or deleting a link is never what the path seemed to
say: the link's target is elsewhere). Only regular files are moved or deleted: a folder is a tree of
changes, one journal record each, and the model moves its files one by one or asks the person.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy


def checked_path(workspace: Workspace, given: str, policy: SecretPolicy, *, must_exist: bool) -> tuple[Path, str]:
    """(the resolved path, its name as shown) of a file move_file or delete_file may touch."""
    path = workspace.resolve(given, for_write=True)
    shown = workspace.relative(path)
    parts = Path(shown).parts
    if parts and parts[0] == ".cog":
        raise ToolCallError(f"{shown} is in .cog/, cog's own state (threads, undo journals); no tool changes it",
                            code=ErrorCode.PATH_OUTSIDE_WORKSPACE)
    spelled = Path(os.path.normpath(workspace.root / given if not os.path.isabs(given) else given))
    if spelled != path and not _same_below_root(workspace, spelled, path):
        raise ToolCallError(f"{given} passes through a symbolic link (it leads to {shown}); give the real path, "
                            "or change the link itself with run_command", code=ErrorCode.INVALID_ARGUMENTS)
    if path == workspace.root:
        raise ToolCallError("the workspace root cannot be moved or deleted", code=ErrorCode.INVALID_ARGUMENTS)
    policy.check(workspace, given, path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if must_exist:
            raise ToolCallError(f"{shown} does not exist; list_files shows the files there are", code=ErrorCode.FILE_NOT_FOUND) from None
        return path, shown
    if stat.S_ISLNK(info.st_mode):
        raise ToolCallError(f"{shown} is a symbolic link; change it with run_command (`rm`, `mv`) if it should go",
                            code=ErrorCode.INVALID_ARGUMENTS)
    if stat.S_ISDIR(info.st_mode):
        raise ToolCallError(f"{shown} is a folder; move or delete its files one by one (each can be undone), "
                            "or use run_command (`git mv`, `rm -r`), which undo does not cover",
                            code=ErrorCode.INVALID_ARGUMENTS)
    if not stat.S_ISREG(info.st_mode):
        raise ToolCallError(f"{shown} is not a regular file (a pipe, socket or device)", code=ErrorCode.FILE_NOT_TEXT)
    return path, shown


def _same_below_root(workspace: Workspace, spelled: Path, resolved: Path) -> bool:
    """An absolute path given under the root as the caller spelled it (a root behind a symlink)."""
    try:
        return workspace.root / spelled.relative_to(workspace._given) == resolved
    except ValueError:
        return False


def removal_diff(shown: str, data: bytes, mode: int) -> str:
    """A git diff deleting ``shown`` (its lines, or ``Binary files … differ``)."""
    from workspace_tools.text.diffs import format_hunks, git_mode, quote_path, text_blocks
    from workspace_tools.text.textfile import NotText, TextFile

    a = quote_path(f"a/{shown}")
    head = f"diff --git {a} {quote_path(f'b/{shown}')}\ndeleted file mode {git_mode(mode)}\n"
    try:
        text = TextFile.decode(data).text
    except NotText:
        return head + f"Binary files {a} and /dev/null differ\n"
    hunks = format_hunks(text_blocks(text, ""))
    return head + (f"--- {a}\n+++ /dev/null\n{hunks}" if hunks else "")


def rename_diff(old: str, new: str) -> str:
    """A git diff renaming ``old`` to ``new`` with its content unchanged."""
    from workspace_tools.text.diffs import quote_path

    return (f"diff --git {quote_path(f'a/{old}')} {quote_path(f'b/{new}')}\nsimilarity index 100%\n"
            f"rename from {old}\nrename to {new}\n")
