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
  like), the credentials of a URL in any variable, and the values handed to a test or command
  beyond the allow-list (:mod:`cogcli.secrets.environment`), wherever they appear, as they are and
  in their common encodings: base64 (standard and URL-safe, at any offset inside a longer base64
  text such as ``Basic`` auth), URL-encoded, JSON-escaped and hex.

Not found: secrets without a recognisable shape that are not in the environment (a password in a
config file, a hex API key), an environment value split across lines or encoded another way
(gzip, encrypted), keys in binary formats. Secret *files* are the other half of the policy
(:mod:`workspace_tools.workspace.secret_files`): the tools keep away from them whatever they hold.

A token pattern matches at a word start (``task-…`` is no ``sk-`` key); environment values match
anywhere. Only the patterns whose fixed text occurs in a text are run over it, as one regex
(compiled once per such set), so text without secrets costs a few substring searches. Redaction
is idempotent: redacting redacted text changes nothing.

Here: the redactor that applies the parts, each a module of its own job —
:mod:`cogcli.secrets.formats` (the token formats and the scanners worth running over a text),
:mod:`cogcli.secrets.key_blocks` (private key blocks), :mod:`cogcli.secrets.environment` (the environment's secret
values and their encodings).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from cogcli.secrets.environment import MIN_ENV_VALUE, encoded_forms, env_forms, run_secrets_version, secret_env_values
from cogcli.secrets.formats import REDACTED, scanners
from cogcli.secrets.key_blocks import KeyLines, redact_keys

if TYPE_CHECKING:
    from cogcli.contract.context import ToolUpdate

__all__ = [
    "MIN_ENV_VALUE", "REDACTED", "KeyLines", "encoded_forms", "env_forms", "redact", "redact_result", "redact_update",
    "redact_value", "secret_env_values", "update_redactor",
]

#: passes over a text at most: one more pass finds a value only when it overlapped a redaction
_MAX_PASSES = 4


def redacted_traceback(exc: BaseException) -> str:
    """``exc``'s traceback, for a log: it holds the exception's text, so it is redacted like any output."""
    import traceback

    return redact("".join(traceback.format_exception(exc)).rstrip())[0]


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
        text, count = redact_keys(text)
    for _ in range(_MAX_PASSES):  # a value that overlapped a redaction shows only now
        changed = 0
        for scanner, keep in scanners(text, forms):
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


def redact_result(result: Any) -> Any:
    """A finished call as anyone may see it: credentials in its content, details, presentation,
    error message and arguments replaced, ``redacted`` set to how many in what it returned. Applied before anything is emitted or
    stored; ``cog undo`` does not need the exact diffs (it reads its own journal)."""
    forms = env_forms()
    content, in_content = redact_value(result.result, forms=forms)
    details, in_details = redact_value(result.details, forms=forms)
    presentation, in_presentation = redact_value(result.presentation, forms=forms)
    error, in_error = redact(result.error, forms=forms) if result.error is not None else (None, 0)
    # the arguments it ran with, as the thread keeps them: what the model wrote, redacted too
    arguments, in_arguments = redact_value(result.arguments, forms=forms)
    total = in_content + in_details + in_presentation + in_error
    if not total and not in_arguments:
        return result
    return result.model_copy(
        update={"result": content, "details": details, "presentation": presentation, "error": error, "arguments": arguments,
                "redacted": result.redacted + total}
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
    version = run_secrets_version()

    def redact_one(update: ToolUpdate) -> ToolUpdate:
        nonlocal forms, version
        if environ is None and version != run_secrets_version():
            # the call handed a test or command new values (its environment): secrets from now on
            version = run_secrets_version()
            forms = env_forms()
            clean.clear()
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
    return "PRIVATE KEY" in text or any(scanner.search(text) for scanner, _ in scanners(text, forms))
