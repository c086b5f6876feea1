"""Text from files, models and tools made safe to print: every control character shown escaped.

A file, a model's reply or a tool's output may hold terminal control sequences — ``ESC ] 52``
(OSC 52) writes the clipboard, ``ESC [ 2J`` clears the screen, a lone ``\\r`` or a bidi override
hides text. Every renderer that writes text (text, GitHub, the job summary) passes it through
:func:`visible`, so such a character is printed as its escape (``\\x1b``, ``\\r``, ``\\u202e``)
and nothing but the text reaches the terminal. ``keep`` lets the caller's own sequences through
(cog's colours, on a terminal only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

#: C0 controls but tab and newline, DEL, C1 controls, the bidi embeddings/overrides/isolates, and
#: line/paragraph separators (terminals and viewers act on them)
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
_PLAIN = re.compile(_CONTROL)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


@lru_cache(maxsize=8)
def _pattern(keep: tuple[str, ...]) -> re.Pattern[str]:
    if not keep:
        return _PLAIN
    return re.compile("(" + "|".join(re.escape(k) for k in sorted(keep, key=len, reverse=True)) + ")|" + _CONTROL)


def visible(text: str, keep: Iterable[str] = ()) -> str:
    """``text`` with each control character written as a visible escape (``\\x1b``); the exact
    sequences in ``keep`` are left as they are. Idempotent: escapes are printable."""
    pattern = _pattern(tuple(keep))
    if pattern is _PLAIN:
        return _PLAIN.sub(_escape, text)
    return pattern.sub(lambda m: m.group() if m.group(1) else _escape(m), text)
