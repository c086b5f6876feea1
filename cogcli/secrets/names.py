"""A name the model wrote — a tool's name in its call — as every reader may see it: redacted like
its text, escaped and bounded.

A tool name is the one thing the model writes that no tool checks before it is shown: a call to
``tool_ghp_…`` ends ``TOOL_NOT_FOUND``, but its name reaches the JSON lines, the thread, the
OpenTelemetry span and every export. :func:`shown_name` is applied where the name enters
(:mod:`cogcli.loop.turn`), so every reader gets the same name:

- credentials redacted as in any text (:func:`cogcli.secrets.redactor.redact`), also one glued to
  the name's words by ``_``, ``-``, ``.``, ``/`` or ``:`` (a token format matches only at a word
  start, and ``_`` is a word character: ``tool_ghp_…`` is read again from each separator on);
- every character but printable ASCII written as an escape (``\\x1b``, ``\\u202e``), so a name is
  one plain line wherever it goes;
- at most :data:`MAX_SHOWN` characters, cut with ``…``; a name longer than :data:`MAX_NAME` is no
  tool's name and is replaced as a whole by ``<a name of N characters>`` (nothing of it shown).

A tool's real name (letters, digits, ``_``, ``-``, ``.``: what providers and MCP allow) comes back
as it is, so the call still finds its tool.
"""

from __future__ import annotations

import re

from cogcli.secrets.environment import env_forms
from cogcli.secrets.redactor import redact

#: characters shown of a name at most
MAX_SHOWN = 128
#: a longer name is replaced whole
MAX_NAME = 1024
#: where a credential glued to the name's words may start
_SEPARATOR = re.compile(r"[_\-./:]")
#: printable ASCII: kept as it is
_PLAIN = re.compile(r"[!-~]*")


def shown_name(name: str, forms: tuple[str, ...] | None = None) -> str:
    """``name`` redacted, escaped and bounded (see the module's text); a clean name unchanged."""
    if len(name) > MAX_NAME:
        return f"<a name of {len(name)} characters>"
    if forms is None:
        forms = env_forms()
    out, _ = redact(name, forms=forms)
    at = 0
    while (found := _SEPARATOR.search(out, at)) is not None:
        start = found.end()
        tail, count = redact(out[start:], forms=forms)
        if count:
            out = out[:start] + tail
        at = start
    if not _PLAIN.fullmatch(out):
        out = "".join(c if "!" <= c <= "~" else _escape(c) for c in out)
    if len(out) > MAX_SHOWN:
        out = out[: MAX_SHOWN - 1] + "…"
    return out


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
