"""Credentials in anything a tool hands out, replaced by ``[REDACTED]``: one policy for every field
(content, details, presentation, error, progress updates) and every reader (model, JSON lines,
thread store, MCP).

    text, count = redact(text)
    value, count = redact_value(json_like)
    result = redact_result(tool_result)        # content, details, presentation, error
    update = redact_update(tool_update)        # a context.update() payload

What is found:

- armoured private key blocks of every kind, whole from BEGIN to END: PEM (``RSA``, ``EC``,
  ``DSA``, ``ENCRYPTED``, PKCS#8), OpenSSH, PGP (``PGP PRIVATE KEY BLOCK``: its armour headers,
  the blank line and the body after it), SSH2 (``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----``);
  a block cut by a line range loses its visible key lines too;
- token formats with a fixed prefix, as gitleaks and detect-secrets document them: AWS access key
  ids (``AKIA``/``ASIA``/``ABIA``/``ACCA`` + 16), AWS secret keys (40 characters) after a
  ``secret_access_key`` name in any of its spellings (``aws_secret_access_key = …`` in ini,
  ``AWS_SECRET_ACCESS_KEY=…``, ``Aws_Secret_Access_Key: …``, ``"SecretAccessKey": "…"`` as ``aws sts``
  prints it, ``secretAccessKey``; each word lower, Title or UPPER case), OpenAI and
  Anthropic keys (``sk-…``), GitHub (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``, ``github_pat_``),
  GitLab (``glpat-``, ``glptt-``, ``gldt-``, ``glrt-``, ``glcbt-``, ``glimt-``, ``glft-``,
  ``glsoat-``, ``glagent-``, ``gloas-``, ``GR1348941``), Slack (``xoxb-``/``xoxa-``/``xoxp-``/
  ``xoxr-``/``xoxs-``/``xoxe-``, ``xapp-``, ``hooks.slack.com/services/…``), Google API keys
  (``AIza…``) and OAuth client secrets (``GOCSPX-``), Stripe (``sk_live_``, ``sk_test_``,
  ``rk_live_``, ``rk_test_``, ``whsec_``), npm (``npm_``), PyPI (``pypi-Ag…``), Hugging Face
  (``hf_``), SendGrid (``SG.…``), DigitalOcean (``dop_v1_``/``doo_v1_``), Shopify (``shpat_``,
  ``shpss_``, ``shpca_``, ``shppa_``), crates.io (``cio`` + 32 letters and digits, ``cio_tp_`` + 32),
  JSON Web Tokens (``eyJ….eyJ….…``);
- the password of a URL with credentials (``https://user:PASSWORD@host``: ``.git-credentials``,
  ``DATABASE_URL``), the user name kept;
- the values (8+ characters) of this process's environment variables named ``*_API_KEY``,
  ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ``*_PASSWD``, ``*_CREDENTIALS`` (and the
  like), wherever they appear, as they are and in their common encodings: base64 (standard and
  URL-safe, at any offset inside a longer base64 text such as ``Basic`` auth), URL-encoded and
  JSON-escaped.

Not found: secrets without a recognisable shape that are not in the environment (a password in a
config file, a hex API key), an environment value split across lines or encoded another way (hex,
gzip, encrypted), keys in binary formats. Secret *files* are the other half of the policy
(:mod:`workspace_tools.secret_files`): the tools keep away from them whatever they hold.

A token pattern matches at a word start (``task-…`` is no ``sk-`` key); environment values match
anywhere. Only the patterns whose fixed text occurs in a text are run over it, as one regex
(compiled once per such set), so text without secrets costs a few substring searches. Redaction
is idempotent: redacting redacted text changes nothing.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from pydantic import BaseModel

if TYPE_CHECKING:
    from cogcli.context import ToolUpdate
    from cogcli.result import ToolResult

REDACTED = "[REDACTED]"

#: an environment variable whose value is a secret
_SECRET_ENV_NAME = re.compile(
    r"(?:(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|ACCESS_KEY|PRIVATE_KEY|PASSWORD|PASSWD|PASS|"
    r"CREDENTIALS?|AUTH|PAT)|PASSWORD|PASSWD|PASSPHRASE|SECRETS?|SECRETKEY|TOKEN|APIKEY|PRIVATEKEY|ACCESSKEY)$",
    re.IGNORECASE,
)
#: shorter values are too likely to be ordinary words or numbers
MIN_ENV_VALUE = 8


def _word(prefix: str, at: int | None = None) -> str:
    """``prefix`` as fixed text with a look behind it, after its first ``at`` characters (default:
    all): no letter, digit or ``_`` just before it. Written this way each pattern starts with fixed
    text, and the regex engine skips straight to where that text occurs."""
    at = len(prefix) if at is None else at
    return re.escape(prefix[:at]) + f"(?<![A-Za-z0-9_]{'.' * at})" + re.escape(prefix[at:])


def _keep_user(match: re.Match[str]) -> str:
    """``://user:`` of a URL kept, its password redacted."""
    text = match.group()
    return text[: text.index(":", 3) + 1] + REDACTED


def _keep_name(match: re.Match[str]) -> str:
    """``aws_secret_access_key = `` kept, the 40-character value redacted."""
    return match.group()[:-40] + REDACTED


#: after the name: its closing quote, ``=``, ``:`` or ``=>`` on the same line, the value's quote, the
#: 40 characters of an AWS secret key
_AWS_SECRET_VALUE = r"[\"']?[ \t]*(?:=>|[:=])[ \t]*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
#: ``secret_access_key`` after its first word (``secret``, ``Secret`` or ``SECRET``, each rule's fixed
#: text): the rest in any case, with ``_``, ``-``, ``.`` or nothing between the words
_AWS_SECRET_REST = r"(?i:[_.-]?access[_.-]?key)"

#: token formats: (short fixed texts one of which every match contains, the pattern, what to keep).
#: A text with none of the fixed texts is not scanned for the format. Each pattern starts with
#: fixed text and has no alternation in front: Python's regex engine then skips through the text
#: to that text; an alternation of many patterns would try each at every position (ten times slower).
_TOKEN_RULES: tuple[tuple[tuple[str, ...], str, Callable[[re.Match[str]], str] | None], ...] = (
    (("AKIA", "ASIA", "ABIA", "ACCA"), _word("A", 1) + r"(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", None),
    (("secret",), "secret" + _AWS_SECRET_REST + _AWS_SECRET_VALUE, _keep_name),
    (("Secret",), "Secret" + _AWS_SECRET_REST + _AWS_SECRET_VALUE, _keep_name),
    (("SECRET",), "SECRET" + _AWS_SECRET_REST + _AWS_SECRET_VALUE, _keep_name),
    (("sk-",), _word("sk-") + r"[A-Za-z0-9_-]{20,}", None),
    (("gh",), _word("gh") + r"[pousr]_[A-Za-z0-9]{30,255}", None),
    (("_pat_",), _word("github_pat_") + r"[A-Za-z0-9_]{22,255}", None),
    (("gl",), _word("gl") + r"(?:pat|ptt|dt|rt|cbt|imt|ft|soat|agent|oas)-[A-Za-z0-9_.-]{20,}", None),
    (("GR1348941",), _word("GR1348941") + r"[A-Za-z0-9_-]{20,}", None),
    (("xox",), _word("xox") + r"(?:[abeprs]-|e\.xoxp-)[A-Za-z0-9-]{10,}", None),
    (("xapp-",), _word("xapp-") + r"[A-Za-z0-9-]{10,}", None),
    (("hooks.slack.com/",), r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}", None),
    (("AIza",), _word("AIza") + r"[A-Za-z0-9_-]{35}", None),
    (("GOCSPX-",), _word("GOCSPX-") + r"[A-Za-z0-9_-]{28}", None),
    (("sk_",), _word("sk_") + r"(?:live|test)_[A-Za-z0-9]{10,}", None),
    (("rk_",), _word("rk_") + r"(?:live|test)_[A-Za-z0-9]{10,}", None),
    (("whsec_",), _word("whsec_") + r"[A-Za-z0-9]{10,}", None),
    (("npm_",), _word("npm_") + r"[A-Za-z0-9]{36}", None),
    (("pypi-",), _word("pypi-Ag") + r"[A-Za-z0-9_-]{50,}", None),
    (("hf_",), _word("hf_") + r"[A-Za-z]{34}", None),
    (("SG.",), _word("SG.") + r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", None),
    (("_v1_",), _word("do", 2) + r"[opr]_v1_[a-f0-9]{64}", None),
    (("shp",), _word("shp") + r"(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", None),
    (("cio",), _word("cio") + r"(?:_tp_)?[A-Za-z0-9]{32}(?![A-Za-z0-9_])", None),
    (("eyJ",), _word("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", None),
    # a URL's password: ``scheme://user:`` is kept, the password up to the ``@`` goes
    (("://",), r"://[^\s:/@\"'<>]{1,256}:(?!\[REDACTED\]@)[^\s@/\"'<>]{1,512}(?=@)", _keep_user),
)
_TOKENS = tuple(pattern for _, pattern, _ in _TOKEN_RULES)
#: every token format's fixed texts, and the formats (indexes into the rules) each one may start
_RULES_OF: dict[str, tuple[int, ...]] = {}
for _index, (_triggers, _, _) in enumerate(_TOKEN_RULES):
    for _t in _triggers:
        _RULES_OF[_t] = (*_RULES_OF.get(_t, ()), _index)
_TRIGGER_TEXTS = tuple(_RULES_OF)

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
#: passes over a text at most: one more pass finds a value only when it overlapped a redaction
_MAX_PASSES = 4


def secret_env_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the secret-looking environment variables, longest first."""
    env = os.environ if environ is None else environ
    values = {v.strip() for k, v in env.items() if _SECRET_ENV_NAME.search(k) and len(v.strip()) >= MIN_ENV_VALUE}
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


def encoded_forms(value: str) -> set[str]:
    """``value`` and the forms it takes when a program encodes it: JSON-escaped, URL-encoded,
    and base64 (standard and URL-safe) — for base64 the characters that stand for ``value`` alone
    at each of the three byte offsets it may start at inside a longer encoded text."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe=""), quote(value), quote_plus(value)}
    raw = value.encode("utf-8", "surrogatepass")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        # characters fully determined by ``raw``: after the offset's bits, before the bits that follow it
        part = encoded[-(-8 * offset // 6) if offset else 0 : (8 * (offset + len(raw))) // 6]
        forms.add(part)
        forms.add(part.translate(_URLSAFE))
    return {f for f in forms if len(f) >= MIN_ENV_VALUE and f not in REDACTED}


_URLSAFE = str.maketrans("+/", "-_")


def env_forms(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secret-looking variables' values of ``environ`` (default: cog's own) in every encoding
    :func:`redact` looks for."""
    return _env_forms(secret_env_values(environ))


@lru_cache(maxsize=8)
def _env_forms(env_values: tuple[str, ...]) -> tuple[str, ...]:
    """Every form of every value, the longest first (it wins where two start at one place)."""
    literals: set[str] = set()
    for value in env_values:
        literals |= encoded_forms(value)
    return tuple(sorted(literals, key=lambda v: (-len(v), v)))


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _scanners(text: str, forms: tuple[str, ...]) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], str] | None]]:
    """The patterns worth running over ``text``: the environment forms it contains (one
    alternation of those few literals) and the token formats whose fixed text it contains."""
    found = [f for f in forms if f in text]
    scanners: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str] | None]] = []
    if found:
        scanners.append((_compiled("|".join(re.escape(f) for f in found)), None))
    hits = [t for t in _TRIGGER_TEXTS if t in text]  # one flat pass: most texts hold none
    if hits:
        for index in sorted({i for t in hits for i in _RULES_OF[t]}):  # in the rules' order
            _, pattern, keep = _TOKEN_RULES[index]
            scanners.append((_compiled(pattern), keep))
    return scanners


def redact(
    text: str, *, environ: Mapping[str, str] | None = None, forms: tuple[str, ...] | None = None
) -> tuple[str, int]:
    """``text`` with every credential replaced by ``[REDACTED]``, and how many were replaced.
    ``forms``: the environment's secret values in every encoding (:func:`env_forms`), when the
    caller read them already (a walk over many strings reads them once)."""
    if not text:
        return text, 0
    if forms is None:
        forms = env_forms(environ)
    count = 0
    if "PRIVATE KEY" in text:
        text, count = _redact_keys(text)
    for _ in range(_MAX_PASSES):  # a value that overlapped a redaction shows only now
        changed = 0
        for scanner, keep in _scanners(text, forms):
            text, n = scanner.subn(keep or REDACTED, text)
            changed += n
        count += changed
        if not changed:
            break
    return text, count


def redact_value(
    value: Any, *, environ: Mapping[str, str] | None = None, forms: tuple[str, ...] | None = None
) -> tuple[Any, int]:
    """:func:`redact` applied to every string in a JSON-like value (dict keys and values, lists,
    tuples, pydantic models and dataclasses). A value with nothing to redact comes back as it was
    (the same object); a model or dataclass with something comes back as the same type when it
    validates, else as its redacted JSON form."""
    if value is None or type(value) in (int, float, bool):
        return value, 0
    if forms is None:
        forms = env_forms(environ)  # once for the whole walk: reading the environment is not free
    if isinstance(value, str):
        return redact(value, forms=forms)
    if isinstance(value, dict):
        total = 0
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(k, str):
                k, n = redact(k, forms=forms)
                total += n
            out[k], n = redact_value(v, forms=forms)
            total += n
        return (out, total) if total else (value, 0)
    if isinstance(value, (list, tuple)):
        items = []
        total = 0
        # strings in a list may be the lines of a text (a key block split one line an item)
        is_key = KeyLines() if any(isinstance(i, str) and "PRIVATE KEY" in i for i in value) else None
        for item in value:
            if is_key is not None and isinstance(item, str) and is_key(item):
                item, n = REDACTED, (0 if item == REDACTED else 1)
            else:
                item, n = redact_value(item, forms=forms)
            items.append(item)
            total += n
        if not total:
            return value, 0
        return (type(value)(items) if type(value) in (list, tuple) else items), total
    if isinstance(value, BaseModel):
        dumped, total = redact_value(value.model_dump(mode="json", by_alias=True), forms=forms)
        if not total:
            return value, 0
        try:
            return type(value).model_validate(dumped), total
        except Exception:
            return dumped, total
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        redacted, total = redact_value(fields, forms=forms)
        if not total:
            return value, 0
        try:
            return dataclasses.replace(value, **redacted), total
        except Exception:
            return redacted, total
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
    """A finished call as anyone may see it: credentials in its content, details, presentation and
    error message replaced, ``redacted`` set to how many. Applied before anything is emitted or
    stored; ``cog undo`` does not need the exact diffs (it reads its own journal)."""
    forms = env_forms()
    content, in_content = redact_value(result.result, forms=forms)
    details, in_details = redact_value(result.details, forms=forms)
    presentation, in_presentation = redact_value(result.presentation, forms=forms)
    error, in_error = redact(result.error, forms=forms) if result.error is not None else (None, 0)
    total = in_content + in_details + in_presentation + in_error
    if not total:
        return result
    return result.model_copy(
        update={"result": content, "details": details, "presentation": presentation, "error": error, "redacted": result.redacted + total}
    )


def redact_update(update: ToolUpdate, *, environ: Mapping[str, str] | None = None) -> ToolUpdate:
    """A ``context.update()`` as anyone may see it: content, details and presentation redacted."""
    return _redact_update(update, env_forms(environ))


def _redact_update(update: ToolUpdate, forms: tuple[str, ...]) -> ToolUpdate:
    content, in_content = redact_value(update.content, forms=forms)
    details, in_details = redact_value(update.details, forms=forms)
    presentation, in_presentation = redact_value(update.presentation, forms=forms)
    if not in_content + in_details + in_presentation:
        return update
    return dataclasses.replace(update, content=content, details=details, presentation=presentation)


#: the update redactor remembers at most this many clean strings, each at most this long
_CLEAN_MEMO = 4096
_CLEAN_MEMO_CHARS = 200


def update_redactor(environ: Mapping[str, str] | None = None) -> Callable[[ToolUpdate], ToolUpdate]:
    """:func:`redact_update` for a call's stream of updates. They come fast (one per test, per
    line of output) and almost none holds a secret, so the environment's secret values and their
    encoded forms are read once, here, and each update's strings are first joined and checked in
    one pass; only an update that holds a secret is walked and rebuilt.

    Most of an update's strings recur (its keys, the label, the icon): short strings already
    found clean are remembered (a bounded set) and not scanned again, so the scan reads only
    what is new."""
    forms = env_forms(environ)
    clean: set[str] = set()

    def redact_one(update: ToolUpdate) -> ToolUpdate:
        texts: list[str] = []
        plain = _strings(update.content, texts) and _strings(update.details, texts)
        shown = update.presentation
        if shown is not None:
            texts += [shown.label, shown.icon or "", shown.detail or ""]
        if plain:
            fresh = [t for t in dict.fromkeys(texts) if t not in clean]
            if not fresh or not _holds_secret("\n".join(fresh), forms):
                if len(clean) > _CLEAN_MEMO:
                    clean.clear()
                clean.update(t for t in fresh if len(t) <= _CLEAN_MEMO_CHARS)
                return update
        return _redact_update(update, forms)

    return redact_one


def _strings(value: Any, out: list[str]) -> bool:
    """Every string in a JSON-like ``value`` (keys too) into ``out``, numbers skipped fast; False
    when it holds something else (a model, a dataclass), which only the exact walk reads."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                out.append(k)
            if v is None or type(v) in (int, float, bool):
                continue
            if not _strings(v, out):
                return False
    elif isinstance(value, (list, tuple)):
        for item in value:
            if (item is None or type(item) in (int, float, bool)) or _strings(item, out):
                continue
            return False
    elif not (value is None or type(value) in (int, float, bool)):
        return False
    return True


def _holds_secret(text: str, forms: tuple[str, ...]) -> bool:
    """Whether :func:`redact` would find anything in ``text`` (no pattern spans a newline, so a
    joined text answers for its parts)."""
    return "PRIVATE KEY" in text or any(scanner.search(text) for scanner, _ in _scanners(text, forms))
