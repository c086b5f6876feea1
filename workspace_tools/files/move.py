"""move_file: rename or move one file inside the workspace, journaled first so ``cog undo`` moves it back."""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.files.movable import checked_path, rename_diff
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.textfile import open_dir, os_errors, path_lock, read_bytes, write_failed

if TYPE_CHECKING:
    from cogcli.contract.context import ToolContext
    from cogcli.contract.preview import Preview
    from workspace_tools.files.journal import Journal


class MoveFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str = Field(description="The file to move, relative to the workspace root.")
    new_path: str = Field(description="Where it goes, relative to the workspace root (missing folders are made). Must not exist yet.")


def move_file_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None, journal: Journal | None = None) -> Tool[MoveFileParams]:
    """``journal``: where the move is recorded (a delete of ``path``, a create of ``new_path``) before it is made."""
    policy = secrets or SecretPolicy()

    def presentation(params: MoveFileParams) -> dict[str, Any]:
        return {"label": "Move file", "icon": "file-symlink",
                "detail": f"{workspace.display(params.path)} → {workspace.display(params.new_path)}"}

    def current(params: MoveFileParams) -> tuple[Any, str, Any, str, bytes, int]:
        path, shown = checked_path(workspace, params.path, policy, must_exist=True)
        target, target_shown = checked_path(workspace, params.new_path, policy, must_exist=False)
        if target == path:
            raise ToolCallError(f"{shown} is already there: path and new_path are the same file", code=ErrorCode.INVALID_ARGUMENTS)
        if os.path.lexists(target):
            raise ToolCallError(f"{target_shown} exists already; delete it first (delete_file) or choose another new_path",
                                code=ErrorCode.INVALID_ARGUMENTS)
        data = read_bytes(path, shown, root=workspace.root)
        return path, shown, target, target_shown, data, stat.S_IMODE(os.lstat(path).st_mode)

    @os_errors(workspace)
    def preview(params: MoveFileParams, context: ToolContext) -> Preview:
        """The rename, as git shows one: what the person approves."""
        from cogcli.contract.preview import FileBasis, Preview, sha256_of

        path, shown, _target, target_shown, data, _mode = current(params)
        shown_preview = {"path": shown, "new_path": target_shown, "diff": rename_diff(shown, target_shown), "added": 0, "removed": 0}
        return Preview(shown_preview, FileBasis(str(path), sha256_of(data), data))

    @os_errors(workspace)
    def execute(params: MoveFileParams, context: ToolContext) -> Any:
        from cogcli.contract.details import FileWriteDetails
        from cogcli.contract.preview import check_approved

        with path_lock(workspace.root / params.path, workspace.root):
            path, shown, target, target_shown, data, mode = current(params)
            check_approved(context, str(path), data, shown)  # approved on other content: nothing is moved
            if journal is not None:  # a move is a delete of the old path and a create of the new one
                journal.record(shown, before=data, after=None, mode=mode)
                journal.record(target_shown, before=None, after=data, mode=None)
            try:
                os.close(open_dir(target.parent, workspace.root, create=True))
            except (FileExistsError, NotADirectoryError):
                raise ToolCallError(f"{workspace.relative(target.parent)} is not a folder (a file is in the way)",
                                    code=ErrorCode.INVALID_ARGUMENTS) from None
            src_fd = open_dir(path.parent, workspace.root)
            dst_fd = open_dir(target.parent, workspace.root)
            try:
                if os.path.lexists(target):  # made meanwhile: never replaced
                    raise ToolCallError(f"{target_shown} exists already; nothing was moved", code=ErrorCode.FILE_CHANGED)
                try:  # a hard link, then the old name removed: a rename that never replaces a file
                    os.link(path.name, target.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                        raise
                    os.rename(path.name, target.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)  # no hard links here
                else:
                    os.unlink(path.name, dir_fd=src_fd)
            except FileExistsError:
                raise ToolCallError(f"{target_shown} exists already; nothing was moved", code=ErrorCode.FILE_CHANGED) from None
            except OSError as exc:
                raise write_failed(shown, exc) from None
            finally:
                os.close(src_fd)
                os.close(dst_fd)
        return tool_output(
            {"path": shown, "new_path": target_shown, "moved": True},
            details=FileWriteDetails(diff=rename_diff(shown, target_shown), added=0, removed=0, created=True,
                                     changed_files=[{"path": shown, "change": "deleted"}, {"path": target_shown, "change": "created"}]),
            presentation=presentation(params),
        )

    return tool(
        kind="move",
        name="move_file",
        description="Move or rename one file inside the workspace (new folders are made; an existing file is never "
                    "replaced). `cog undo` moves it back.",
        parameters=MoveFileParams,
        execute=execute,
        presentation=presentation,
        side_effects=("writes files",),
        preview=preview,
    )
