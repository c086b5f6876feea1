"""Codex's patch format, parsed: the text of one ``apply_patch`` call as typed operations.

::

    *** Begin Patch
    *** Add File: path/new.py
    +line
    *** Update File: path/old.py
    *** Move to: path/renamed.py        (optional)
    @@ optional context line (e.g. a def)
     context line
    -removed line
    +added line
    *** End of File                      (optional: the hunk ends at the end of the file)
    *** Delete File: path/gone.py
    *** End Patch

Pure: no file is read here. :func:`parse_patch` returns :class:`AddFile`, :class:`UpdateFile` and
:class:`DeleteFile` operations in patch order, or raises :class:`PatchError` naming the patch line
and what is wrong with it. Markers may be padded with whitespace (Codex accepts them so); ``\\r\\n``
in the patch is read as ``\\n``; an empty line inside a hunk is an empty context line (as Codex
reads it). Where the hunks go in a file is :mod:`workspace_tools.text.patch_apply`'s part.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
UPDATE = "*** Update File: "
DELETE = "*** Delete File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
_FILE_MARKERS = (ADD, UPDATE, DELETE)


class PatchError(ValueError):
    """The patch text is not a valid patch; ``line`` is the 1-based patch line at fault (0: none)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(f"patch line {line}: {message}" if line else message)
        self.line = line


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` section of an update: its ``lines`` (``(" ", text)`` context, ``("-", text)``
    removed, ``("+", text)`` added) placed after the ``anchors`` (the ``@@ text`` lines), in order."""

    line: int  # the patch line it starts on
    anchors: tuple[str, ...]
    lines: tuple[tuple[str, str], ...]
    end_of_file: bool = False

    @property
    def old(self) -> tuple[str, ...]:
        """The lines the hunk expects in the file: context and removed."""
        return tuple(text for kind, text in self.lines if kind != "+")

    @property
    def new(self) -> tuple[str, ...]:
        """The lines it leaves: context and added."""
        return tuple(text for kind, text in self.lines if kind != "-")


@dataclass(frozen=True)
class AddFile:
    """A patch's new file."""
    path: str
    line: int
    content: str  # every ``+`` line, each ended with ``\n``


@dataclass(frozen=True)
class DeleteFile:
    """A patch's deleted file."""
    path: str
    line: int


@dataclass(frozen=True)
class UpdateFile:
    """A patch's changed file, with its hunks."""
    path: str
    line: int
    hunks: tuple[Hunk, ...]
    move_to: str | None = None


Operation = AddFile | UpdateFile | DeleteFile


@dataclass
class _Reader:
    """Where a patch is being read."""
    lines: list[str]
    at: int = 0  # index into lines
    first: int = 1  # the patch line number of lines[0]
    ops: list[Operation] = field(default_factory=list)

    def number(self, index: int | None = None) -> int:
        return (self.at if index is None else index) + self.first

    def peek(self) -> str | None:
        return self.lines[self.at] if self.at < len(self.lines) else None


def parse_patch(text: str) -> list[Operation]:
    """The operations of ``text``, in order; :class:`PatchError` when it is not a valid patch."""
    lines = text.replace("\r\n", "\n").split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    stop = len(lines)
    while stop > start and not lines[stop - 1].strip():
        stop -= 1
    if start == stop:
        raise PatchError(f"the patch is empty; it starts with '{BEGIN}' and ends with '{END}'")
    if lines[start].strip() != BEGIN:
        raise PatchError(f"the first line must be '{BEGIN}', not {_quoted(lines[start])}", start + 1)
    if lines[stop - 1].strip() != END:
        raise PatchError(f"the last line must be '{END}', not {_quoted(lines[stop - 1])}", stop)
    reader = _Reader(lines[start + 1 : stop - 1], first=start + 2)
    while (line := reader.peek()) is not None:
        marker = line.strip()
        if not marker:  # blank lines between operations
            reader.at += 1
        elif marker.startswith(ADD.strip()):
            reader.ops.append(_add(reader, _path(reader, marker, ADD)))
        elif marker.startswith(DELETE.strip()):
            reader.ops.append(DeleteFile(_path(reader, marker, DELETE), reader.number()))
            reader.at += 1
        elif marker.startswith(UPDATE.strip()):
            reader.ops.append(_update(reader, _path(reader, marker, UPDATE)))
        elif marker == END:
            raise PatchError(f"'{END}' before the last line; one patch has one end", reader.number())
        else:
            raise PatchError(
                f"{_quoted(line)} is not the start of a file operation: expected '{ADD.strip()} <path>', "
                f"'{UPDATE.strip()} <path>' or '{DELETE.strip()} <path>'",
                reader.number(),
            )
    if not reader.ops:
        raise PatchError(f"the patch has no file operation between '{BEGIN}' and '{END}'", start + 1)
    return reader.ops


#: the operations of the Responses API's native apply_patch tool, and the marker each one is
OPERATIONS = {"create_file": ADD, "update_file": UPDATE, "delete_file": DELETE}


def operation_patch(operation: object) -> str:
    """The patch of one operation of the Responses API's native ``apply_patch`` tool
    (``{"type": "create_file" | "update_file" | "delete_file", "path", "diff"}``, the diff in the
    same V4A format as a patch's file section, without its header): the file's marker, then the
    diff, between ``*** Begin Patch`` and ``*** End Patch`` — parsed as any patch is.
    :class:`PatchError` names what is wrong with an operation that is not one."""
    if not isinstance(operation, dict):
        raise PatchError("operation must be an object with type, path and diff")
    kind, path, diff = operation.get("type"), operation.get("path"), operation.get("diff")
    if kind not in OPERATIONS:
        raise PatchError(f"operation type {kind!r} is none of {', '.join(OPERATIONS)}")
    if not isinstance(path, str) or not path.strip() or "\n" in path or "\r" in path:
        raise PatchError(f"the {kind} operation names no file: give its path, one line relative to the workspace")
    if diff is not None and not isinstance(diff, str):
        raise PatchError(f"the {kind} operation's diff must be text")
    body = (diff or "").replace("\r\n", "\n")
    if kind == "delete_file":
        body = ""
    elif not body.strip():
        what = "the lines of the new file, each starting with '+'" if kind == "create_file" else "its hunks: '@@' sections with ' ', '-' and '+' lines"
        raise PatchError(f"the {kind} operation on {path} has no diff: give {what}")
    else:  # one line end, no blank line after the last: the END marker follows it
        body = body.rstrip("\n") + "\n"
    return f"{BEGIN}\n{OPERATIONS[kind]}{path}\n{body}{END}\n"


def _path(reader: _Reader, marker: str, prefix: str) -> str:
    path = marker[len(prefix.strip()) :].strip()
    if not marker.startswith(prefix.strip() + " ") and marker != prefix.strip() or not path:
        raise PatchError(f"{_quoted(marker)} names no file: write '{prefix}<path>'", reader.number())
    return path


def _add(reader: _Reader, path: str) -> AddFile:
    line = reader.number()
    reader.at += 1
    content: list[str] = []
    while (text := reader.peek()) is not None and not _is_marker(text):
        if not text.startswith("+"):
            raise PatchError(
                f"{_quoted(text)} in the added file {path}: every line of an added file starts with '+' "
                "(an empty line is a lone '+')",
                reader.number(),
            )
        content.append(text[1:] + "\n")
        reader.at += 1
    if not content:
        raise PatchError(
            f"'{ADD}{path}' adds no line: give the file's lines, each starting with '+' "
            "(an empty file is made with write_file)",
            line,
        )
    return AddFile(path, line, "".join(content))


def _update(reader: _Reader, path: str) -> UpdateFile:
    line = reader.number()
    reader.at += 1
    move_to = None
    if (text := reader.peek()) is not None and not text.startswith(" ") and text.strip().startswith(MOVE.strip()):
        move_to = _path(reader, text.strip(), MOVE)
        reader.at += 1
    hunks: list[Hunk] = []
    while (text := reader.peek()) is not None and not _is_marker(text):
        hunks.append(_hunk(reader, path, first=not hunks))
    if not hunks and move_to is None:
        raise PatchError(f"'{UPDATE}{path}' has no hunk: give '@@' sections with ' ', '-' and '+' lines", line)
    return UpdateFile(path, line, tuple(hunks), move_to)


def _hunk(reader: _Reader, path: str, *, first: bool) -> Hunk:
    start = reader.number()
    anchors: list[str] = []
    while (text := reader.peek()) is not None and _is_anchor(text):
        anchor = text.strip()[2:].strip()
        if anchor:
            anchors.append(anchor)
        reader.at += 1
    if start == reader.number() and not first:
        raise PatchError(f"{_quoted(reader.peek() or '')} in {path}: a hunk after the first starts with '@@'", start)
    lines: list[tuple[str, str]] = []
    end_of_file = False
    while (text := reader.peek()) is not None and not _is_marker(text):
        if text.strip() == END_OF_FILE:
            end_of_file = True
            reader.at += 1
            break
        if _is_anchor(text) and lines:
            break  # the next hunk
        if text == "":  # an empty line: an empty context line (a model often drops the space)
            lines.append((" ", ""))
        elif text[0] in " -+":
            lines.append((text[0], text[1:]))
        else:
            raise PatchError(
                f"{_quoted(text)} in {path}: every line of a hunk starts with ' ' (context), '-' (removed) or '+' (added)",
                reader.number(),
            )
        reader.at += 1
    if not lines:
        raise PatchError(f"an empty hunk in {path}: give its ' ', '-' and '+' lines", start)
    if all(kind == " " for kind, _ in lines):
        raise PatchError(f"a hunk of {path} changes nothing: it has no '-' or '+' line", start)
    return Hunk(start, tuple(anchors), tuple(lines), end_of_file)


def _is_marker(line: str) -> bool:
    """A file operation's first line, or the end: padding accepted, except a leading space (inside
    a hunk that is a context line's prefix)."""
    if line.startswith(" "):
        return False
    marker = line.strip()
    return marker == END or any(marker.startswith(m.strip()) for m in _FILE_MARKERS)


def _is_anchor(line: str) -> bool:
    """An ``@@`` line (padding accepted, except a leading space: that is a context line)."""
    return not line.startswith(" ") and line.strip().startswith("@@")


def _quoted(line: str) -> str:
    shown = line if len(line) <= 80 else line[:77] + "..."
    return repr(shown)
