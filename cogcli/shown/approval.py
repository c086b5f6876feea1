"""What a person approves, drawn exactly: the diff, the command or the arguments of a call as the
terminal question, ``cog chat``, ACP permission requests and the Studio page show them.

The rule: what is drawn, read back, is the bytes that will be written or run.

- Lines are split on ``\\n`` only — never with ``str.splitlines``, which also splits on U+2028,
  U+2029, U+0085, a lone CR, VT, FF and \\x1c–\\x1e, so an added line could be drawn as context.
- Every other control, separator, bidi or invisible character is drawn as its escape
  (:func:`cogcli.shown.visible.visible` with ``exact``: a backslash that would read as an escape is
  doubled, so :func:`cogcli.shown.visible.unescape` of the drawing gives back the text).
- A long line is wrapped, never cut: a payload after 150 spaces is on the next line, not behind
  an ``…``. When a question is taller than the terminal, it says how many lines are not shown and
  the person can view them all (``v``) before answering.
- A call with no preview is shown with all its arguments; arguments too long to show
  (:data:`MAX_SHOWN_ARGUMENTS`) end the call unasked instead of being shown in part.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from cogcli.shown.visible import visible

#: characters of a call's arguments (as indented JSON) shown for approval at most: a call with
#: more, and no preview of its own, is refused unasked rather than asked about with a hidden tail
MAX_SHOWN_ARGUMENTS = 32_000
#: how a wrapped line goes on, on the next terminal line
WRAP_INDENT = "  ┆ "
#: one drawn character: an escape a wrap never splits, or any one character
_ATOM = re.compile(r"\\(?:\\|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})|.", re.S)


def columns(text: str) -> int:
    """How many terminal columns ``text`` takes (wide East Asian characters two, combining ones none)."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def exact_lines(text: str) -> list[str]:
    """``text`` split on ``\\n`` only, each line drawn exactly (``visible(…, exact=True)``)."""
    return [visible(line, exact=True) for line in text.split("\n")]


def wrap_columns(line: str, width: int, indent: str = WRAP_INDENT) -> list[str]:
    """``line`` (already escaped) as terminal lines of at most ``width`` columns; the ones after the
    first start with ``indent``. Nothing is cut: the pieces, their indents taken off, join back to
    ``line``. An escape (``\\u2028``) is never split across two lines."""
    width = max(width, columns(indent) + 8)
    out: list[str] = []
    current, used = "", 0
    for m in _ATOM.finditer(line):
        atom = m.group()
        w = columns(atom)
        if used + w > width and current.strip(" "):
            out.append(current)
            current, used = indent, columns(indent)
        current += atom
        used += w
    out.append(current)
    return out


def unwrap(lines: list[str], indent: str = WRAP_INDENT) -> list[str]:
    """The logical lines :func:`wrap_columns` made ``lines`` of (its inverse, for tests and readers)."""
    out: list[str] = []
    for line in lines:
        if out and line.startswith(indent):
            out[-1] += line[len(indent) :]
        else:
            out.append(line)
    return out


def arguments_text(arguments: Any) -> str:
    """A call's arguments as people read them: indented JSON, every string whole."""
    return json.dumps(arguments, ensure_ascii=False, indent=2, sort_keys=False, default=str)


def arguments_too_long(arguments: Any) -> str | None:
    """Why a call with no preview cannot be shown for approval (its arguments are longer than
    :data:`MAX_SHOWN_ARGUMENTS`), or None."""
    size = len(arguments_text(arguments))
    if size <= MAX_SHOWN_ARGUMENTS:
        return None
    return (
        f"its arguments are {size:,} characters long, more than the {MAX_SHOWN_ARGUMENTS:,} a person can be shown "
        "before approving it, and cog asks only about what it can show whole: nothing ran. Make the call with "
        "shorter arguments (split the work into smaller calls)"
    )
