"""read_file: a text file (or a range of its lines) with line numbers, like ``cat -n``."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.files.image import HEAD_BYTES, read_image, sniff
from workspace_tools.workspace.paths import Workspace
from workspace_tools.workspace.secret_files import SecretPolicy
from workspace_tools.text.textfile import BOM, NotText, detect_encoding, open_in_workspace, os_errors, read_bytes

_CHUNK = 1 << 20


class ReadFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    path: str = Field(description="File to read, relative to the workspace root.")
    offset: int | None = Field(
        default=None, ge=1, description="First line to read (1-based). Use with limit to read part of a large file."
    )
    limit: int | None = Field(default=None, ge=1, description="How many lines to read from offset.")


def _asked_range(params: ReadFileParams) -> str | None:
    if params.offset is None and params.limit is None:
        return None
    start = params.offset or 1
    return f"{start}-{start + params.limit - 1}" if params.limit else f"{start}-"


def numbered(lines: list[str], first: int) -> str:
    """Lines with their numbers, tab-separated, as ``cat -n`` prints them."""
    return "".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first))


def read_file_tool(
    workspace: Workspace, *, max_read_bytes: int = 256_000, secrets: SecretPolicy | None = None
) -> Tool[ReadFileParams]:
    policy = secrets or SecretPolicy()

    def presentation(params: ReadFileParams) -> dict[str, Any]:
        shown = workspace.display(params.path)
        asked = _asked_range(params)
        return {"label": "Read file", "icon": "file", "detail": f"{shown}:{asked}" if asked else shown}

    @os_errors(workspace)
    def execute(params: ReadFileParams) -> Any:
        path = workspace.resolve(params.path)
        shown = workspace.relative(path)
        policy.check(workspace, params.path, path)
        ranged = params.offset is not None or params.limit is not None
        # opened through the folders' descriptors without following a symlink: a folder swapped
        # for a symlink out after the check above is refused, never read
        with open_for_reading(workspace, path, shown) as f:
            size = os.fstat(f.fileno()).st_size
            if (media_type := sniff(f.read(HEAD_BYTES))) is not None:  # an image by its bytes, whatever its name
                return read_image(f, shown, media_type, size, ranged)
            f.seek(0)
            if not ranged and size > max_read_bytes:
                raise ToolCallError(
                    f"{shown} is {size:,} bytes, more than read_file returns at once "
                    f"({max_read_bytes:,}); read it in parts with offset and limit (e.g. offset=1, limit=500), "
                    "or find what you need with search_text",
                    code=ErrorCode.FILE_TOO_LARGE,
                )
            start = params.offset or 1
            lines, total, cut = _read_lines(f, shown, start, params.limit, max_read_bytes)
        if total and start > total:
            raise ToolCallError(
                f"offset {start} is past the end of {shown}, which has {total} lines", code=ErrorCode.INVALID_ARGUMENTS
            )
        end = start + len(lines) - 1 if lines else start - 1
        truncated = cut or end < total
        text = numbered(lines, start)
        if text and not text.endswith("\n"):
            text += "\n"
        if truncated:
            why = f" (output limit of {max_read_bytes:,} bytes)" if cut else ""
            text += f"[showing lines {start}-{end} of {total}{why}; read on with offset={end + 1}]\n"
        elif not lines:
            text = f"[{shown} is empty]\n" if total == 0 else text
        detail = f"{shown}:{start}-{end}" if ranged else shown
        return tool_output(
            text,
            details={"path": shown, "start_line": start, "end_line": end, "total_lines": total, "truncated": truncated},
            presentation={"label": "Read file", "icon": "file", "detail": detail},
        )

    return tool(
        kind="read",
        name="read_file",
        read_only=True,
        description=(
            "Read a text file of the workspace. Lines come numbered (number, tab, line) like `cat -n`; the numbers "
            "are not part of the file. Large files: pass offset (1-based first line) and limit (line count). "
            "An image (PNG, JPEG, GIF, WebP) comes as the image itself, for you to look at."
        ),
        parameters=ReadFileParams,
        execute=execute,
        presentation=presentation,
        annotations={"readOnly": True},
        recall=_recall,
    )


def _recall(args: Mapping[str, Any]) -> tuple[str, str]:
    """``read_file src/a.py, lines 1–200``: what an old read was, for its stub in a compacted history."""
    what = f"read_file {args.get('path') or ''}".rstrip()
    offset, limit = args.get("offset"), args.get("limit")
    if isinstance(offset, int) or isinstance(limit, int):
        first = offset if isinstance(offset, int) and offset > 0 else 1
        what += f", lines {first}–{first + limit - 1}" if isinstance(limit, int) else f", from line {first}"
    return what, "read it again if needed"


@contextmanager
def open_for_reading(workspace: Workspace, path: Path, shown: str) -> Iterator[BinaryIO]:
    """``path`` (resolved by ``workspace``) open for reading as a binary file, opened as
    :func:`~workspace_tools.text.textfile.open_in_workspace` opens it (no symlink followed); missing,
    a folder or not a regular file (a FIFO, a device) become :class:`ToolCallError`. For any
    tool that reads a workspace file."""
    if path == workspace.root:
        read_bytes(path, shown)  # raises the "is a directory" error
    try:
        fd = open_in_workspace(path, workspace.root)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolCallError(f"{shown} does not exist; list_files shows the files there are", code=ErrorCode.FILE_NOT_FOUND) from None
    except PermissionError:
        raise ToolCallError(f"{shown} cannot be read (permission denied)", code=ErrorCode.TOOL_ERROR) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ToolCallError(
                f"{shown} is a directory, not a file; use list_files to see what is in it", code=ErrorCode.INVALID_ARGUMENTS
            )
        raise ToolCallError(f"{shown} is not a regular file (a pipe, socket or device); it cannot be read", code=ErrorCode.FILE_NOT_TEXT)
    with os.fdopen(fd, "rb") as f:
        yield f


def _read_lines(f: BinaryIO, shown: str, start: int, limit: int | None, max_bytes: int) -> tuple[list[str], int, bool]:
    """Lines ``start`` .. ``start+limit-1`` (1-based), the file's line count, and whether the output
    limit cut the range. Streams the file: only the asked lines are kept in memory."""
    kept: list[bytes] = []
    kept_bytes = 0
    cut = False
    total = 0
    stop = None if limit is None else start + limit - 1
    from cogcli.secrets.redactor import KeyLines  # when a file is read, not when the tool is listed

    key_lines = KeyLines()  # a range may start inside a private key, past its BEGIN line
    try:
        for raw in _bounded_lines(f, max_bytes):
            total += 1
            if b"\x00" in raw:
                raise NotText("it contains NUL bytes")
            is_key = key_lines(raw)
            if total >= start:
                if kept and kept_bytes + len(raw) > max_bytes:
                    cut = True
                else:
                    if len(raw) > max_bytes:  # one line longer than the whole output: its start only
                        raw, cut = _utf8_prefix(raw, max_bytes), True
                    kept.append(_redacted_line(raw) if is_key else raw)
                    kept_bytes += len(raw)
            if cut or (stop is not None and total >= stop):
                total += _count_rest(f)
                break
        encoding = detect_encoding(b"".join(kept))
    except NotText as exc:
        raise ToolCallError(f"{shown} is not a text file ({exc})", code=ErrorCode.FILE_NOT_TEXT) from None
    except PermissionError:
        raise ToolCallError(f"{shown} cannot be read (permission denied)", code=ErrorCode.TOOL_ERROR) from None
    lines = [raw.decode(encoding) for raw in kept]
    if lines and start == 1 and lines[0].startswith(BOM):
        lines[0] = lines[0][1:]
    lines = [line[:-2] + "\n" if line.endswith("\r\n") else line for line in lines]
    return lines, total, cut


def _bounded_lines(f: Any, cap: int) -> Iterator[bytes]:
    """The lines of ``f``; of a line longer than ``cap`` bytes, only its first ``cap + 1`` (the rest
    is read in chunks, checked for NUL bytes and dropped). Memory stays bounded whatever the file
    holds — a 200 MB file without a newline is not one 200 MB line in memory."""
    while raw := f.readline(cap + 1):
        if len(raw) > cap and not raw.endswith(b"\n"):
            while more := f.readline(_CHUNK):
                if b"\x00" in more:
                    raise NotText("it contains NUL bytes")
                if more.endswith(b"\n"):
                    break
        yield raw


def _utf8_prefix(raw: bytes, size: int) -> bytes:
    """At most ``size`` bytes of ``raw``, not ending inside a UTF-8 character."""
    cut = raw[:size]
    back = 0
    while back < 3 and back < len(cut) and 0x80 <= cut[-1 - back] < 0xC0:
        back += 1
    if back < len(cut) and cut[-1 - back] >= 0xC0:  # the lead byte of the last character
        lead = cut[-1 - back]
        if back + 1 < (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4):  # and that character was cut
            return cut[: -1 - back]
    return cut


def _redacted_line(raw: bytes) -> bytes:
    from cogcli.secrets.redactor import REDACTED

    ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else b""
    return REDACTED.encode() + ending


def _count_rest(f: Any) -> int:
    """Lines in what is left of ``f`` (checked for NUL bytes), read in large chunks."""
    count = 0
    last = b"\n"
    while chunk := f.read(_CHUNK):
        if b"\x00" in chunk:
            raise NotText("it contains NUL bytes")
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)
