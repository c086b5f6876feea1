"""A failure's words as every runner's record carries them: no terminal colours, the assertion's
values kept, the place in the test file found.

Runners colour what they print (ts-jest's TypeScript diagnostics, nyc's tables, a test that logs
colours) whatever ``FORCE_COLOR`` says, so everything cog parses and forwards goes through
:func:`plain` first. An assertion's first line often says only what was compared
(``Expected values to be strictly equal:``, ``expect(received).toBe(expected)``): :func:`message`
adds the expected and actual values the runner gave, so the one line a model reads is enough to
fix the test.
"""

from __future__ import annotations

import re
from typing import Any

#: ANSI escape sequences: CSI (colours, cursor moves), OSC (titles, links) and lone escapes
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
#: characters of one value kept in a message
VALUE_CHARS = 300
#: the lines after a message's first that still belong to it (jest's Expected/Received, node's ``2 !== 3``)
_VALUE_LINE = re.compile(r"^\s*(Expected|Received|expected|actual|Actual|[-+] |\S.*(!==|===|!=|==|deepEqual|notDeepEqual) )")


def plain(text: Any) -> Any:
    """``text`` without terminal escape sequences (anything not a string is returned as it is)."""
    if not isinstance(text, str) or ("\x1b" not in text and "\x9b" not in text):
        return text
    return _ANSI.sub("", text)


def _one_line(value: Any) -> str:
    text = " ".join(str(plain(value)).split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def message(first: Any, expected: Any = None, actual: Any = None, text: Any = None) -> str | None:
    """One failure's message: its first line, and the values a model needs to fix the test —
    ``expected``/``actual`` as the runner gave them, else the lines that say them in ``text``
    (jest's ``Expected: 3`` / ``Received: 2``, node's ``2 !== 3``)."""
    head = plain(first) if isinstance(first, str) else None
    head = next((line.strip() for line in (head or "").splitlines() if line.strip()), None)
    if expected is not None or actual is not None:
        values = f"expected {_one_line(expected)}, actual {_one_line(actual)}"
        if head and (_one_line(expected) in head and _one_line(actual) in head):
            return head  # the message says them already (vitest: "expected 2 to be 3")
        return f"{head.rstrip(':')} — {values}" if head else values
    if not isinstance(text, str) or head is None:
        return head
    lines = [line for line in plain(text).splitlines() if line.strip()]
    try:
        start = next(i for i, line in enumerate(lines) if head in line)
    except StopIteration:
        return head
    said = [ln.strip() for ln in lines[start + 1 : start + 8] if _VALUE_LINE.match(ln) and not ln.strip().startswith("at ")]
    said = [s for s in said if s not in head][:3]
    return head if not said else f"{head} — {'; '.join(_one_line(s) for s in said)}"


def js_line(text: Any, file: str | None, root: str | None = None) -> int | None:
    """The line of ``file`` in the first place ``text`` names it (a stack frame ``…/a.test.js:12:5``,
    a TypeScript diagnostic ``test/a.test.ts:5:7``), by its absolute path or, with ``root``, its
    path relative to that folder."""
    if not isinstance(text, str) or not file:
        return None
    clean = plain(text)
    path = file.removeprefix("file://")
    names = [path]
    if root and path.startswith(root.rstrip("/") + "/"):
        names.append(path[len(root.rstrip("/")) + 1 :])
    for i, name in enumerate(names):
        before = "" if i == 0 else r"(?<![\w./-])"  # a relative path is not the end of another one
        found = re.search(before + re.escape(name) + r"(?::|\()(\d+)[:,]\d+", clean)
        if found:
            return int(found.group(1))
    return None
