"""Credentials in text a model is about to read, replaced by ``[REDACTED]``.

    text, count = redact(text)

What is found:

- private key blocks (``-----BEGIN … PRIVATE KEY-----`` … ``-----END … PRIVATE KEY-----``; a block
  cut by a line range loses its visible key lines too);
- AWS access key ids (``AKIA…``/``ASIA…``, 20 characters);
- OpenAI and Anthropic API keys (``sk-…``, ``sk-proj-…``, ``sk-ant-…``; 20+ characters after ``sk-``);
- GitHub tokens (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and ``github_pat_``);
- Slack tokens (``xoxb-``, ``xoxa-``, ``xoxp-``, ``xoxr-``, ``xoxs-``);
- the values (8+ characters) of this process's environment variables named ``*_API_KEY``,
  ``*_TOKEN``, ``*_SECRET``, ``*_SECRET_KEY``, ``*_ACCESS_KEY`` or ``*_PASSWORD``, wherever they appear.

A token pattern matches at a word start (``task-…`` is no ``sk-`` key); environment values match
anywhere. The patterns are one regex, compiled once per set of environment values, whose every
branch starts with fixed text, so the engine skips through text that holds none (≈10 ms a MB).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogcli.context import ToolUpdate
    from cogcli.result import ToolResult

REDACTED = "[REDACTED]"

#: an environment variable whose value is a secret
_SECRET_ENV_NAME = re.compile(r"(?:^|_)(?:API_KEY|TOKEN|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|ACCESS_KEY|PASSWORD)$", re.IGNORECASE)
#: shorter values are too likely to be ordinary words or numbers
MIN_ENV_VALUE = 8

#: each starts with its fixed prefix and then looks behind it for a word start: written this way
#: the regex engine skips to a prefix's first letter instead of trying every position
_TOKENS = (
    r"(?:AKIA|ASIA)(?<![A-Z0-9]....)[A-Z0-9]{16}",
    r"sk-(?<![A-Za-z0-9_]...)[A-Za-z0-9_-]{20,}",
    r"gh[pousr]_(?<![A-Za-z0-9_]....)[A-Za-z0-9]{30,255}",
    r"github_pat_(?<![A-Za-z0-9_]...........)[A-Za-z0-9_]{22,255}",
    r"xox[baprs]-(?<![A-Za-z0-9].....)[A-Za-z0-9-]{10,}",
)

_KEY_MARKER = re.compile(r"-----(BEGIN|END) [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
#: a line of a key's body: a long run of base64, a line of nothing else (the short last one;
#: after a read_file line number), or a PEM header
_KEY_LINE = re.compile(
    r"[A-Za-z0-9+/=]{16,}|^[^\S\n]*(?:\d+\t)?[\s\"'`#*/;>|]*[A-Za-z0-9+/=]+[\s\"'`,;+)\\n]*$"
    r"|^\W*(?:\d+\t)?\s*(?:Proc-Type|DEK-Info|Comment):"
)
#: an END farther than this from its BEGIN is not the same key
_MAX_KEY_BLOCK = 20_000


def secret_env_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the secret-looking environment variables, longest first."""
    env = os.environ if environ is None else environ
    values = {v.strip() for k, v in env.items() if _SECRET_ENV_NAME.search(k) and len(v.strip()) >= MIN_ENV_VALUE}
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


@lru_cache(maxsize=8)
def _scanner(env_values: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join([*(re.escape(v) for v in env_values), *_TOKENS]))


def redact(text: str, *, environ: Mapping[str, str] | None = None) -> tuple[str, int]:
    """``text`` with every credential replaced by ``[REDACTED]``, and how many were replaced."""
    if not text:
        return text, 0
    values = secret_env_values(environ)
    count = 0
    if "PRIVATE KEY" in text:
        text, count = _redact_keys(text)
    text, n = _scanner(values).subn(REDACTED, text)
    return text, count + n


def redact_value(value: Any, *, environ: Mapping[str, str] | None = None) -> tuple[Any, int]:
    """:func:`redact` applied to every string in a JSON-like value (dict keys and values, lists)."""
    if isinstance(value, str):
        return redact(value, environ=environ)
    if isinstance(value, dict):
        total = 0
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(k, str):
                k, n = redact(k, environ=environ)
                total += n
            out[k], n = redact_value(v, environ=environ)
            total += n
        return (out, total) if total else (value, 0)
    if isinstance(value, (list, tuple)):
        items = []
        total = 0
        for item in value:
            item, n = redact_value(item, environ=environ)
            items.append(item)
            total += n
        return (type(value)(items), total) if total else (value, 0)
    return value, 0


# --- private key blocks ---------------------------------------------------------------------


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



def _redact_keys(text: str) -> tuple[str, int]:
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


def redact_result(result: ToolResult) -> ToolResult:
    """A finished call as a model may read it: credentials in its content and its error message
    replaced, ``redacted`` set to how many. ``details`` stay as they are: they never reach a
    model (and ``cog undo`` needs the exact diffs)."""
    content, in_content = redact_value(result.result)
    error, in_error = redact(result.error) if result.error is not None else (None, 0)
    if not in_content and not in_error:
        return result
    return result.model_copy(update={"result": content, "error": error, "redacted": in_content + in_error})


#: values that hold no text
_PLAIN = frozenset({int, float, bool, type(None)})


def update_redactor(environ: Mapping[str, str] | None = None) -> Callable[[ToolUpdate], ToolUpdate]:
    """A function that takes credentials out of a ``context.update()`` (its content, details and
    presentation) before anyone watching sees it. The environment's secret values are read once,
    here: a call's updates come fast, and each must cost next to nothing when it holds no secret."""
    return _UpdateRedactor(_scanner(secret_env_values(environ)))


class _UpdateRedactor:
    def __init__(self, scanner: re.Pattern[str]) -> None:
        self.scanner = scanner

    def __call__(self, update: ToolUpdate) -> ToolUpdate:
        # one scan of all its text first: almost every update holds no secret, and one search of the
        # joined text costs what one search of a short string does (no pattern spans a newline)
        found: list[str] = []
        self._collect(update.content, found)
        self._collect(update.details, found)
        presentation = update.presentation
        if presentation is not None:
            found += [presentation.label, presentation.icon or "", presentation.detail or ""]
        joined = "\n".join(found)
        if "PRIVATE KEY" not in joined and self.scanner.search(joined) is None:
            return update
        content, a = self._walk(update.content)
        details, b = self._walk(update.details)
        c = 0
        if presentation is not None:
            shown, c = self._walk(presentation.model_dump(exclude_none=True))
            if c:
                presentation = type(presentation).model_validate(shown)
        if not (a or b or c):
            return update
        return dataclasses.replace(update, content=content, details=details, presentation=presentation)

    def _collect(self, value: Any, out: list[str]) -> None:
        """Every string in ``value`` into ``out`` (numbers, the bulk of progress details, skipped fast)."""
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                if type(k) is str:
                    out.append(k)
                if type(v) in _PLAIN:
                    continue
                if type(v) is str:
                    out.append(v)
                else:
                    self._collect(v, out)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if type(item) not in _PLAIN:
                    self._collect(item, out)

    def _text(self, value: str) -> tuple[str, int]:
        count = 0
        if "PRIVATE KEY" in value:
            value, count = _redact_keys(value)
        value, n = self.scanner.subn(REDACTED, value)
        return value, count + n

    def _walk(self, value: Any) -> tuple[Any, int]:
        """``value`` with every credential in its strings replaced, and how many."""
        if isinstance(value, str):
            return self._text(value) if value else (value, 0)
        if isinstance(value, dict):
            total, out = 0, {}
            for k, v in value.items():
                if isinstance(k, str):
                    k, n = self._text(k)
                    total += n
                out[k], n = self._walk(v)
                total += n
            return (out, total) if total else (value, 0)
        if isinstance(value, (list, tuple)):
            items, total = [], 0
            for item in value:
                item, n = self._walk(item)
                items.append(item)
                total += n
            return (type(value)(items), total) if total else (value, 0)
        return value, 0
