"""delete_file: remove one file of the workspace, journaled first so ``cog undo`` puts it back."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.files.movable import checked_path, removal_diff
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.textfile import open_dir, os_errors, path_lock, read_bytes, write_failed

if TYPE_CHECKING:
    from cogcli.contract.context import ToolContext
    from cogcli.contract.preview import Preview
    from workspace_tools.files.journal import Journal


class DeleteFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str = Field(description="The file to delete, relative to the workspace root.")


def delete_file_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None, journal: Journal | None = None) -> Tool[DeleteFileParams]:
    """``journal``: where the file's bytes are recorded (for ``cog undo``) before it is removed."""
    policy = secrets or SecretPolicy()

    def presentation(params: DeleteFileParams) -> dict[str, Any]:
        return {"label": "Delete file", "icon": "trash-2", "detail": workspace.display(params.path)}

    def current(params: DeleteFileParams) -> tuple[Any, str, bytes, int]:
        path, shown = checked_path(workspace, params.path, policy, must_exist=True)
        data = read_bytes(path, shown, root=workspace.root)
        return path, shown, data, stat.S_IMODE(os.lstat(path).st_mode)

    @os_errors(workspace)
    def preview(params: DeleteFileParams, context: ToolContext) -> Preview:
        """The file's lines, all removed: what the person approves."""
        from cogcli.contract.preview import FileBasis, file_preview, sha256_of

        path, shown, data, mode = current(params)
        return file_preview(shown, removal_diff(shown, data, mode), FileBasis(str(path), sha256_of(data), b""))

    @os_errors(workspace)
    def execute(params: DeleteFileParams, context: ToolContext) -> Any:
        from cogcli.contract.details import FileWriteDetails
        from cogcli.contract.diffstat import diff_totals
        from cogcli.contract.preview import check_approved

        with path_lock(workspace.root / params.path, workspace.root):
            path, shown, data, mode = current(params)
            check_approved(context, str(path), data, shown)  # approved on other content: nothing is deleted
            if journal is not None:
                journal.record(shown, before=data, after=None, mode=mode)
            dir_fd = open_dir(path.parent, workspace.root)  # no folder on the way swapped for a link
            try:
                os.unlink(path.name, dir_fd=dir_fd)
            except OSError as exc:
                raise write_failed(shown, exc) from None
            finally:
                os.close(dir_fd)
        diff = removal_diff(shown, data, mode)
        added, removed = diff_totals(diff)
        return tool_output(
            {"path": shown, "deleted": True, "lines": removed},
            details=FileWriteDetails(diff=diff, added=added, removed=removed, created=False,
                                     changed_files=[{"path": shown, "change": "deleted"}]),
            presentation=presentation(params),
        )

    return tool(
        kind="delete",
        name="delete_file",
        description="Delete one file of the workspace (not a folder, a link, or anything in .git/). `cog undo` puts it back.",
        parameters=DeleteFileParams,
        execute=execute,
        presentation=presentation,
        side_effects=("writes files",),
        preview=preview,
    )
