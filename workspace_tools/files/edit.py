"""edit_file: replace an exact piece of a file, write it back atomically, report a git-style diff."""

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
from workspace_tools.text.textfile import BOM, TextFile, atomic_write, decode_text, os_errors, path_lock, read_bytes, split_lines, write_failed

if TYPE_CHECKING:
    from pathlib import Path

    from cogcli.contract.context import ToolContext
    from cogcli.contract.preview import Preview
    from workspace_tools.files.journal import Journal


class EditFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str = Field(description="File to edit, relative to the workspace root.")
    old_text: str = Field(
        description="The exact text to replace, copied from the file (whitespace and indentation included, "
        "no line numbers). Include enough surrounding lines that it occurs only once."
    )
    new_text: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


class EditFileResult(BaseModel):
    """What the model reads after an edit."""

    path: str = Field(description="The edited file, relative to the workspace root.")
    replacements: int = Field(description="How many occurrences of old_text were replaced.")


def find_all(text: str, piece: str) -> list[int]:
    """Start offsets of the non-overlapping occurrences of ``piece``, left to right (as str.replace)."""
    positions = []
    at = text.find(piece)
    while at != -1:
        positions.append(at)
        at = text.find(piece, at + len(piece))
    return positions


def replaced(text: str, positions: list[int], old_len: int, new: str) -> str:
    pieces = []
    at = 0
    for p in positions:
        pieces.append(text[at:p])
        pieces.append(new)
        at = p + old_len
    pieces.append(text[at:])
    return "".join(pieces)


def edit_file_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None, journal: Journal | None = None) -> Tool[EditFileParams]:
    """``journal``: where each change is recorded (for ``cog undo``) before the file is written."""
    policy = secrets or SecretPolicy()

    def presentation(params: EditFileParams) -> dict[str, Any]:
        return {"label": "Edit file", "icon": "file-pen", "detail": workspace.display(params.path)}

    def target(params: EditFileParams) -> tuple[Path, str]:
        """The file to edit, resolved and checked, and its name as shown."""
        path = workspace.resolve(params.path, for_write=True)
        shown = workspace.relative(path)
        policy.check(workspace, params.path, path)  # an edit reads the file (and a miss shows lines of it)
        if params.old_text == "":
            raise ToolCallError(
                "old_text is empty; give the exact text to replace (to create a file or replace it whole, use write_file)",
                code=ErrorCode.INVALID_ARGUMENTS,
            )
        return path, shown

    @os_errors(workspace)
    def preview(params: EditFileParams, context: ToolContext) -> Preview:
        """The edit's diff, computed as the call computes it, written nowhere: over the bytes the
        file will hold when the call runs (an earlier call of the turn on it, else the file now)."""
        from cogcli.contract.preview import FileBasis, file_preview, planned_bytes, sha256_of

        path, shown = target(params)
        raw = planned_bytes(context, str(path))
        if raw is None:
            raw = read_bytes(path, shown, root=workspace.root)
        try:
            data, diff, _ = change(params, raw, shown)
        except _NoMatch as miss:
            raise ToolCallError(_no_match_message(miss.file, shown, miss.old, miss.new), code=ErrorCode.EDIT_NO_MATCH) from None
        return file_preview(shown, diff, FileBasis(str(path), sha256_of(raw), data))

    @os_errors(workspace)
    def execute(params: EditFileParams, context: ToolContext) -> Any:
        # imported when a call runs, not when the tool is listed (cog tools)
        from cogcli.contract.details import FileEditDetails

        path, shown = target(params)
        # held from the read to the rename, across processes: no concurrent edit is lost
        try:
            added, removed, diff, positions = _edit_locked(params, path, shown, context)
        except _NoMatch as miss:  # worded after the lock is let go: finding the closest lines takes time
            raise ToolCallError(_no_match_message(miss.file, shown, miss.old, miss.new), code=ErrorCode.EDIT_NO_MATCH) from None
        return tool_output(
            {"path": shown, "replacements": len(positions)},
            details=FileEditDetails(diff=diff, added=added, removed=removed),
            presentation={"label": "Edit file", "icon": "file-pen", "detail": shown},
        )

    def change(params: EditFileParams, raw: bytes, shown: str) -> tuple[bytes, str, list[int]]:
        """The bytes the edit makes of ``raw``, its diff and where it replaced: the one computation
        of an edit, for its preview and for the call."""
        file = decode_text(raw, shown)
        old, new = file.normalize(params.old_text), file.normalize(params.new_text)
        if old == new:
            raise ToolCallError("old_text and new_text are the same; there is nothing to change", code=ErrorCode.INVALID_ARGUMENTS)
        positions = find_all(file.text, old)
        if not positions:
            raise _NoMatch(file, old, new)
        if len(positions) > 1 and not params.replace_all:
            raise ToolCallError(_ambiguous_message(file.text, shown, positions), code=ErrorCode.EDIT_AMBIGUOUS)
        data = file.with_text(replaced(file.text, positions, len(old), new)).encode()
        return data, _diff(file, shown, positions, len(old), new), positions

    def _edit_locked(params: EditFileParams, path: Path, shown: str, context: ToolContext) -> tuple[int, int, str, list[int]]:
        from cogcli.contract.diffstat import diff_totals
        from cogcli.contract.preview import check_approved

        with path_lock(path, workspace.root):
            raw = read_bytes(path, shown, root=workspace.root)
            check_approved(context, str(path), raw, shown)  # approved on a diff of other content: nothing is written
            data, diff, positions = change(params, raw, shown)
            record = None
            if journal is not None:
                record = journal.record(shown, before=raw, after=data, mode=stat.S_IMODE(os.stat(path).st_mode))
            try:
                atomic_write(path, data, root=workspace.root, expect=raw)
            except OSError as exc:
                raise write_failed(shown, exc) from None
            except ToolCallError as exc:
                if journal is not None and record is not None and exc.code == ErrorCode.FILE_CHANGED:
                    journal.discard(record)
                raise
        added, removed = diff_totals(diff)
        return added, removed, diff, positions

    return tool(
        kind="edit",
        name="edit_file",
        description=(
            "Replace old_text with new_text in a file. old_text must match the file exactly (copy it from "
            "read_file without the line numbers) and occur once, unless replace_all is true. Only the matched "
            "text changes; line endings and encoding are kept."
        ),
        parameters=EditFileParams,
        output_schema=EditFileResult,
        execute=execute,
        presentation=presentation,
        side_effects=("writes files",),
        preview=preview,
    )


class _NoMatch(Exception):
    """old_text is not in the file: raised inside the lock, worded outside it."""

    def __init__(self, file: TextFile, old: str, new: str) -> None:
        super().__init__()
        self.file, self.old, self.new = file, old, new


def _diff(file: TextFile, shown: str, positions: list[int], old_len: int, new: str) -> str:
    from workspace_tools.text.diffs import edit_blocks, file_header, format_hunks

    base = file.text
    if file.bom:  # the BOM is part of line 1 on disk: keep it in the diff so `git apply` matches
        base = BOM + base
        positions = [p + 1 for p in positions]
    hunks = format_hunks(edit_blocks(base, positions, old_len, new), disk_line=file.disk_line)
    return file_header(shown) + hunks if hunks else ""


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _no_match_message(file: TextFile, shown: str, old: str, new: str) -> str:
    from workspace_tools.files.closest import closest_window, show_lines

    parts = [f"old_text was not found in {shown}."]
    if _looks_applied(file.text, new):
        parts.append(
            f" new_text is already in the file (line {_line_of(file.text, file.text.find(new.strip()))}): "
            "the change may have been made already; read the file to check."
        )
    lines = split_lines(file.text)
    near = closest_window(lines, old)
    if near is not None:
        span = f"line {near.start + 1}" if near.stop - near.start == 1 else f"lines {near.start + 1}-{near.stop}"
        parts.append(
            f"\nThe closest text ({near.ratio:.0%} similar) is at {span}:\n"
            + show_lines(lines, near.start, near.stop)
        )
    parts.append(
        "\nCopy old_text exactly as the file has it (whitespace and indentation included, no line numbers); "
        "read_file shows the current content."
    )
    return "".join(parts)


#: non-blank characters new_text needs before finding it in the file says anything: a short
#: piece (")", "pass", "x = 1") is in many files that were never edited
APPLIED_HINT_MIN_CHARS = 20


def _looks_applied(text: str, new: str) -> bool:
    """Whether new_text being in the file suggests the edit was made already: it is substantial
    (at least :data:`APPLIED_HINT_MIN_CHARS` non-blank characters) and occurs exactly once."""
    core = new.strip()
    if sum(1 for c in core if not c.isspace()) < APPLIED_HINT_MIN_CHARS:
        return False
    return text.count(core) == 1


def _ambiguous_message(text: str, shown: str, positions: list[int]) -> str:
    numbers: list[int] = []
    line, cursor = 1, 0
    for p in positions:
        line += text.count("\n", cursor, p)
        cursor = p
        numbers.append(line)
    listed = ", ".join(str(n) for n in numbers[:20]) + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")
    return (
        f"old_text occurs {len(positions)} times in {shown} (at lines {listed}). Add surrounding lines to "
        "old_text so it matches only the place to change, or pass replace_all=true to change every one."
    )
