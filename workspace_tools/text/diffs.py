"""Unified diffs exactly as ``git diff`` writes them, computed only around what changed.

A diff is built from *blocks*: small spans of whole lines, old and new, each known to hold
every change in it. Only the lines of a block are matched (:mod:`workspace_tools.text.myers`, with a
budget of steps: past it the block is shown as one replace), so the cost of a diff grows with the
size of the change plus linear scans, bounded whatever the lines are — never with the square of
the file. An edit knows its replacement positions and makes one block per
neighbourhood; a whole-file rewrite trims the common head and tail to one block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from workspace_tools.text.myers import myers_opcodes
from workspace_tools.text.textfile import split_lines

CONTEXT = 3
_NO_NEWLINE = "\\ No newline at end of file\n"


@dataclass(frozen=True, slots=True)
class Block:
    """Lines ``old`` (from 0-based line ``old_start``) became ``new`` (from ``new_start``).

    Every change lies in the core: ``old[lo:len(old) - after]`` / ``new[lo:len(new) - after]``;
    the ``lo`` lines before and ``after`` lines after it are unchanged context (up to
    :data:`CONTEXT` of each, fewer only at the file's start or end).
    """

    old_start: int
    new_start: int
    old: list[str]
    new: list[str]
    lo: int = 0
    after: int = 0

    def opcodes(self) -> list[tuple[str, int, int, int, int]]:
        lo, old_hi, new_hi = self.lo, len(self.old) - self.after, len(self.new) - self.after
        ops: list[tuple[str, int, int, int, int]] = []
        if lo:
            ops.append(("equal", 0, lo, 0, lo))
        for tag, i1, i2, j1, j2 in _core_opcodes(self.old[lo:old_hi], self.new[lo:new_hi]):
            ops.append((tag, lo + i1, lo + i2, lo + j1, lo + j2))
        if self.after:
            ops.append(("equal", old_hi, len(self.old), new_hi, len(self.new)))
        merged: list[tuple[str, int, int, int, int]] = []
        for op in ops:  # the pads and the core's own equal ends make one equal run
            if merged and op[0] == "equal" == merged[-1][0]:
                merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
            else:
                merged.append(op)
        return merged


def _span_range(start: int, length: int) -> str:
    # the unified format: "start,length", ",1" left out, an empty span named by the line before it
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _core_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    matched = myers_opcodes(a, b)
    if matched is not None:
        return matched
    # too many differences to match line by line in bounded time: trim equal ends, replace the middle
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    ops = [("replace", head, len(a) - tail, head, len(b) - tail)]
    if head:
        ops.insert(0, ("equal", 0, head, 0, head))
    if tail:
        ops.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return ops


def _groups(ops: list[tuple[str, int, int, int, int]], n: int) -> list[list[tuple[str, int, int, int, int]]]:
    """Opcodes cut into hunks the way diff does: ``n`` lines of context around changes, and a
    run of more than ``2n`` equal lines between two changes starts a new hunk."""
    if not any(tag != "equal" for tag, *_ in ops):
        return []
    ops = list(ops)
    tag, i1, i2, j1, j2 = ops[0]
    if tag == "equal":
        ops[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    tag, i1, i2, j1, j2 = ops[-1]
    if tag == "equal":
        ops[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    groups: list[list[tuple[str, int, int, int, int]]] = [[]]
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i2 - i1 > 2 * n and groups[-1]:
            groups[-1].append((tag, i1, i1 + n, j1, j1 + n))
            groups.append([])
            i1, j1 = i2 - n, j2 - n
        groups[-1].append((tag, i1, i2, j1, j2))
    if all(tag == "equal" for tag, *_ in groups[-1]):
        groups.pop()
    return groups


def format_hunks(blocks: Iterable[Block], *, context: int = CONTEXT, disk_line: Callable[[str], str] | None = None) -> str:
    """The ``@@`` hunks of a diff (no file header). ``disk_line`` maps a line to its on-disk form."""
    out: list[str] = []

    def emit(tag: str, line: str) -> None:
        if disk_line is not None:
            line = disk_line(line)
        out.append(tag + line if line.endswith("\n") else tag + line + "\n" + _NO_NEWLINE)

    for block in blocks:
        for group in _groups(block.opcodes(), context):
            i1, i2 = group[0][1], group[-1][2]
            j1, j2 = group[0][3], group[-1][4]
            out.append(
                f"@@ -{_span_range(block.old_start + i1, i2 - i1)} +{_span_range(block.new_start + j1, j2 - j1)} @@\n"
            )
            for tag, a1, a2, b1, b2 in group:
                if tag == "equal":
                    for line in block.old[a1:a2]:
                        emit(" ", line)
                    continue
                for line in block.old[a1:a2]:
                    emit("-", line)
                for line in block.new[b1:b2]:
                    emit("+", line)
    return "".join(out)


def quote_path(path: str) -> str:
    """A path the way git writes it in a diff header: C-quoted when it has unusual bytes."""
    raw = path.encode("utf-8", "surrogateescape")
    if not any(b < 0x20 or b >= 0x7F or b in (0x22, 0x5C) for b in raw):
        return path
    escapes = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}
    body = "".join(escapes.get(b) or (chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}") for b in raw)
    return f'"{body}"'


def git_mode(mode: int) -> str:
    return "100755" if mode & 0o111 else "100644"


def file_header(path: str, *, new_mode: int | None = None, empty: bool = False) -> str:
    """``diff --git`` header; ``new_mode`` (permission bits) marks a created file, ``empty`` one
    with no content (git writes no ``---``/``+++`` lines for it)."""
    a, b = quote_path(f"a/{path}"), quote_path(f"b/{path}")
    if new_mode is not None:
        head = f"diff --git {a} {b}\nnew file mode {git_mode(new_mode)}\n"
        return head if empty else f"{head}--- /dev/null\n+++ {b}\n"
    return f"diff --git {a} {b}\n--- {a}\n+++ {b}\n"


def edit_blocks(old_text: str, positions: Sequence[int], old_len: int, new_piece: str, *, context: int = CONTEXT) -> list[Block]:
    """Blocks for replacing ``old_text[p:p+old_len]`` by ``new_piece`` at each of ``positions``
    (sorted, non-overlapping, ``old_len`` > 0). Cost: one pass over the text plus the changed lines."""
    # cores: the whole lines holding each match, merged when fewer than 2 × context lines apart
    cores: list[list[int]] = []  # [start offset, end offset, start line, end line, *positions]
    cursor, line = 0, 0
    for p in positions:
        start = old_text.rfind("\n", 0, p) + 1
        end = _forward_lines(old_text, p + old_len, 0)
        line += old_text.count("\n", cursor, start)
        cursor = start
        end_line = line + _line_count(old_text, start, end)
        if cores and line - cores[-1][3] <= 2 * context:
            cores[-1][1] = max(cores[-1][1], end)
            cores[-1][3] = max(cores[-1][3], end_line)
            cores[-1].append(p)
        else:
            cores.append([start, end, line, end_line, p])
    blocks: list[Block] = []
    shift = 0  # new line number minus old line number, after the cores so far
    for start, end, start_line, end_line, *ps in cores:
        pieces: list[str] = []
        at = start
        for p in ps:
            pieces.append(old_text[at:p])
            pieces.append(new_piece)
            at = p + old_len
        pieces.append(old_text[at:end])
        old_core = split_lines(old_text[start:end])
        new_core = split_lines("".join(pieces))
        blocks.append(_padded(old_text, start, end, start_line, start_line + shift, old_core, new_core, context))
        shift += len(new_core) - len(old_core)
    return blocks


def text_blocks(old_text: str, new_text: str, *, context: int = CONTEXT) -> list[Block]:
    """One block covering where two whole texts differ (their common head and tail trimmed)."""
    if old_text == new_text:
        return []
    start = old_text.rfind("\n", 0, _common_prefix(old_text, new_text)) + 1  # a line start in both
    tail = _common_suffix(old_text, new_text, limit=min(len(old_text), len(new_text)) - start)
    old_end = _forward_lines(old_text, len(old_text) - tail, 0)  # a line end in both: the tail is common
    new_end = len(new_text) - (len(old_text) - old_end)
    line = old_text.count("\n", 0, start)
    old_core = split_lines(old_text[start:old_end])
    new_core = split_lines(new_text[start:new_end])
    return [_padded(old_text, start, old_end, line, line, old_core, new_core, context)]


def _padded(text: str, start: int, end: int, old_line: int, new_line: int, old_core: list[str], new_core: list[str], context: int) -> Block:
    before = split_lines(text[_back_lines(text, start, context) : start])
    after = split_lines(text[end : _forward_lines(text, end, context - 1)])
    return Block(old_line - len(before), new_line - len(before), before + old_core + after, before + new_core + after, len(before), len(after))


def _line_count(text: str, start: int, end: int) -> int:
    if end <= start:
        return 0
    return text.count("\n", start, end) + (0 if text[end - 1] == "\n" else 1)


def _back_lines(text: str, pos: int, n: int) -> int:
    """Offset of the start of the line holding ``pos``, moved back ``n`` more lines."""
    start = text.rfind("\n", 0, pos) + 1
    for _ in range(n):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _forward_lines(text: str, pos: int, n: int) -> int:
    """Offset just past the line holding ``pos`` (the line starting there if ``pos`` is a line
    start), moved on ``n`` more lines."""
    end = pos
    for _ in range(n + 1):
        if end >= len(text):
            return len(text)
        nl = text.find("\n", end)
        end = len(text) if nl < 0 else nl + 1
    return end


_CHUNK = 1 << 16


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, in linear time (chunk compares, then a binary search)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i : i + _CHUNK] == b[i : i + _CHUNK]:
        i += _CHUNK
    if i >= n:
        return n
    lo, hi = i, min(i + _CHUNK, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i:mid] == b[i:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, *, limit: int) -> int:
    """Length of the common suffix, at most ``limit``."""
    la, lb = len(a), len(b)
    i = 0
    while i < limit and a[max(la - i - _CHUNK, la - limit) : la - i] == b[max(lb - i - _CHUNK, lb - limit) : lb - i]:
        i += _CHUNK
    if i >= limit:
        return limit
    lo, hi = i, min(i + _CHUNK, limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - i] == b[lb - mid : lb - i]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def line_counts(old_text: str | None, new_text: str | None) -> tuple[int, int]:
    """(lines added, lines removed) from ``old_text`` to ``new_text`` (None: no file), counted as
    their unified diff counts them (:func:`text_blocks`): what a tool write's diff carries."""
    if old_text is None or new_text is None:
        text = new_text if old_text is None else old_text
        lines = len(split_lines(text or ""))
        return (lines, 0) if old_text is None else (0, lines)
    added = removed = 0
    for block in text_blocks(old_text, new_text, context=0):
        for tag, i1, i2, j1, j2 in block.opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
    return added, removed
