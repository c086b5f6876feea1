"""Line patterns on RE2: regular expressions whose search time is linear in the text.

Python's ``re`` backtracks, so a pattern such as ``(a+)+$`` on a line of 45 ``a``s and a ``b``
runs for longer than anyone waits, holding a worker thread no timeout can stop. RE2 (the
``google-re2`` wheel) never backtracks: every search is linear in the text. It takes the Python
syntax people write (classes, ``\\d``/``\\w``/``\\s``, ``(?P<name>…)``, ``(?i)``, lazy quantifiers,
``\\b``) but not lookaround or backreferences; :func:`compile_pattern` says so in the error.

A :class:`LinePattern` matches line by line (``^``/``$`` are the ends of a line, a match never
spans lines) and is fast on whole files: one RE2 call over a file's bytes finds out whether any
line can match; only then are the lines around each hit checked on their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError

#: Python-only syntax RE2 refuses, and how to name it to the model
_UNSUPPORTED = (
    (re.compile(r"\(\?<?[=!]"), "lookahead/lookbehind such as (?=…), (?!…), (?<=…) or (?<!…)"),
    (re.compile(r"\\[1-9]|\(\?P=\w+\)"), "backreferences such as \\1 or (?P=name)"),
    (re.compile(r"\(\?>|[*+?}][+]"), "atomic groups or possessive quantifiers such as (?>…) or a++"),
    (re.compile(r"\(\?\("), "conditional groups such as (?(1)…)"),
)


class LinePattern:
    """A pattern compiled for RE2 twice: for one line, and with ``(?m)`` for a whole file."""

    def __init__(self, source: str, line: Any, anywhere: Any) -> None:
        self.source = source
        self._line = _spans(line)
        self._anywhere = _spans(anywhere)

    def search_line(self, line: bytes) -> bool:
        return self._line(line, 0) is not None

    def anywhere(self, text: bytes) -> bool:
        """Whether some line of ``text`` (UTF-8 bytes, lines ending in ``\\n``) may match: never
        False when one does (a match within a line is a match in the whole text, with ``^``/``$``
        at line ends), sometimes True when none does (a match across lines)."""
        return self._anywhere(text, 0) is not None

    def matching_lines(self, text: bytes) -> Iterator[tuple[int, str]]:
        """(line number, line) of each line of ``text`` that matches, in order."""
        pos, number, end = 0, 1, len(text)
        while pos < end:
            hit = self._anywhere(text, pos)
            if hit is None:
                return
            start = text.rfind(b"\n", 0, hit) + 1 if hit > pos else pos
            if start >= end:
                return  # the empty end after a last newline is not a line
            number += text.count(b"\n", pos, start)
            stop = text.find(b"\n", start)
            stop = end if stop == -1 else stop
            line = text[start:stop]
            if self._line(line, 0) is not None:
                yield number, line.decode("utf-8", "replace")
            pos, number = stop + 1, number + 1


def _spans(compiled: Any) -> Callable[[bytes, int], int | None]:
    """``search(text, pos)`` giving the start of the first match or None: straight into RE2's
    ``Match`` when the wheel exposes it (no generator, no match object: a third of the time per
    file), else through the public ``search``."""
    raw = getattr(compiled, "_regexp", None)
    import re2

    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if raw is not None and anchor is not None and hasattr(raw, "Match"):
        match = raw.Match

        def search(text: bytes, pos: int) -> int | None:
            start = match(anchor, text, pos, len(text))[0][0]
            return None if start == -1 else start

        return search

    def slow(text: bytes, pos: int) -> int | None:
        found = compiled.search(text, pos)
        return None if found is None else found.start()

    return slow


def required_literal(pattern: str, *, min_length: int = 3) -> tuple[str, bool] | None:
    """The longest ASCII text every match of ``pattern`` contains (from the pattern's top-level
    run of plain characters), and whether it is matched ignoring case; None when there is no such
    run of ``min_length`` characters. What a fast prefilter (``git grep -F``) can look for."""
    try:
        from re import _parser as parser  # type: ignore[attr-defined]

        parsed = parser.parse(pattern)
        literal_op = parser.LITERAL
    except Exception:  # a private module: without it, no prefilter
        return None
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE | re.MULTILINE | re.DOTALL) & ~re.IGNORECASE:
        return None
    runs: list[str] = []
    current: list[str] = []
    for op, arg in parsed.data:
        if op is literal_op and 32 <= arg < 127:
            current.append(chr(arg))
        else:
            runs.append("".join(current))
            current = []
    runs.append("".join(current))
    best = max(runs, key=len)
    if len(best) < min_length:
        return None
    return best, bool(parsed.state.flags & re.IGNORECASE)


def compile_pattern(pattern: str) -> LinePattern:
    """``pattern`` for RE2; an invalid pattern, or one using syntax RE2 lacks, is an
    INVALID_ARGUMENTS error that says what to change."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolCallError(
            f"invalid regular expression {pattern!r}: {exc}; escape special characters such as ( [ . * "
            "with a backslash to match them literally",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from None
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    translated = _translate(pattern).encode("utf-8")
    try:
        line = re2.compile(translated, options)
        anywhere = re2.compile(b"(?m)" + _translate(pattern, per_line=True).encode("utf-8"), options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        what = next((name for rule, name in _UNSUPPORTED if rule.search(pattern)), None)
        what = what or f"this construct ({detail})"
        raise ToolCallError(
            f"search_text cannot run {pattern!r}: it uses {what}, which the search engine (RE2, linear-time, "
            "so that no pattern can hang) does not support. Rewrite the pattern without it: search for the "
            "plainer part and read the lines around the matches, or use two searches.",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from None
    return LinePattern(pattern, line, anywhere)


def _translate(pattern: str, *, per_line: bool = False) -> str:
    r"""Python spellings RE2 reads differently. ``\Z`` (end of text) is RE2's ``\z``; ``\w`` and
    ``\d`` match any script's letters and digits in Python, only ASCII in RE2, so they become
    ``[\p{L}\p{N}_]`` and ``\p{Nd}`` (``\b``, ``\W`` and ``\D`` stay ASCII: RE2 has no Unicode word
    boundary). With ``per_line`` (a whole file searched with ``(?m)``), the ends of the text
    ``\A``, ``\Z`` and ``\z`` become the ends of any line, ``^`` and ``$``."""
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if per_line and nxt in "AZz" and not in_class:
                out.append("^" if nxt == "A" else "$")
            elif nxt == "Z" and not in_class:
                out.append("\\z")
            elif nxt == "w":
                out.append("\\p{L}\\p{N}_" if in_class else "[\\p{L}\\p{N}_]")
            elif nxt == "d":
                out.append("\\p{Nd}")
            else:
                out.append(c + nxt)
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            i += 1
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":  # a ] first in a class is a literal
                out.append("\\]")
                i += 1
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)
