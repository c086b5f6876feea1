"""Where a patch's hunks go in a file, and the text they make of it: pure, on text in memory.

Each hunk of an :class:`~workspace_tools.text.patch.UpdateFile` is found after the one before it
(hunks apply in order). Its ``@@ text`` anchors are looked for first, each the first line after the
position that matches it; the hunk's old lines (context and removed) are then looked for from the
last anchor's line on. A line matches at the first of four levels that finds the hunk at all:

1. exactly;
2. ignoring trailing whitespace;
3. ignoring leading and trailing whitespace;
4. with common Unicode punctuation read as ASCII (dashes, quotes, non-breaking spaces) as well.

Never a guess: a hunk whose old lines match at two places after the position, at the level that
found it, is refused (:class:`HunkError`) naming the hunk and the lines — the model adds context or
an ``@@`` line. A hunk marked ``*** End of File`` must match at the end of the file. A hunk with
no old lines (only ``+`` lines) goes right after its last anchor, or at the end of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workspace_tools.text.patch import Hunk

#: common Unicode punctuation a model writes for ASCII (or the file has where the model wrote ASCII)
_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)

_LEVELS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exactly", lambda s: s),
    ("ignoring trailing whitespace", str.rstrip),
    ("ignoring leading and trailing whitespace", str.strip),
    ("with Unicode punctuation read as ASCII", lambda s: s.strip().translate(_PUNCTUATION)),
)


class HunkError(ValueError):
    """A hunk that cannot be placed in its file (not found, or found twice: ``ambiguous``); the
    message names it."""

    def __init__(self, message: str, *, ambiguous: bool = False) -> None:
        super().__init__(message)
        self.ambiguous = ambiguous


def apply_hunks(text: str, hunks: Sequence[Hunk], path: str) -> str:
    """``text`` (``\\n`` line endings) with every hunk applied, in order; :class:`HunkError` when
    one cannot be placed. The file's final newline (or its absence) is kept."""
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines.pop()
    if text == "":
        lines, ends_with_newline = [], True
    edits: list[tuple[int, int, tuple[str, ...]]] = []  # (start, old length, new lines)
    position = 0
    for number, hunk in enumerate(hunks, 1):
        name = f"hunk {number} of {path} (patch line {hunk.line})"
        for anchor in hunk.anchors:
            found = _first(lines, anchor, position)
            if found is None:
                raise HunkError(f"{name}: its '@@ {anchor}' line is not in {path}{_after(position)}")
            position = found
        if not hunk.old:
            at = position + 1 if hunk.anchors and not hunk.end_of_file else len(lines)
            edits.append((at, 0, hunk.new))
            position = at
            continue
        old, new = hunk.old, hunk.new
        start = _find(lines, old, position, hunk.end_of_file, name)
        if start is None and old[-1] == "" and len(old) > 1:  # a trailing empty context line for the final newline
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            start = _find(lines, old, position, hunk.end_of_file, name)
        if start is None:
            raise HunkError(f"{name}: its lines were not found in {path}{_after(position)}:\n{_shown(old)}"
                            "\nCopy the context and removed lines exactly as the file has them (read_file shows them).")
        edits.append((start, len(old), new))
        position = start + len(old)
    for start, length, new in reversed(edits):
        lines[start : start + length] = list(new)
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if ends_with_newline else "")


def _find(lines: list[str], old: Sequence[str], position: int, end_of_file: bool, name: str) -> int | None:
    """Where ``old`` starts at or after ``position``: the one match at the first level with any."""
    last = len(lines) - len(old)
    if last < position:
        return None
    starts = [last] if end_of_file else range(position, last + 1)
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
