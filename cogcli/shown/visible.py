"""Text shown to a person: every control character in it escaped, through one function.

A file, a model's reply, a tool's output, a workspace's ``[tool.cog]`` settings or a path in the
workspace may hold terminal control sequences — ``ESC ] 52`` (OSC 52) writes the clipboard,
``ESC [ 2J`` clears the screen, ``\\r ESC [ 2K`` wipes the line so far (an approval prompt shows
only a command's harmless tail), a bidi override reverses what follows. Everything cog shows a
person — the renderers (text, GitHub, the job summary), the ``cog trust`` prompt and list, the
approval question of ``cog edit``, ``cog: …`` lines on stderr (:func:`say`), ``cog serve``'s error
messages — passes through :func:`visible`, so such a character is printed as its escape
(``\\x1b``, ``\\x0d``, ``\\u202e``) and nothing but the text reaches the terminal. ``keep`` lets the
caller's own sequences through (cog's colours, on a terminal only). The Studio page draws with the
same character class (``studio.js`` ``visible``; a test holds the two equal).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TextIO

#: C0 controls but tab and newline (among them the lone CR, VT, FF and the \x1c–\x1e separators),
#: DEL, C1 controls (U+0085 NEL among them), the bidi marks, embeddings, overrides and isolates,
#: line/paragraph separators (terminals, editors and ``str.splitlines`` act on them), and the
#: invisible format characters that hide text (soft hyphen, zero-width space, word joiner,
#: invisible operators, byte order mark, interlinear annotations)
_CONTROL = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)
#: and, beyond what the Studio page's twin covers (it compares the BMP's characters but the
#: surrogates): lone surrogates (undecodable bytes kept by ``surrogateescape``) and the invisible
#: Unicode tag characters (they can spell a hidden message)
_PLAIN = re.compile(_CONTROL[:-1] + "\ud800-\udfff\U000e0000-\U000e007f]")
#: the same and the newline: for a field shown on one line (a command, a path), where a newline
#: would start a line that looks like cog's own
_ONE_LINE = re.compile(_PLAIN.pattern.replace("\x0b", "\x0a\x0b"))
#: exact mode (what a person approves): every character of :data:`_ONE_LINE`, and a backslash that
#: would otherwise read as the start of an escape (before another backslash, before a character
#: that is escaped, or before ``x``/``u``/``U`` and hex digits) doubled, so the drawing reads back
#: to exactly the text (:func:`unescape`)
_EXACT = re.compile(
    r"\\(?=\\|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|" + _ONE_LINE.pattern + ")|" + _ONE_LINE.pattern
)
_ESCAPED = re.compile(r"\\(\\|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@lru_cache(maxsize=8)
def _pattern(keep: tuple[str, ...]) -> re.Pattern[str]:
    if not keep:
        return _PLAIN
    return re.compile("(" + "|".join(re.escape(k) for k in sorted(keep, key=len, reverse=True)) + ")|" + _PLAIN.pattern)


def visible(text: str, keep: Iterable[str] = (), *, one_line: bool = False, exact: bool = False) -> str:
    """``text`` with each control character written as a visible escape (``\\x1b``); the exact
    sequences in ``keep`` are left as they are. ``one_line``: the newline too (a command, a path
    shown inside a line of cog's own). Idempotent: escapes are printable.

    ``exact`` (a line of a diff or a command a person approves; implies ``one_line``): also a
    backslash that would read as an escape is doubled, so :func:`unescape` of what is drawn gives
    back exactly ``text`` — a file that holds the six characters ``\\x1b`` is never drawn as
    one that holds an escape character, nor the other way round."""
    if exact:
        return _EXACT.sub(lambda m: "\\\\" if m.group() == "\\" else _escape(m), text)
    if one_line:
        return _ONE_LINE.sub(_escape, text)
    pattern = _pattern(tuple(keep))
    if pattern is _PLAIN:
        return _PLAIN.sub(_escape, text)
    return pattern.sub(lambda m: m.group() if m.group(1) else _escape(m), text)


def unescape(shown: str) -> str:
    """The text :func:`visible` with ``exact`` drew as ``shown``."""

    def back(match: re.Match[str]) -> str:
        code = match.group(1)
        return "\\" if code == "\\" else chr(int(code[1:], 16))

    return _ESCAPED.sub(back, shown)


def say(message: str, *, prefix: str = "cog: ", stream: TextIO | None = None) -> None:
    """Write ``cog: message`` and a newline on stderr (or ``stream``), the message made
    :func:`visible`: it may carry a path, a command or a name from the workspace or the model."""
    out = stream if stream is not None else sys.stderr
    clear_live_line()
    out.write(prefix + visible(message) + "\n")
    out.flush()


def clipped(text: str, limit: int) -> str:
    """``text`` in at most about ``limit`` characters, cut at a word's end with "…" (never mid-word
    unless one word is longer than the limit)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + " …"


def error_lines(text: str, *, lines: int = 6, width: int = 300) -> list[str]:
    """A multi-line message as lines to show: each escaped (control characters visible, no
    newline written as ``\\x0a``), clipped at a word, at most ``lines`` of them (the first and the last ones)."""
    parts = [visible(line.rstrip()) for line in text.strip().split("\n") if line.strip()]
    if len(parts) > lines:
        parts = [*parts[:2], f"… {len(parts) - lines + 1} lines …", *parts[-(lines - 3):]]
    return [clipped(part, width) for part in parts]


# --- the terminal's one line drawn in place ---------------------------------------------------

#: what erases the line a renderer redraws in place on the terminal (a running test's count and
#: bar), while one is shown: a message written to the terminal meanwhile (Ctrl-C's notice, a
#: warning) must start on a line of its own, not at the end of that one
_live_line_clearer: Callable[[], None] | None = None


def showing_live_line(clear: Callable[[], None] | None) -> None:
    """A renderer says it shows a line in place (``clear`` erases it), or no longer (None)."""
    global _live_line_clearer
    _live_line_clearer = clear


def clear_live_line() -> None:
    """Erase the in-place line, if one is shown, before a message goes to the terminal; the
    renderer draws it again with its next update."""
    clear = _live_line_clearer
    if clear is not None:
        clear()
