"""Where an edit's ``old_text`` is in a file: the exact match first, then tolerant matches for the
mistakes models make most, in a fixed order, each accepted only when it finds exactly one place.

The rules, in order (:data:`RULES`):

1. ``exact`` — ``old_text`` as given (every occurrence with ``replace_all``);
2. ``line-endings`` — ``\\r\\n`` / ``\\n`` and a leading BOM in ``old_text`` ignored;
3. ``trailing-whitespace`` — spaces and tabs at the ends of lines ignored (and 2);
4. ``indentation`` — whole lines indented by a constant amount more or less than the file's
   (``new_text`` is shifted by the same amount);
5. ``line-numbers`` — ``read_file``'s line-number prefixes (``"    12\\t"``, consecutive) stripped
   from ``old_text`` (and from ``new_text`` when all its lines have them), then rules 1-4;
6. ``unicode-punctuation`` — curly quotes, dashes and non-breaking spaces read as their ASCII
   forms (and 2, 3).

A tolerant rule that finds several places raises :class:`Ambiguous` (as the exact rule does); no
later rule is tried then. The text matched is replaced as a whole: the rest of the file is never
touched, and the replacement takes the matched text's line endings (``\\r\\n`` in a file that mixes
them). Everything here is on ``str`` in the file's own terms (:class:`~workspace_tools.text.textfile.TextFile`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from workspace_tools.text.textfile import BOM, split_lines

RULES = ("exact", "line-endings", "trailing-whitespace", "indentation", "line-numbers", "unicode-punctuation")

#: punctuation models write in ASCII (or the other way round), each one character for one: quotes,
#: primes, dashes, minus, and the Unicode spaces; edit_file's and apply_patch's matching both read it
ASCII_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)
#: one line as read_file numbers it (``{n:>6}\\t``), or as the no-match feedback shows it (``>{n:>5}\\t``)
_NUMBERED = re.compile(r"[ >]?[ ]*(\d+)(?:\t|(?=\n)|$)")


@dataclass(frozen=True, slots=True)
class Found:
    """Where to replace: ``length`` characters at each of ``positions`` (sorted) by ``new``."""

    rule: str
    positions: list[int]
    length: int
    new: str


class Ambiguous(Exception):
    """``old_text`` (as ``rule`` reads it) is at several places: their start offsets."""

    def __init__(self, rule: str, positions: list[int]) -> None:
        super().__init__(rule)
        self.rule, self.positions = rule, positions


def find_all(text: str, piece: str) -> list[int]:
    """Start offsets of the non-overlapping occurrences of ``piece``, left to right (as str.replace)."""
    positions = []
    at = text.find(piece)
    while at != -1:
        positions.append(at)
        at = text.find(piece, at + len(piece))
    return positions


def locate(text: str, old: str, new: str, *, replace_all: bool = False) -> Found | None:
    """Where ``old`` is in ``text`` by the first rule that finds it (None: by none). Raises
    :class:`Ambiguous` when that rule finds it at several places (the exact rule: unless
    ``replace_all``; a tolerant rule always)."""
    positions = find_all(text, old)
    if len(positions) > 1 and not replace_all:
        raise Ambiguous("exact", positions)
    if positions:
        return Found("exact", positions, len(old), new)
    old_c, new_c = _clean(old), _clean(new)
    for rule, fn in (("line-endings", _endings), ("trailing-whitespace", _trailing)):
        found = _by_lines(text, old_c, new_c, rule, fn)
        if found:
            return found
    found = _indented(text, old_c, new_c)
    if found:
        return found
    found = _numbered(text, old_c, new_c)
    if found:
        return found
    return _by_lines(text, old_c, new_c, "unicode-punctuation", _punctuation)


def _clean(text: str) -> str:
    """Model text in ``\\n`` terms, without a BOM in front."""
    return text.removeprefix(BOM).replace("\r\n", "\n")


def _body(line: str) -> tuple[str, str]:
    """A line's text without its ``\\n`` (nor a ``\\r`` before it) and the ``\\n`` (or "")."""
    if line.endswith("\n"):
        return line[:-1].removesuffix("\r"), "\n"
    return line, ""


def _endings(line: str) -> str:
    body, end = _body(line)
    return body + end


def _trailing(line: str) -> str:
    body, end = _body(line)
    return body.rstrip(" \t") + end


def _punctuation(line: str) -> str:
    body, end = _body(line)
    return body.translate(ASCII_PUNCTUATION).rstrip(" \t") + end


def _fit_endings(new: str, matched: str) -> str:
    """``new`` (``\\n`` endings) with the matched text's endings: ``\\r\\n`` if it has them."""
    return new.replace("\n", "\r\n") if "\r\n" in matched else new


def _occurrences(hay: str, needle: str) -> list[int]:
    """Every start of ``needle`` in ``hay``, overlapping ones too (a tolerant match must be alone)."""
    found, at = [], hay.find(needle)
    while at != -1:
        found.append(at)
        at = hay.find(needle, at + 1)
    return found


def _by_lines(text: str, old: str, new: str, rule: str, fn: Callable[[str], str]) -> Found | None:
    """A rule that reads each line through ``fn`` (which keeps a line a line and only drops
    characters at its end, or maps one character to one), over the file and ``old`` alike."""
    old_lines = split_lines(old)
    needle = "".join(fn(line) for line in old_lines)
    if not needle.strip():
        return None
    # dropped from the end of old's last (unended) line: the match must end where a line does
    cut_end = bool(old_lines) and not old_lines[-1].endswith("\n") and len(fn(old_lines[-1])) < len(old_lines[-1])
    lines = split_lines(text)
    orig_starts, norm_starts, parts = [], [], []
    o = n = 0
    for line in lines:
        orig_starts.append(o)
        norm_starts.append(n)
        piece = fn(line)
        parts.append(piece)
        o += len(line)
        n += len(piece)
    orig_starts.append(o)
    norm_starts.append(n)
    hay = "".join(parts)

    def orig(pos: int) -> int:
        i = bisect_right(norm_starts, pos) - 1
        return orig_starts[i] + pos - norm_starts[i]

    hits = [p for p in _occurrences(hay, needle) if not cut_end or p + len(needle) == len(hay) or hay[p + len(needle)] == "\n"]
    if not hits:
        return None
    if len(hits) > 1:
        raise Ambiguous(rule, [orig(p) for p in hits])
    start, end = orig(hits[0]), orig(hits[0] + len(needle))
    return Found(rule, [start], end - start, _fit_endings(new, text[start:end]))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _shift(file_line: str, old_line: str) -> tuple[str, int] | None:
    """(P, +1) when ``file_line`` is P + ``old_line``, (P, -1) when ``old_line`` is P + ``file_line``."""
    if file_line.lstrip(" \t") != old_line.lstrip(" \t"):
        return None
    fi, oi = _indent(file_line), _indent(old_line)
    if len(fi) > len(oi) and fi.endswith(oi):
        return fi[: len(fi) - len(oi)], 1
    if len(oi) > len(fi) and oi.endswith(fi):
        return oi[: len(oi) - len(fi)], -1
    return None


def _indented(text: str, old: str, new: str) -> Found | None:
    """Whole lines of ``old`` that are the file's lines shifted by one constant indentation
    (trailing whitespace and line endings ignored)."""
    old_lines = [_body(line)[0].rstrip(" \t") for line in split_lines(old)]
    first = next((j for j, line in enumerate(old_lines) if line.strip()), None)
    if first is None:
        return None
    lines = split_lines(text)
    bodies = [_body(line)[0].rstrip(" \t") for line in lines]
    k = len(old_lines)
    hits: list[tuple[int, str, int]] = []
    for i in range(len(lines) - k + 1):
        shift = _shift(bodies[i + first], old_lines[first])
        if shift is None:
            continue
        pad, sign = shift
        if all(_same_shifted(bodies[i + j], old_lines[j], pad, sign) for j in range(k)):
            hits.append((i, pad, sign))
    if not hits:
        return None
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    if len(hits) > 1:
        raise Ambiguous("indentation", [offsets[i] for i, _, _ in hits])
    i, pad, sign = hits[0]
    start = offsets[i]
    end = offsets[i + k]
    if not old.endswith("\n"):  # the last line is replaced up to its ending, which stays
        end -= len(lines[i + k - 1]) - len(_body(lines[i + k - 1])[0])
    moved = "".join(_reindent(line, pad, sign) for line in split_lines(new))
    return Found("indentation", [start], end - start, _fit_endings(moved, text[start:end]))


def _same_shifted(file_line: str, old_line: str, pad: str, sign: int) -> bool:
    if not old_line.strip():
        return not file_line.strip()
    return file_line == pad + old_line if sign > 0 else old_line == pad + file_line


def _reindent(line: str, pad: str, sign: int) -> str:
    if not line.strip():
        return line
    if sign > 0:
        return pad + line
    if line.startswith(pad):
        return line[len(pad) :]
    indent = _indent(line)
    return line[len(indent) :] if pad.startswith(indent) else line


def strip_numbers(text: str, *, consecutive: bool = True) -> str | None:
    """``text`` without read_file's line-number prefixes, when every line has one (numbered one
    after another, with ``consecutive``); None otherwise."""
    lines = split_lines(text)
    if not lines:
        return None
    out, numbers = [], []
    for line in lines:
        m = _NUMBERED.match(line)
        if m is None:
            return None
        numbers.append(int(m[1]))
        out.append(line[m.end() :])
    if consecutive and any(b != a + 1 for a, b in zip(numbers, numbers[1:])):
        return None
    return "".join(out)


def _numbered(text: str, old: str, new: str) -> Found | None:
    """Rule 5: the prefixes stripped, then the exact rule and rules 2-4 (reported as ``line-numbers``)."""
    bare = strip_numbers(old)
    if bare is None or not bare.strip():
        return None
    bare_new = strip_numbers(new, consecutive=False)
    new = new if bare_new is None else bare_new
    try:
        positions = _occurrences(text, bare)
        if len(positions) > 1:
            raise Ambiguous("line-numbers", positions)
        found = Found("exact", positions, len(bare), new) if positions else None
        found = found or _by_lines(text, bare, new, "line-endings", _endings) or _by_lines(text, bare, new, "trailing-whitespace", _trailing)
        found = found or _indented(text, bare, new)
    except Ambiguous as many:
        raise Ambiguous("line-numbers", many.positions) from None
    return None if found is None else Found("line-numbers", found.positions, found.length, found.new)
