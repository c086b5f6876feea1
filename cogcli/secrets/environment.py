"""The environment's secrets, in every encoding a program may turn them into (JSON-escaped,
URL-encoded, base64 at any offset, hex):

- the values of this process's secret-looking variables (``*_TOKEN``, ``*_PASSWORD``, …);
- the credentials in a URL held by any variable, whatever it is called (``GOPROXY``,
  ``DATABASE_URL``, ``PIP_INDEX_URL``, ``HTTPS_PROXY``…): its userinfo (``user:password``, or a
  lone ``token@``) and its password;
- this run's secrets (:func:`remember_run_secrets`): the values of the variables handed to a
  test or command beyond cog's allow-list (``--pass-env``, a workspace's ``pass_env``), which the
  environment it hands out registers (:mod:`workspace_tools.sandbox.environment`).
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

from cogcli.secrets.formats import REDACTED

#: an environment variable whose value is a secret
_SECRET_ENV_NAME = re.compile(
    r"(?:(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|ACCESS_KEY|PRIVATE_KEY|PASSWORD|PASSWD|PASS|"
    r"CREDENTIALS?|AUTH|PAT)|PASSWORD|PASSWD|PASSPHRASE|SECRETS?|SECRETKEY|TOKEN|APIKEY|PRIVATEKEY|ACCESSKEY)$",
    re.IGNORECASE,
)
#: shorter values are too likely to be ordinary words or numbers
MIN_ENV_VALUE = 8


#: a URL's userinfo: ``scheme://USERINFO@`` (user, or user:password)
_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^\s/?#@\"'<>]+)@")

#: this process's run secrets (values handed to tests and commands), and how often they grew
_run_secrets: set[str] = set()
_run_version = 0
_run_lock = threading.Lock()


def url_credentials(text: str) -> set[str]:
    """The credentials of the URLs in ``text``: each userinfo as written and URL-decoded, and its
    password (the part after the first ``:``)."""
    from urllib.parse import unquote

    found: set[str] = set()
    if "://" not in text:
        return found
    for userinfo in _USERINFO.findall(text):
        for form in (userinfo, unquote(userinfo)):
            found.add(form)
            user, colon, password = form.partition(":")
            if colon and password:
                found.add(password)
    return found


def remember_run_secrets(values: Iterable[str]) -> None:
    """Make ``values`` (and the URL credentials in them) secrets for the rest of this process:
    what cog hands a test or command, redacted from whatever comes back."""
    global _run_version
    fresh = set()
    for value in values:
        value = value.strip()
        if len(value) >= MIN_ENV_VALUE:
            fresh.add(value)
        fresh |= {c for c in url_credentials(value) if len(c) >= MIN_ENV_VALUE}
    with _run_lock:
        if not fresh <= _run_secrets:
            _run_secrets.update(fresh)
            _run_version += 1


def run_secrets_version() -> int:
    """A number that changes whenever :func:`remember_run_secrets` added a value (a cached set of
    forms made before is then stale)."""
    return _run_version


def secret_env_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secret values of ``environ`` (default: cog's own, and then this run's secrets too):
    secret-looking variables' values and every URL credential in any value, longest first.
    For cog's own environment the answer is kept while the environment (compared whole, as the
    bytes the process holds) and this run's secrets are unchanged: it is asked several times a
    step, and reading every variable each time was most of a step's own time (issue 53)."""
    global _env_values
    if environ is None:
        raw = getattr(os.environ, "_data", None)  # os.environ's bytes, compared without decoding each
        if isinstance(raw, dict):
            key = (tuple(raw.items()), _run_version)
            kept = _env_values
            if kept is not None and kept[0] == key:
                return kept[1]
            values = _secret_values(os.environ, own=True)
            _env_values = (key, values)
            return values
    return _secret_values(os.environ if environ is None else environ, own=environ is None)


#: cog's own environment (as a key) and its secret values, from the last time they were read
_env_values: tuple[Any, tuple[str, ...]] | None = None


def _secret_values(env: Mapping[str, str], *, own: bool) -> tuple[str, ...]:
    values = {v.strip() for k, v in env.items() if _SECRET_ENV_NAME.search(k) and len(v.strip()) >= MIN_ENV_VALUE}
    for v in env.values():
        if "://" in v:
            values |= {c for c in url_credentials(v) if len(c) >= MIN_ENV_VALUE}
    if own and _run_secrets:
        with _run_lock:
            values |= _run_secrets
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


def encoded_forms(value: str) -> set[str]:
    """``value`` and the forms it takes when a program encodes it: JSON-escaped, URL-encoded,
    hex (lower and upper case), and base64 (standard and URL-safe) — for base64 the characters that
    stand for ``value`` alone at each of the three byte offsets it may start at inside a longer
    encoded text."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe=""), quote(value), quote_plus(value)}
    raw = value.encode("utf-8", "surrogatepass")
    forms |= {raw.hex(), raw.hex().upper()}
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
