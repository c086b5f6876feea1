"""edit_file: replace a piece of a file (found exactly, else by one tolerant rule that finds it once;
``workspace_tools.text.tolerant``), or several in order, all or none; write it back atomically and
report a git-style diff."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.tolerant import Ambiguous, Found, locate
from workspace_tools.text.textfile import BOM, TextFile, atomic_write, decode_text, os_errors, path_lock, read_bytes, split_lines, write_failed

if TYPE_CHECKING:
    from pathlib import Path

    from cogcli.contract.context import ToolContext
    from cogcli.contract.preview import Preview
    from workspace_tools.files.journal import Journal


class EditItem(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    old_text: str = Field(description="The text to replace, copied from the file; it must occur once.")
    new_text: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every exact occurrence instead of exactly one.")


class EditFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str = Field(description="File to edit, relative to the workspace root.")
    old_text: str | None = Field(
        default=None,
        description="The exact text to replace, copied from the file (whitespace and indentation included, "
        "no line numbers). Include enough surrounding lines that it occurs only once.",
    )
    new_text: str | None = Field(default=None, description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")
    edits: list[EditItem] | None = Field(
        default=None,
        description="Several replacements in this file, applied in order (each to the result of the ones "
        "before) and all or none: instead of old_text/new_text.",
    )


class EditFileResult(BaseModel):
    """What the model reads after an edit."""

    path: str = Field(description="The edited file, relative to the workspace root.")
    replacements: int = Field(description="How many occurrences of old_text were replaced.")
    match: str | None = Field(default=None, description="How old_text was found when not exactly (e.g. trailing-whitespace).")
    matches: list[str] | None = Field(default=None, description="With edits: how each edit's old_text was found, when any was not exactly.")
    diagnostics: str | None = Field(default=None, description="What the checkers (ruff, mypy, tsc, go vet, cargo check …) "
                                    "found that this change introduced or fixed, when anything (workspace_tools.diagnostics).")


def replaced(text: str, positions: list[int], old_len: int, new: str) -> str:
    pieces = []
    at = 0
    for p in positions:
        pieces.append(text[at:p])
        pieces.append(new)
        at = p + old_len
    pieces.append(text[at:])
    return "".join(pieces)


@dataclass(frozen=True, slots=True)
class Change:
    """What an edit makes of a file: the bytes to write, the diff, how many places it replaced and
    the rule (:data:`~workspace_tools.text.tolerant.RULES`) that found each edit's old_text."""

    data: bytes
    diff: str
    replacements: int
    matches: list[str]


#: one replacement: old_text, new_text, replace_all
Edit = tuple[str, str, bool]


def edit_file_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None, journal: Journal | None = None) -> Tool[EditFileParams]:
    """``journal``: where each change is recorded (for ``cog undo``) before the file is written."""
    policy = secrets or SecretPolicy()

    def presentation(params: EditFileParams) -> dict[str, Any]:
        return {"label": "Edit file", "icon": "file-pen", "detail": workspace.display(params.path)}

    def target(params: EditFileParams) -> tuple[Path, str, list[Edit]]:
        """The file to edit, resolved and checked, its name as shown and the edits asked."""
        path = workspace.resolve(params.path, for_write=True)
        shown = workspace.relative(path)
        policy.check(workspace, params.path, path)  # an edit reads the file (and a miss shows lines of it)
        return path, shown, requested_edits(params)

    @os_errors(workspace)
    def preview(params: EditFileParams, context: ToolContext) -> Preview:
        """The edit's diff, computed as the call computes it, written nowhere: over the bytes the
        file will hold when the call runs (an earlier call of the turn on it, else the file now)."""
        from cogcli.contract.preview import FileBasis, file_preview, planned_bytes, sha256_of

        path, shown, edits = target(params)
        raw = planned_bytes(context, str(path))
        if raw is None:
            raw = read_bytes(path, shown, root=workspace.root)
        try:
            made = change(edits, raw, shown, listed=params.edits is not None)
        except _NoMatch as miss:
            raise miss.error(shown) from None
        return file_preview(shown, made.diff, FileBasis(str(path), sha256_of(raw), made.data))

    @os_errors(workspace)
    def execute(params: EditFileParams, context: ToolContext) -> Any:
        # imported when a call runs, not when the tool is listed (cog tools)
        from cogcli.contract.details import FileEditDetails
        from cogcli.contract.diffstat import diff_totals

        path, shown, edits = target(params)
        single = params.edits is None
        # held from the read to the rename, across processes: no concurrent edit is lost
        try:
            made = _edit_locked(edits, path, shown, context, listed=not single)
        except _NoMatch as miss:  # worded after the lock is let go: finding the closest lines takes time
            raise miss.error(shown) from None
        added, removed = diff_totals(made.diff)
        content: dict[str, Any] = {"path": shown, "replacements": made.replacements}
        if single and made.matches[0] != "exact":
            content["match"] = made.matches[0]  # said only when old_text was not found as sent
        if not single:
            content["matches"] = made.matches
        # the rule that found old_text (``match``), or each edit's (``matches``): extra keys of FileEditDetails
        found: dict[str, Any] = {"match": made.matches[0]} if single else {"matches": made.matches}
        details = FileEditDetails(diff=made.diff, added=added, removed=removed, **found)
        return tool_output(content, details=details, presentation={"label": "Edit file", "icon": "file-pen", "detail": shown})

    def _edit_locked(edits: list[Edit], path: Path, shown: str, context: ToolContext, *, listed: bool) -> Change:
        from cogcli.contract.preview import check_approved

        with path_lock(path, workspace.root):
            raw = read_bytes(path, shown, root=workspace.root)
            check_approved(context, str(path), raw, shown)  # approved on a diff of other content: nothing is written
            made = change(edits, raw, shown, listed=listed)
            record = None
            if journal is not None:
                record = journal.record(shown, before=raw, after=made.data, mode=stat.S_IMODE(os.stat(path).st_mode))
            try:
                atomic_write(path, made.data, root=workspace.root, expect=raw)
            except OSError as exc:
                raise write_failed(shown, exc) from None
            except ToolCallError as exc:
                if journal is not None and record is not None and exc.code == ErrorCode.FILE_CHANGED:
                    journal.discard(record)
                raise
        return made

    return tool(
        kind="edit",
        name="edit_file",
        description=(
            "Replace old_text with new_text in a file. old_text should match the file exactly (copy it from "
            "read_file without the line numbers) and occur once, unless replace_all is true. When it does not, "
            "a match that differs only in line endings, trailing whitespace, a uniform indentation shift, "
            "read_file's line numbers or typographic quotes/dashes is used if it is the only one (the result's "
            "match says which). For several changes to one file pass edits=[{old_text, new_text}, ...] instead: "
            "applied in order, all or none. Only the matched text changes; line endings and encoding are kept."
        ),
        parameters=EditFileParams,
        output_schema=EditFileResult,
        execute=execute,
        presentation=presentation,
        side_effects=("writes files",),
        preview=preview,
    )


def requested_edits(params: EditFileParams) -> list[Edit]:
    """The replacements a call asks for, in order: its edits list, or its one old_text/new_text."""

    def invalid(message: str) -> ToolCallError:
        return ToolCallError(message, code=ErrorCode.INVALID_ARGUMENTS)

    if params.edits is not None:
        if params.old_text is not None or params.new_text is not None:
            raise invalid("give either old_text and new_text, or edits, not both")
        if not params.edits:
            raise invalid("edits is empty; give at least one {old_text, new_text}")
        if params.replace_all:
            raise invalid("with edits, put replace_all in the edit it is for")
        edits = [(e.old_text, e.new_text, e.replace_all) for e in params.edits]
    elif params.old_text is None or params.new_text is None:
        raise invalid("give old_text and new_text (or edits, a list of {old_text, new_text})")
    else:
        edits = [(params.old_text, params.new_text, params.replace_all)]
    for i, (old, _, _) in enumerate(edits):
        if old == "":
            raise invalid(
                _which(i, len(edits), params.edits is not None)
                + "old_text is empty; give the exact text to replace (to create a file or replace it whole, use write_file)"
            )
    return edits


def _which(index: int, count: int, listed: bool) -> str:
    return f"edits[{index}] (edit {index + 1} of {count}): " if listed else ""


def change(edits: list[Edit], raw: bytes, shown: str, *, listed: bool = False) -> Change:
    """The bytes ``edits`` make of ``raw`` (each applied to the result of the ones before), the
    diff and the rules that matched: the one computation of an edit, for its preview and for the
    call. Raises on the first edit that cannot apply: nothing is written then."""
    file = decode_text(raw, shown)
    text = file.text
    matches: list[str] = []
    count = 0
    last: Found | None = None
    for i, (old_raw, new_raw, replace_all) in enumerate(edits):
        which = _which(i, len(edits), listed)
        old, new = file.normalize(old_raw), file.normalize(new_raw)
        if old == new:
            raise ToolCallError(which + "old_text and new_text are the same; there is nothing to change", code=ErrorCode.INVALID_ARGUMENTS)
        try:
            found = locate(text, old, new, replace_all=replace_all)
        except Ambiguous as many:
            raise ToolCallError(which + _ambiguous_message(text, shown, many.positions, many.rule), code=ErrorCode.EDIT_AMBIGUOUS) from None
        if found is None:
            raise _NoMatch(file.with_text(text), old, new, which)
        matches.append(found.rule)
        count += len(found.positions)
        last = found
        text = replaced(text, found.positions, found.length, found.new)
    data = file.with_text(text).encode()
    if len(edits) == 1 and last is not None:
        diff = _diff(file, shown, last.positions, last.length, last.new)
    else:
        diff = _whole_diff(file, text, shown)
    return Change(data, diff, count, matches)


class _NoMatch(Exception):
    """old_text is not in the file: raised inside the lock, worded outside it."""

    def __init__(self, file: TextFile, old: str, new: str, which: str = "") -> None:
        super().__init__()
        self.file, self.old, self.new, self.which = file, old, new, which

    def error(self, shown: str) -> ToolCallError:
        message = self.which + _no_match_message(self.file, shown, self.old, self.new)
        if self.which:
            message += " No edit of the list was made."
        return ToolCallError(message, code=ErrorCode.EDIT_NO_MATCH)


def _whole_diff(file: TextFile, after: str, shown: str) -> str:
    from workspace_tools.text.diffs import file_header, format_hunks, text_blocks

    before = file.text
    if file.bom:
        before, after = BOM + before, BOM + after
    hunks = format_hunks(text_blocks(before, after), disk_line=file.disk_line)
    return file_header(shown) + hunks if hunks else ""


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


def _ambiguous_message(text: str, shown: str, positions: list[int], rule: str = "exact") -> str:
    numbers: list[int] = []
    line, cursor = 1, 0
    for p in positions:
        line += text.count("\n", cursor, p)
        cursor = p
        numbers.append(line)
    listed = ", ".join(str(n) for n in numbers[:20]) + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")
    if rule != "exact":
        return (
            f"old_text is not in {shown} exactly, and with {_RULE_WORDS.get(rule, rule)} ignored it matches "
            f"{len(positions)} places (at lines {listed}); nothing was changed. Copy old_text exactly as the file "
            "has it, with enough surrounding lines that it matches only the place to change."
        )
    return (
        f"old_text occurs {len(positions)} times in {shown} (at lines {listed}). Add surrounding lines to "
        "old_text so it matches only the place to change, or pass replace_all=true to change every one."
    )


_RULE_WORDS = {
    "line-endings": "line endings",
    "trailing-whitespace": "trailing whitespace",
    "indentation": "indentation",
    "line-numbers": "line-number prefixes",
    "unicode-punctuation": "typographic quotes, dashes and spaces",
}
