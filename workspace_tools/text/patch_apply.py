"""Where a patch's hunks go in a file, and the text they make of it: pure, on text in memory.

Each hunk of an :class:`~workspace_tools.text.patch_format.UpdateFile` is found after the one before it
(hunks apply in order). Its ``@@ text`` anchors are looked for first, each the first line after the
position that matches it (Codex's reading: "move to"); the hunk's old lines (context and removed)
are then looked for in the last anchor's block (its line and the lines indented deeper below it),
else anywhere after the position. A line matches at the first of four levels that finds the hunk:

1. exactly;
2. ignoring trailing whitespace;
3. ignoring leading and trailing whitespace;
4. with common Unicode punctuation read as ASCII (dashes, quotes, non-breaking spaces) as well.

Never a guess: a hunk whose old lines match at two places of where it is looked for, at the level
that found it, is refused (:class:`HunkError`) naming the hunk and the lines — the model adds context or
an ``@@`` line. A hunk marked ``*** End of File`` must match at the end of the file. A hunk with
no old lines (only ``+`` lines) goes right after its last anchor, or at the end of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workspace_tools.text.patch_format import Hunk
from workspace_tools.text.tolerant import ASCII_PUNCTUATION

_LEVELS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exactly", lambda s: s),
    ("ignoring trailing whitespace", str.rstrip),
    ("ignoring leading and trailing whitespace", str.strip),
    ("with Unicode punctuation read as ASCII", lambda s: s.strip().translate(ASCII_PUNCTUATION)),
)


class HunkError(ValueError):
    """A hunk that cannot be placed in its file (not found, or found twice: ``ambiguous``); the
    message names it."""

    def __init__(self, message: str, *, ambiguous: bool = False) -> None:
        super().__init__(message)
        self.ambiguous = ambiguous


def apply_hunks(text: str, hunks: Sequence[Hunk], path: str) -> str:
    """``text`` (``\\n`` line endings) with every hunk applied, in order; :class:`HunkError` when
    one cannot be placed. The file's final newline (or its absence) is kept, and so is each context
    line as the file has it (a hunk matched ignoring whitespace changes only its ``-``/``+`` lines)."""
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n") or text == ""
    if ends_with_newline:
        lines.pop()
    edits: list[tuple[int, int, list[str]]] = []  # (start, old length, new lines)
    position = 0
    for number, hunk in enumerate(hunks, 1):
        name = f"hunk {number} of {path} (patch line {hunk.line})"
        anchor_at = None
        for anchor in hunk.anchors:
            found = _first(lines, anchor, position)
            if found is None:
                raise HunkError(f"{name}: its '@@ {anchor}' line is not in {path}{_after(position)}")
            position = anchor_at = found
        ops = list(hunk.lines)
        if all(kind == "+" for kind, _ in ops):
            at = anchor_at + 1 if anchor_at is not None and not hunk.end_of_file else len(lines)
            edits.append((at, 0, [t for _, t in ops]))
            position = at
            continue
        start = _place(lines, [t for k, t in ops if k != "+"], position, anchor_at, hunk.end_of_file, name)
        if start is None and ops[-1] == (" ", "") and len(ops) > 1:  # an empty context line for the final newline
            ops.pop()
            start = _place(lines, [t for k, t in ops if k != "+"], position, anchor_at, hunk.end_of_file, name)
        old = [t for k, t in ops if k != "+"]
        if start is None:
            raise HunkError(f"{name}: its lines were not found in {path}{_after(position)}:\n{_shown(old)}"
                            "\nCopy the context and removed lines exactly as the file has them (read_file shows them).")
        new, at = [], start
        for kind, line in ops:
            if kind == " ":
                new.append(lines[at])  # the file's own line
            elif kind == "+":
                new.append(line)
            at += kind != "+"
        edits.append((start, len(old), new))
        position = start + len(old)
    for start, length, new in reversed(edits):
        lines[start : start + length] = new
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if ends_with_newline else "")


def _place(lines: list[str], old: list[str], position: int, anchor_at: int | None, end_of_file: bool, name: str) -> int | None:
    """Where ``old`` starts: after an anchor, the one match starting in the anchor's block (its
    line and those indented deeper) if there is one; else the one match at or after ``position``."""
    if anchor_at is not None and not end_of_file:
        found = _find(lines, old, range(anchor_at, _block_end(lines, anchor_at)), name)
        if found is not None:
            return found
    last = len(lines) - len(old)
    if last < position:
        return None
    return _find(lines, old, [last] if end_of_file else range(position, last + 1), name)


def _block_end(lines: list[str], at: int) -> int:
    """The first line after ``at`` indented no deeper than it (blank lines skipped)."""
    indent = len(lines[at]) - len(lines[at].lstrip())
    for i in range(at + 1, len(lines)):
        if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent:
            return i
    return len(lines)


def _find(lines: list[str], old: Sequence[str], starts: Sequence[int], name: str) -> int | None:
    """The one start in ``starts`` where ``old`` matches, at the first level with any match."""
    starts = [s for s in starts if s + len(old) <= len(lines)]
    for level, norm in _LEVELS:
        want = [norm(line) for line in old]
        found = [s for s in starts if all(norm(lines[s + i]) == w for i, w in enumerate(want))]
        if len(found) > 1:
            at = ", ".join(str(s + 1) for s in found[:10])
            raise HunkError(
                f"{name}: its lines match {len(found)} places ({level}), starting at lines {at}; add context lines "
                "or an '@@' line (a def or class above it) so they match only the place to change:\n" + _shown(old),
                ambiguous=True,
            )
        if found:
            return found[0]
    return None


def _first(lines: list[str], anchor: str, position: int) -> int | None:
    """The first line at or after ``position`` that matches ``anchor`` (at the first level with any)."""
    for _, norm in _LEVELS[1:]:  # an anchor is written without its indentation
        want = norm(anchor)
        for i in range(position, len(lines)):
            if norm(lines[i]) == want:
                return i
    return None


def _after(position: int) -> str:
    return f" after line {position}" if position else ""


def _shown(lines: Sequence[str], limit: int = 12) -> str:
    shown = [f"  |{line}" for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"  ... and {len(lines) - limit} more lines")
    return "\n".join(shown)
