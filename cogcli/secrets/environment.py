"""The environment's secrets: the values of this process's secret-looking variables, in every
encoding a program may turn them into (JSON-escaped, URL-encoded, base64 at any offset)."""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Mapping
from functools import lru_cache
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
