"""Values for the secrets tests: a secret environment variable and PEM private keys."""

from __future__ import annotations

import random
import string

#: set by the property test's server fixture: its value must never reach a model
ENV_NAME = "COG_TEST_SERVICE_API_KEY"
ENV_VALUE = "Zq7#envSecret!v4lue"


def pem_key(lines: int, *, seed: int = 0) -> str:
    """A PEM private key block: ``lines`` full 64-character base64 lines, a short last line."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "+/"
    body = ["".join(rng.choices(alphabet, k=64)) for _ in range(lines)]
    body.append("".join(rng.choices(alphabet, k=rng.randint(4, 40))) + "==")
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n"
