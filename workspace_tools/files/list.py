"""list_files: the files under a folder, .gitignore respected, environments left out, the list bounded."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.workspace.listing import matches_glob, workspace_files
from workspace_tools.workspace.paths import Workspace, shown_name
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.textfile import os_errors

MAX_SHOWN = 500
MAX_DETAILS = 1_000


class ListFilesParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str = Field(default=".", description="Folder to list, relative to the workspace root.")
    pattern: str | None = Field(
        default=None,
        description="Glob to keep only some files: '*.py' matches file names, 'src/**/*.py' paths "
        "('*' stays within a folder, '**' spans folders).",
    )


def list_files_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None) -> Tool[ListFilesParams]:
    policy = secrets or SecretPolicy()

    def presentation(params: ListFilesParams) -> dict[str, Any]:
        return {"label": "List files", "icon": "folder", "detail": workspace.display(params.path)}

    @os_errors(workspace)
    def execute(params: ListFilesParams) -> Any:
        base = workspace.resolve(params.path)
        shown = workspace.relative(base)
        if not base.exists():
            raise ToolCallError(f"{shown} does not exist", code=ErrorCode.FILE_NOT_FOUND)
        listing = workspace_files(workspace, base)
        files = listing.files
        if params.pattern:
            files = [f for f in files if matches_glob(f, params.pattern, base=shown)]
        listed = [f for f in files if not policy.is_secret(f)]
        secret = len(files) - len(listed)
        files = listed
        total = len(files)
        where = "the workspace" if shown == "." else shown
        what = f" matching {params.pattern!r}" if params.pattern else ""
        if total == 0:
            text = f"No files{what} in {where}.\n"
        else:
            text = f"{total} file{'s' if total != 1 else ''}{what} in {where}:\n" + "".join(shown_name(f) + "\n" for f in files[:MAX_SHOWN])
            if total > MAX_SHOWN:
                text += f"… and {total - MAX_SHOWN} more not shown; narrow the list with path or pattern.\n"
        if secret:
            text += f"[{secret} file{'s' if secret != 1 else ''} that look{'' if secret != 1 else 's'} like secrets (.env, keys) not listed]\n"
        text += listing.left_out_text()
        return tool_output(
            text,
            details={
                "path": shown,
                "pattern": params.pattern,
                "files": files[:MAX_DETAILS],
                "total": total,
                "truncated": total > MAX_SHOWN,
                "secrets_skipped": secret,
                "left_out": [f.as_dict() for f in listing.left_out],
            },
            presentation={"label": "List files", "icon": "folder", "detail": shown},
        )

    return tool(
        kind="search",
        name="list_files",
        read_only=True,
        description=(
            "List the files under a folder of the workspace (files ignored by .gitignore, virtualenvs and tool "
            "caches such as .venv or node_modules are left out; pass their path to look inside). "
            f"Shows at most {MAX_SHOWN}; narrow with path or pattern."
        ),
        parameters=ListFilesParams,
        execute=execute,
        presentation=presentation,
        annotations={"readOnly": True},
    )
