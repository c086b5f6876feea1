"""Who may talk to ``cog serve``: requests for a loopback name (or the host it was told to bind)
from no other site, and ``/api/`` requests carrying the token printed at start.

Host and Origin are checked on every request so a page on another site cannot reach the server
through DNS rebinding (a name of its own that resolves to 127.0.0.1) or a cross-site request;
the bearer token keeps out every other local program that did not see the URL.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: bind addresses that mean "every interface": not a name a browser sends
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe), one per ``cog serve``."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind_host: str) -> frozenset[str]:
    """The names a request's Host (and Origin) may carry: the loopback names, and the host
    ``--host`` named when it is a real address rather than a wildcard."""
    names = set(LOOPBACK_NAMES)
    host = bind_host.strip("[]").lower()
    if host not in WILDCARDS:
        names.add(host)
    return frozenset(names)


def host_name(value: str) -> str:
    """``127.0.0.1:8000`` → ``127.0.0.1``; ``[::1]:80`` → ``::1``; lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        return value.partition(":")[0]
    return value


class Guard:
    """ASGI middleware: 403 for a foreign Host or Origin, 401 for ``/api/`` without the token."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.hosts = frozenset(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if host_name(host) not in self.hosts:
            await _refuse(send, 403, "FORBIDDEN_HOST", f"Host {host!r} is not served here; open the URL cog serve printed (http://127.0.0.1:…)")
            return
        origin = headers.get(b"origin")
        if origin is not None:
            text = origin.decode("latin-1")
            parts = urlsplit(text)
            if parts.scheme not in ("http", "https") or (parts.hostname or "") not in self.hosts:
                await _refuse(send, 403, "FORBIDDEN_ORIGIN", f"requests from {text!r} are refused; only the Studio page served here may call the API")
                return
        if scope["path"].startswith("/api/"):
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await _refuse(
                    send, 401, "UNAUTHORIZED", "missing or wrong token: send Authorization: Bearer TOKEN, the token in the URL cog serve printed"
                )
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": message, "code": code}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="cog"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
