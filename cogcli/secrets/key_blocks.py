"""Private key blocks, whole from BEGIN to END (PEM, OpenSSH, PGP, SSH2); a block cut by a line
range loses its visible key lines too. :class:`KeyLines` tells the lines of a key fed one at a time."""

from __future__ import annotations

import re
from collections.abc import Iterable

from cogcli.secrets.formats import REDACTED

_KEY_MARKER = re.compile(r"-{4,5} ?(BEGIN|END) [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
#: a line of a key's body: a long run of base64, a line of nothing else (the short last one;
#: after a read_file line number), an armour or PEM header (``Version:``, ``Comment:``,
#: ``Proc-Type:``), or a blank line (PGP puts one between its headers and its body)
_KEY_LINE = re.compile(
    r"[A-Za-z0-9+/=]{16,}|^[^\S\n]*(?:\d+\t)?[\s\"'`#*/;>|]*[A-Za-z0-9+/=]+[\s\"'`,;+)\\n]*$"
    r"|^\W*(?:\d+\t)?\s*[A-Za-z][A-Za-z0-9-]{1,30}:\s"
    r"|^[^\S\n]*(?:\d+\t)?[\s\"'`#*/;>|]*$"
)
#: an END farther than this from its BEGIN is not the same key
_MAX_KEY_BLOCK = 200_000


class KeyLines:
    """Which lines of a file, fed in order, belong to a private key block: a BEGIN marker line,
    the key lines after it, and its END line. For tools that show some lines of a file (a range,
    search matches), where a key's middle may be shown without its markers.

        is_key = KeyLines()
        shown = ["[REDACTED]" if is_key(line) else line for line in lines]
    """

    def __init__(self) -> None:
        self._inside = False

    def __call__(self, line: str | bytes) -> bool:
        if isinstance(line, bytes):
            if not self._inside and b"PRIVATE KEY" not in line:
                return False
            line = line.decode("latin-1")
        if "PRIVATE KEY" in line and (marker := _KEY_MARKER.search(line)):
            self._inside = marker.group(1) == "BEGIN"
            return True
        if self._inside:
            if _KEY_LINE.search(line.rstrip("\r\n")):
                return True
            self._inside = False
        return False


def redact_keys(text: str) -> tuple[str, int]:
    """``text`` with each private key block replaced by ``[REDACTED]``, and how many there were."""
    spans = list(_key_spans(text))
    if not spans:
        return text, 0
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts += [text[last:start], REDACTED]
        last = end
    parts.append(text[last:])
    return "".join(parts), len(spans)


def _key_spans(text: str) -> Iterable[tuple[int, int]]:
    """(start, end) of each key block, in order, not overlapping. A BEGIN takes everything up to
    its END; without an END (the text was cut) it takes the key lines after it. An END whose
    BEGIN is not in the text takes the key lines before it."""
    markers = list(_KEY_MARKER.finditer(text))
    done = 0  # text before this offset is already taken
    i = 0
    while i < len(markers):
        m = markers[i]
        if m.start() < done:
            i += 1
            continue
        if m.group(1) == "BEGIN":
            close = next((e for e in markers[i + 1 :] if e.group(1) == "END"), None)
            nearer_begin = next((b for b in markers[i + 1 :] if b.group(1) == "BEGIN"), None)
            if close is not None and close.end() - m.start() <= _MAX_KEY_BLOCK and (nearer_begin is None or close.start() < nearer_begin.start()):
                end = close.end()
            else:
                end = _key_lines_after(text, m.end())
            yield m.start(), end
        else:
            start = max(done, _key_lines_before(text, m.start()))
            end = m.end()
            yield start, end
        done = end
        i += 1


def _key_lines_after(text: str, pos: int) -> int:
    """The end of the run of key-body lines that starts on the line after ``pos``."""
    end = pos
    line_end = text.find("\n", pos)
    while line_end != -1:
        nxt = text.find("\n", line_end + 1)
        line = text[line_end + 1 : nxt if nxt != -1 else len(text)]
        if not _KEY_LINE.search(line) or _KEY_MARKER.search(line):
            break
        end = nxt if nxt != -1 else len(text)
        line_end = nxt
    return end


def _key_lines_before(text: str, pos: int) -> int:
    """The start of the run of key-body lines that ends on the line before ``pos``."""
    start = text.rfind("\n", 0, pos) + 1  # the END marker's line
    while start > 0:
        prev = text.rfind("\n", 0, start - 1) + 1
        line = text[prev : start - 1]
        if not _KEY_LINE.search(line) or _KEY_MARKER.search(line):
            break
        start = prev
    return start if start < pos else pos
