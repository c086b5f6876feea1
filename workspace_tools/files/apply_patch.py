"""apply_patch: Codex's patch format (add, update, move, delete files) applied all or nothing.

The patch is parsed (:mod:`workspace_tools.text.patch_format`) and every path checked as move_file and
delete_file check theirs (:func:`workspace_tools.files.movable.checked_path`: inside the workspace,
not ``.git/`` or ``.cog/``, no secret, no link, a regular file); a path is touched once per patch.

**All or nothing** — a deliberate difference from Codex, which keeps the operations before a
failing one. Partial application is avoided in three steps, all under the workspace's write lock
(:func:`~workspace_tools.text.textfile.workspace_lock`, which every file tool of every cog process
takes):

1. *compute*: every file is read and every new content computed in memory (hunks placed by
   :mod:`workspace_tools.text.patch_apply`, encoded in the file's encoding, BOM and line endings).
   Any error — a bad line, a hunk not found or found twice, a path refused, a file changed since it
   was shown for approval — ends the call here and nothing has been written.
2. *journal*: every change is recorded in the undo journal (before-image, mode, hash of the new
   bytes) before any file is touched; a record that cannot be written discards those made and
   nothing is written.
3. *write*: the changes are made one by one, each atomic (temp file + rename, mode kept; a delete
   is one unlink; a move writes the new path, then unlinks the old one). If one fails (a full disk,
   another program changed a file between the read and the rename), the changes already made are
   rolled back from the before-images held in memory, newest first, and the journal's records are
   discarded; only if the roll-back itself fails are they kept, so ``cog undo`` can finish it.

Undo (``cog undo``) reads the journal as for the other file tools: a create, an update, a delete,
and a move as the delete of the old path and the create of the new one.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.files.movable import checked_path, removal_diff
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.textfile import (
    BOM,
    TextFile,
    atomic_write,
    decode_text,
    new_file_mode,
    open_dir,
    os_errors,
    read_bytes,
    read_existing,
    workspace_lock,
)

if TYPE_CHECKING:
    from cogcli.contract.context import ToolContext
    from cogcli.contract.preview import Preview
    from workspace_tools.files.journal import Journal
    from workspace_tools.text.patch_format import Operation

#: a check of one file's bytes as read (None: no file) against what was shown for approval
Check = Callable[[Path, "bytes | None", str], None]


class ApplyPatchParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    patch: str = Field(
        description=(
            "The whole patch, from '*** Begin Patch' to '*** End Patch'. Per file: '*** Add File: <path>' then "
            "its lines each starting with '+'; '*** Delete File: <path>'; or '*** Update File: <path>' (optionally "
            "followed by '*** Move to: <new path>') then hunks: an '@@' line (optionally '@@ <a line above the "
            "change, e.g. a def>'), then lines starting with ' ' (context, about 3 before and after), '-' (removed) "
            "or '+' (added); '*** End of File' after a hunk that ends at the end of the file. Paths are relative."
        )
    )

    @model_validator(mode="before")
    @classmethod
    def _native(cls, data: Any) -> Any:
        """A call of the Responses API's native apply_patch tool (``{"operation": {type, path, diff}}``):
        its one operation as the patch (:func:`~workspace_tools.text.patch_format.operation_patch`)."""
        if isinstance(data, dict) and "operation" in data and "patch" not in data:
            from workspace_tools.text.patch_format import operation_patch

            return {**{k: v for k, v in data.items() if k != "operation"}, "patch": operation_patch(data["operation"])}
        return data


@dataclass(frozen=True)
class Step:
    """One file's change, computed in memory before anything is written."""

    change: str  # "created", "modified", "deleted" or "moved"
    path: Path
    shown: str
    before: bytes | None  # the bytes now; None: no file
    after: bytes | None  # the bytes the change leaves at ``target`` (or ``path``); None: deleted
    mode: int | None  # the file's permission bits now
    diff: str
    target: Path | None = None  # a move's new path
    target_shown: str | None = None


@dataclass(frozen=True)
class PatchBasis:
    """What a patch's preview was computed from: each file's resolved path and the sha256 of its
    bytes then (None: no file)."""

    files: tuple[tuple[str, str | None], ...]


def apply_patch_tool(workspace: Workspace, *, secrets: SecretPolicy | None = None, journal: Journal | None = None) -> Tool[ApplyPatchParams]:
    """``journal``: where each change is recorded (for ``cog undo``) before any file is written."""
    policy = secrets or SecretPolicy()

    def presentation(params: ApplyPatchParams) -> dict[str, Any]:
        from workspace_tools.text.patch_format import PatchError, parse_patch

        try:
            paths = [p for op in parse_patch(params.patch) for p in _named(op)]
        except PatchError:
            paths = []
        return {"label": "Apply patch", "icon": "file-diff", "detail": _files_label([workspace.display(p) for p in paths])}

    @os_errors(workspace)
    def preview(params: ApplyPatchParams, context: ToolContext) -> Preview:
        """The diff of every file the patch touches, computed as the call computes it, written nowhere."""
        from cogcli.contract.diffstat import diff_totals
        from cogcli.contract.preview import Preview

        steps = plan(params.patch, None)
        diff = "".join(s.diff for s in steps)
        added, removed = diff_totals(diff)
        shown = {"path": _files_label([s.target_shown or s.shown for s in steps]), "diff": diff, "added": added, "removed": removed}
        return Preview(shown, PatchBasis(tuple(entry for s in steps for entry in _basis(s))))

    @os_errors(workspace)
    def execute(params: ApplyPatchParams, context: ToolContext) -> Any:
        from cogcli.contract.details import PatchDetails, PatchedFile
        from cogcli.contract.diffstat import diff_totals

        with workspace_lock(workspace.root):  # from the first read to the last rename
            steps = plan(params.patch, _approval_check(context))
            _apply(workspace, steps, journal)
        files = []
        for s in steps:
            added, removed = diff_totals(s.diff)
            files.append(PatchedFile(path=s.shown, change=s.change, new_path=s.target_shown, diff=s.diff, added=added, removed=removed))
        diff = "".join(s.diff for s in steps)
        added, removed = diff_totals(diff)
        changed = [c for s in steps for c in _changed_files(s)]
        return tool_output(
            _summary(files),
            details=PatchDetails(diff=diff, added=added, removed=removed, files_patched=files, changed_files=changed),
            presentation={"label": "Apply patch", "icon": "file-diff", "detail": _files_label([s.target_shown or s.shown for s in steps])},
        )

    def plan(patch: str, check: Check | None) -> list[Step]:
        """Every change the patch makes, computed in memory (nothing written); ``check`` sees each
        file's bytes as read, before anything is computed from them."""
        from workspace_tools.text.patch_format import AddFile, DeleteFile, PatchError, parse_patch

        try:
            ops = parse_patch(patch)
        except PatchError as exc:
            raise ToolCallError(f"the patch was not applied: {exc}", code=ErrorCode.INVALID_ARGUMENTS) from None
        seen: dict[Path, int] = {}
        steps = []
        for op in ops:
            if isinstance(op, AddFile):
                steps.append(_add(workspace, policy, op.path, op.content, op.line, check, seen))
            elif isinstance(op, DeleteFile):
                path, shown, data, mode = _existing(workspace, policy, op.path, op.line, check, seen)
                steps.append(Step("deleted", path, shown, data, None, mode, removal_diff(shown, data, mode)))
            else:
                steps.append(_update(workspace, policy, op, check, seen))
        return steps

    return tool(
        kind="edit",
        name="apply_patch",
        description=(
            "Change one or more files with one patch in Codex's format: add, update (by context lines), move and "
            "delete files. All or nothing: if any part does not apply, no file is changed. Files keep their line "
            "endings, encoding and permissions; `cog undo` puts everything back."
        ),
        parameters=ApplyPatchParams,
        execute=execute,
        presentation=presentation,
        side_effects=("writes files",),
        ordered_by=None,
        preview=preview,
    )


# --- computing ------------------------------------------------------------------------------


def _claim(path: Path, shown: str, line: int, seen: dict[Path, int]) -> None:
    if path in seen:
        raise ToolCallError(
            f"the patch was not applied: patch line {line} touches {shown}, which patch line {seen[path]} touches "
            "already; put all of one file's changes in one '*** Update File' section",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    seen[path] = line


def _new_path(workspace: Workspace, policy: SecretPolicy, given: str, line: int, check: Check | None,
              seen: dict[Path, int], what: str) -> tuple[Path, str]:
    path, shown = checked_path(workspace, given, policy, must_exist=False)
    _claim(path, shown, line, seen)
    current = read_existing(path, workspace.root) if os.path.lexists(path) else None
    if check is not None:
        check(path, current, shown)
    if os.path.lexists(path):
        raise ToolCallError(f"the patch was not applied: {what} {shown} (patch line {line}), which exists already; "
                            "change it with '*** Update File', or delete it first", code=ErrorCode.INVALID_ARGUMENTS)
    return path, shown


def _add(workspace: Workspace, policy: SecretPolicy, given: str, content: str, line: int, check: Check | None,
         seen: dict[Path, int]) -> Step:
    path, shown = _new_path(workspace, policy, given, line, check, seen, "it adds")
    new = TextFile(content)
    return Step("created", path, shown, None, new.encode(), None, _created_diff(shown, new))


def _existing(workspace: Workspace, policy: SecretPolicy, given: str, line: int, check: Check | None,
              seen: dict[Path, int]) -> tuple[Path, str, bytes, int]:
    path, shown = checked_path(workspace, given, policy, must_exist=True)
    _claim(path, shown, line, seen)
    data = read_bytes(path, shown, root=workspace.root)
    if check is not None:
        check(path, data, shown)
    return path, shown, data, stat.S_IMODE(os.lstat(path).st_mode)


def _update(workspace: Workspace, policy: SecretPolicy, op: Any, check: Check | None, seen: dict[Path, int]) -> Step:
    from workspace_tools.files.movable import rename_diff
    from workspace_tools.text.patch_apply import HunkError, apply_hunks

    path, shown, data, mode = _existing(workspace, policy, op.path, op.line, check, seen)
    target = target_shown = None
    if op.move_to is not None:
        target, target_shown = _new_path(workspace, policy, op.move_to, op.line + 1, check, seen, "it moves a file to")
    file = decode_text(data, shown)
    try:
        text = apply_hunks(file.text, op.hunks, shown)
    except HunkError as exc:
        code = ErrorCode.EDIT_AMBIGUOUS if exc.ambiguous else ErrorCode.EDIT_NO_MATCH
        raise ToolCallError(f"the patch was not applied (no file was changed): {exc}", code=code) from None
    new = file.with_text(text)
    after = new.encode() if text != file.text else data
    if target is None:
        return Step("modified", path, shown, data, after, mode, _modified_diff(shown, shown, file, new))
    assert target_shown is not None
    diff = rename_diff(shown, target_shown) if after == data else _modified_diff(shown, target_shown, file, new)
    return Step("moved", path, shown, data, after, mode, diff, target, target_shown)


def _approval_check(context: Any) -> Check | None:
    """When the call runs: raise ``FILE_CHANGED`` for a file that is not what the approved preview
    was computed from (nothing is written then); None when no preview was approved."""
    basis = getattr(getattr(context, "approved", None), "basis", None)
    if not isinstance(basis, PatchBasis):
        return None
    shown_hashes = dict(basis.files)

    def check(path: Path, data: bytes | None, shown: str) -> None:
        digest = None if data is None else hashlib.sha256(data).hexdigest()
        if shown_hashes.get(str(path), "absent") != digest:
            raise ToolCallError(
                f"{shown} is not what it was when this patch was shown for approval (another program changed it); "
                "nothing was written. Read the file again and redo the patch.",
                code=ErrorCode.FILE_CHANGED,
            )

    return check


def _basis(step: Step) -> list[tuple[str, str | None]]:
    """The files a step reads, with the sha256 of their bytes (None: a path that must not exist)."""
    entries = [(str(step.path), None if step.before is None else hashlib.sha256(step.before).hexdigest())]
    return entries + ([(str(step.target), None)] if step.target is not None else [])


# --- writing --------------------------------------------------------------------------------


def _apply(workspace: Workspace, steps: list[Step], journal: Journal | None) -> None:
    """Journal every step, then make them; a failure rolls back those made (module docstring)."""
    records: list[int] = []
    if journal is not None:
        try:
            for s in steps:
                if s.change == "moved":
                    records.append(journal.record(s.shown, before=s.before, after=None, mode=s.mode))
                    records.append(journal.record(s.target_shown or "", before=None, after=s.after, mode=None))
                else:
                    records.append(journal.record(s.shown, before=s.before, after=s.after, mode=s.mode))
        except ToolCallError:
            for seq in records:
                journal.discard(seq)
            raise
    done: list[Step] = []
    try:
        for s in steps:
            _make(workspace, s)
            done.append(s)
    except (OSError, ToolCallError) as exc:
        failed = _roll_back(workspace, done)
        if journal is not None and not failed:
            for seq in records:
                journal.discard(seq)
        why = exc.message if isinstance(exc, ToolCallError) else (exc.strerror or str(exc))
        code = exc.code if isinstance(exc, ToolCallError) else ErrorCode.TOOL_ERROR
        where = s.target_shown or s.shown
        if failed:
            raise ToolCallError(f"the patch failed while writing {where} ({why}), and putting back {', '.join(failed)} "
                                "failed too; `cog undo` restores them from the journal", code=ErrorCode.TOOL_ERROR) from None
        raise ToolCallError(f"the patch was not applied: writing {where} failed ({why}); the files written before it "
                            "were put back, so no file is changed", code=code) from None


def _make(workspace: Workspace, s: Step) -> None:
    root = workspace.root
    if s.change == "created":
        _make_parents(workspace, s.path.parent)
        atomic_write(s.path, s.after or b"", root=root, expect=None)
    elif s.change == "modified":
        if s.after != s.before:
            atomic_write(s.path, s.after or b"", root=root, expect=s.before)
    elif s.change == "deleted":
        _unlink(workspace, s.path, s.shown, s.before)
    else:
        assert s.target is not None and s.target_shown is not None
        _make_parents(workspace, s.target.parent)
        atomic_write(s.target, s.after or b"", mode=s.mode, root=root, expect=None)
        try:
            _unlink(workspace, s.path, s.shown, s.before)
        except BaseException:
            _unlink(workspace, s.target, s.target_shown, None)
            raise


def _roll_back(workspace: Workspace, done: list[Step]) -> list[str]:
    """Put back what ``done`` changed, newest first; the files that could not be put back."""
    failed = []
    for s in reversed(done):
        try:
            if s.change == "created":
                _unlink(workspace, s.path, s.shown, None)
            elif s.change in ("modified", "deleted"):
                atomic_write(s.path, s.before or b"", mode=s.mode, root=workspace.root)
            else:
                assert s.target is not None and s.target_shown is not None
                atomic_write(s.path, s.before or b"", mode=s.mode, root=workspace.root)
                _unlink(workspace, s.target, s.target_shown, None)
        except (OSError, ToolCallError):
            failed.append(s.shown)
    return failed


def _unlink(workspace: Workspace, path: Path, shown: str, expect: bytes | None) -> None:
    """Remove ``path`` (through its folder's descriptor: no link followed); with ``expect``, only
    while it still holds those bytes."""
    if expect is not None and read_existing(path, workspace.root) != expect:
        raise ToolCallError(f"{shown}: the file changed since it was read (another program wrote it)", code=ErrorCode.FILE_CHANGED)
    dir_fd = open_dir(path.parent, workspace.root)
    try:
        os.unlink(path.name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _make_parents(workspace: Workspace, parent: Path) -> None:
    try:
        os.close(open_dir(parent, workspace.root, create=True))
    except (FileExistsError, NotADirectoryError):
        raise ToolCallError(f"{workspace.relative(parent)} is not a folder (a file is in the way), so nothing can be "
                            "written under it", code=ErrorCode.INVALID_ARGUMENTS) from None


# --- what is shown --------------------------------------------------------------------------


def _created_diff(shown: str, new: TextFile) -> str:
    from workspace_tools.text.diffs import file_header, format_hunks, text_blocks

    hunks = format_hunks(text_blocks("", new.text), disk_line=new.disk_line)
    return file_header(shown, new_mode=new_file_mode(), empty=not hunks) + hunks


def _modified_diff(shown: str, target: str, old: TextFile, new: TextFile) -> str:
    """A git diff of ``old`` to ``new``; a rename header when ``target`` is another path."""
    from workspace_tools.text.diffs import file_header, format_hunks, quote_path, text_blocks

    a, b = (BOM if old.bom else "") + old.text, (BOM if new.bom else "") + new.text
    hunks = format_hunks(text_blocks(a, b), disk_line=old.disk_line)
    if target == shown:
        return file_header(shown) + hunks if hunks else ""
    qa, qb = quote_path(f"a/{shown}"), quote_path(f"b/{target}")
    return f"diff --git {qa} {qb}\nrename from {shown}\nrename to {target}\n--- {qa}\n+++ {qb}\n{hunks}"


def _named(op: Operation) -> list[str]:
    move_to = getattr(op, "move_to", None)
    return [move_to] if move_to else [op.path]


def _files_label(paths: list[str]) -> str:
    return paths[0] if len(paths) == 1 else f"{len(paths)} files"


def _changed_files(s: Step) -> list[dict[str, str]]:
    if s.change == "moved":
        return [{"path": s.shown, "change": "deleted"}, {"path": s.target_shown or "", "change": "created"}]
    return [{"path": s.shown, "change": s.change}]


def _summary(files: list[Any]) -> str:
    """What the model reads: a line per file."""
    lines = [f"Applied the patch: {len(files)} file{'s' if len(files) != 1 else ''} changed."]
    for f in files:
        counts = f" (+{f.added} -{f.removed})" if f.added or f.removed else ""
        if f.change == "moved":
            lines.append(f"moved {f.path} to {f.new_path}{counts}")
        elif f.change == "deleted":
            lines.append(f"deleted {f.path}")
        else:
            lines.append(f"{'created' if f.change == 'created' else 'updated'} {f.path}{counts}")
    return "\n".join(lines)
