"""write_file: create a file (and its folders) or replace its whole content, atomically, with a diff."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.textfile import (
    BOM,
    NotText,
    TextFile,
    atomic_write,
    new_file_mode,
    open_dir,
    os_errors,
    path_lock,
    read_existing,
    split_lines,
    write_failed,
)

if TYPE_CHECKING:
    from pathlib import Path

    from cogcli.contract.context import ToolContext
    from cogcli.contract.preview import Preview
    from workspace_tools.files.journal import Journal


class WriteFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str = Field(description="File to create or overwrite, relative to the workspace root. Missing folders are made.")
    content: str = Field(description="The whole new content of the file.")


class WriteFileResult(BaseModel):
    """What the model reads after a write."""

    path: str = Field(description="The written file, relative to the workspace root.")
    created: bool = Field(description="True if the file did not exist before.")
    lines: int = Field(description="Lines in the file now.")
    diagnostics: str | None = Field(default=None, description="What the checkers (ruff, mypy, tsc, go vet, cargo check …) "
                                    "found that this change introduced or fixed, when anything (workspace_tools.diagnostics).")
    changed: bool = Field(description="False if the file already had exactly this content.")


def write_file_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None, journal: Journal | None = None) -> Tool[WriteFileParams]:
    """``journal``: where each change is recorded (for ``cog undo``) before the file is written."""
    policy = secrets or SecretPolicy()

    def presentation(params: WriteFileParams) -> dict[str, Any]:
        return {"label": "Write file", "icon": "file-plus", "detail": workspace.display(params.path)}

    def target(params: WriteFileParams) -> tuple[Path, str]:
        """The file to write, resolved and checked, and its name as shown."""
        path = workspace.resolve(params.path, for_write=True)
        shown = workspace.relative(path)
        if path == workspace.root or path.is_dir():
            raise ToolCallError(f"{shown} is a directory; give the path of a file", code=ErrorCode.INVALID_ARGUMENTS)
        if path.exists():  # a new secret-looking file (.env.example) may be written; an existing one is not replaced
            policy.check(workspace, params.path, path)
        return path, shown

    def read_old(path: Path, shown: str) -> bytes | None:
        try:
            return read_existing(path, workspace.root)
        except OSError as exc:
            raise ToolCallError(f"could not read {shown}: {exc.strerror or exc}", code=ErrorCode.TOOL_ERROR) from None

    @os_errors(workspace)
    def preview(params: WriteFileParams, context: ToolContext) -> Preview:
        """The write's diff, computed as the call computes it, written nowhere: over what the file
        will hold when the call runs (an earlier call of the turn on it, else the file now)."""
        from cogcli.contract.preview import FileBasis, file_preview, planned_bytes, sha256_of

        path, shown = target(params)
        old_data = planned_bytes(context, str(path))
        if old_data is None:
            old_data = read_old(path, shown)
        new, data, diff = _change(shown, old_data, params.content)
        return file_preview(shown, diff, FileBasis(str(path), sha256_of(old_data), data))

    @os_errors(workspace)
    def execute(params: WriteFileParams, context: ToolContext) -> Any:
        # imported when a call runs, not when the tool is listed (cog tools)
        from cogcli.contract.details import FileWriteDetails
        from cogcli.contract.diffstat import diff_totals
        from cogcli.contract.preview import check_approved

        path, shown = target(params)
        with path_lock(path, workspace.root):  # across processes too: no concurrent change is lost
            old_data = read_old(path, shown)
            check_approved(context, str(path), old_data, shown)  # approved on a diff of other content: nothing is written
            new, data, diff = _change(shown, old_data, params.content)
            if data != old_data:
                record = None
                if journal is not None:
                    mode = stat.S_IMODE(os.stat(path).st_mode) if old_data is not None else None
                    record = journal.record(shown, before=old_data, after=data, mode=mode)
                try:
                    _make_parents(workspace, path.parent)
                    atomic_write(path, data, root=workspace.root, expect=old_data)
                except OSError as exc:
                    raise write_failed(shown, exc) from None
                except ToolCallError as exc:
                    if journal is not None and record is not None and exc.code == ErrorCode.FILE_CHANGED:
                        journal.discard(record)
                    raise
        added, removed = diff_totals(diff)
        created = old_data is None
        return tool_output(
            {"path": shown, "created": created, "lines": len(split_lines(new.text)), "changed": bool(diff)},
            details=FileWriteDetails(diff=diff, added=added, removed=removed, created=created),
            presentation={"label": "Write file", "icon": "file-plus", "detail": shown},
        )

    return tool(
        kind="edit",
        name="write_file",
        description=(
            "Create a file, or replace the whole content of one. Use edit_file to change part of an existing "
            "file. An existing file keeps its line endings, encoding and permissions."
        ),
        parameters=WriteFileParams,
        output_schema=WriteFileResult,
        execute=execute,
        presentation=presentation,
        side_effects=("writes files",),
        preview=preview,
    )


def _change(shown: str, old_data: bytes | None, content: str) -> tuple[TextFile, bytes, str]:
    """The file ``content`` makes over ``old_data`` (None: no file), its bytes and the diff: the one
    computation of a write, for its preview and for the call."""
    from workspace_tools.text.diffs import quote_path

    old: TextFile | None = None
    if old_data is not None:
        try:
            old = TextFile.decode(old_data)
        except NotText:
            old = None
    new = _like(old, content)
    data = new.encode()
    if data == old_data:
        diff = ""
    elif old_data is None:
        diff = _new_file_diff(shown, new, new_file_mode())
    elif old is None:
        a, b = quote_path(f"a/{shown}"), quote_path(f"b/{shown}")
        diff = f"diff --git {a} {b}\nBinary files {a} and {b} differ\n"
    else:
        diff = _diff(shown, old, new)
    return new, data, diff


def _like(old: TextFile | None, content: str) -> TextFile:
    """The new content in the old file's style: CRLF stays CRLF, a BOM stays, latin-1 stays when it fits."""
    if old is None:
        return TextFile(content)
    new = TextFile(old.normalize(content), old.encoding, old.bom, old.newline)
    if content.startswith(BOM):
        new = TextFile(new.text[1:], new.encoding, True, new.newline)
    if new.encoding != "utf-8":
        try:
            new.text.encode(new.encoding)
        except UnicodeEncodeError:
            new = TextFile(new.text, "utf-8", new.bom, new.newline)
    return new


def _make_parents(workspace: Workspace, parent: Any) -> None:
    """Make the missing folders one by one from the root, never through a symlink."""
    try:
        os.close(open_dir(parent, workspace.root, create=True))
    except (FileExistsError, NotADirectoryError):
        raise ToolCallError(
            f"{workspace.relative(parent)} is not a folder (a file is in the way), so nothing can be written under it",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from None


def _diff(shown: str, old: TextFile, new: TextFile) -> str:
    from workspace_tools.text.diffs import file_header, format_hunks, text_blocks

    a, b = old.text, new.text
    if old.bom:
        a = BOM + a
    if new.bom:
        b = BOM + b
    hunks = format_hunks(text_blocks(a, b), disk_line=old.disk_line)
    return file_header(shown) + hunks if hunks else ""


def _new_file_diff(shown: str, new: TextFile, mode: int) -> str:
    from workspace_tools.text.diffs import file_header, format_hunks, text_blocks

    text = (BOM if new.bom else "") + new.text
    hunks = format_hunks(text_blocks("", text), disk_line=new.disk_line)
    return file_header(shown, new_mode=stat.S_IMODE(mode), empty=not hunks) + hunks

