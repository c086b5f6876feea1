"""``fs/read_text_file``: when the editor offers it, ``read_file`` reads through the editor, so the
model sees a file as the person has it open — unsaved changes included.

The same confinement as every read: the path is resolved by :meth:`Workspace.resolve` (nothing
outside the workspace, no link out, not ``.cog/``) and checked by the secret-file rules before
the editor is asked; only then is the absolute path sent. An image (by its first bytes) is read
from disk as ``read_file`` reads one: the editor's read is of text. The text is numbered and cut exactly as
``read_file`` does, and redacted like any result. If the editor fails to answer, the file is read
from disk as always.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output

log = logging.getLogger("cogcli")

#: ``read(absolute_path) -> text``: the editor's ``fs/read_text_file``
EditorRead = Callable[[str], Awaitable[str]]


def with_editor_reads(make_tools: Callable[..., list[Any]], read: EditorRead) -> Callable[..., list[Any]]:
    """``make_tools`` whose ``read_file`` asks the editor first (:func:`editor_read_file`)."""

    def make(settings: Any, **options: Any) -> list[Any]:
        return [editor_read_file(t, settings, read) if t.name == "read_file" else t for t in make_tools(settings, **options)]

    return make


def editor_read_file(original: Any, settings: Any, read: EditorRead, *, max_read_bytes: int = 256_000) -> Any:
    import anyio

    from workspace_tools.workspace.paths import Workspace
    from workspace_tools.files.read import numbered
    from workspace_tools.workspace.secret_files import SecretPolicy

    workspace = Workspace(settings.root)
    policy = SecretPolicy.for_workspace(workspace, settings.secret_globs, settings.allow_secrets)

    async def from_disk(params: Any) -> Any:
        return await anyio.to_thread.run_sync(original.execute, params)

    async def execute(params: Any) -> Any:
        path = workspace.resolve(params.path)  # outside the workspace, a link out, .cog/: refused here
        policy.check(workspace, params.path, path)
        if not path.is_file() or _is_image(workspace, path):
            return await from_disk(params)  # its own error (not found, a folder); an image, which the editor reads as text
        try:
            text = await read(str(path))
        except Exception as exc:
            log.info("the editor did not read %s (%s); reading it from disk", workspace.relative(path), exc)
            return await from_disk(params)
        shown = workspace.relative(path)
        lines = text.splitlines(keepends=True)
        total = len(lines)
        ranged = params.offset is not None or params.limit is not None
        if not ranged and len(text.encode("utf-8", "replace")) > max_read_bytes:
            raise ToolCallError(
                f"{shown} is more than read_file returns at once ({max_read_bytes:,} bytes); read it in parts with offset "
                "and limit (e.g. offset=1, limit=500), or find what you need with search_text",
                code=ErrorCode.FILE_TOO_LARGE,
            )
        start = params.offset or 1
        if total and start > total:
            raise ToolCallError(f"offset {start} is past the end of {shown}, which has {total} lines", code=ErrorCode.INVALID_ARGUMENTS)
        part = lines[start - 1: start - 1 + params.limit] if params.limit else lines[start - 1:]
        body, size = [], 0
        for line in part:
            size += len(line.encode("utf-8", "replace"))
            if size > max_read_bytes:
                break
            body.append(line)
        end = start + len(body) - 1 if body else start - 1
        out = numbered(body, start)
        if out and not out.endswith("\n"):
            out += "\n"
        truncated = end < total
        if truncated:
            out += f"[showing lines {start}-{end} of {total}; read on with offset={end + 1}]\n"
        elif not body and total == 0:
            out = f"[{shown} is empty]\n"
        return tool_output(
            out,
            details={"path": shown, "start_line": start, "end_line": end, "total_lines": total, "truncated": truncated, "source": "editor"},
            presentation={"label": "Read file", "icon": "file", "detail": f"{shown}:{start}-{end}" if ranged else shown},
        )

    return dataclasses.replace(original, execute=execute)


def _is_image(workspace: Any, path: Any) -> bool:
    """Whether the file's first bytes name an image format (opened as read_file opens it, no link followed)."""
    from workspace_tools.files.image import HEAD_BYTES, sniff
    from workspace_tools.files.read import open_for_reading

    try:
        with open_for_reading(workspace, path, str(path)) as f:
            return sniff(f.read(HEAD_BYTES)) is not None
    except (ToolCallError, OSError):
        return False
