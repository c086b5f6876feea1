"""``cog mcp login NAME`` and ``cog mcp logout NAME``: signing in to a remote MCP server with OAuth 2.1.

The sign-in is the SDK's authorization-code flow with PKCE (:class:`cogcli.mcp.oauth_provider.CogOAuth`);
what happens here is the person's side of it. The browser is sent to the authorization URL (or
the URL is printed, ``--no-browser``, for a remote shell), and the code comes back to a loopback
redirect, ``http://127.0.0.1:PORT/callback`` on a port the system picks for this sign-in alone.
The receiver answers only a request carrying the ``state`` of this sign-in (any other gets a 400
and the wait goes on, so a page that guesses the port cannot end the sign-in with a code of its
own); the SDK then checks the state again, the issuer of the response (RFC 9207) and exchanges
the code with the PKCE verifier for tokens bound to this server (RFC 8707).

A registration made for another redirect URI (an earlier sign-in's port) is dropped first: an
authorization server compares redirect URIs exactly, so cog registers again.

Logging out revokes the refresh and access tokens (RFC 7009) where the authorization server
offers a revocation endpoint, and forgets them either way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import anyio

from cogcli.contract.errors import ConfigError
from cogcli.mcp.token_store import TokenFile

if TYPE_CHECKING:
    from anyio.abc import SocketStream
    from mcp.shared.auth import AuthorizationCodeResult

log = logging.getLogger("cogcli")

CALLBACK_PATH = "/callback"
#: how long a sign-in waits for the browser to come back
LOGIN_TIMEOUT = 300.0
_MAX_REQUEST = 16 * 1024

_DONE_PAGE = (
    "<!doctype html><meta charset=utf-8><title>cog</title>"
    "<p>Signed in. You can close this tab and go back to the terminal.</p>"
)


class LoopbackReceiver:
    """Waits on ``127.0.0.1:PORT`` for the browser's redirect carrying this sign-in's ``state``."""

    def __init__(self) -> None:
        self.port = 0
        self.state: str | None = None
        self._send, self._receive = anyio.create_memory_object_stream["AuthorizationCodeResult | str"](1)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        task_status.started()
        async with listener:
            await listener.serve(self._answer)

    async def wait(self, timeout: float = LOGIN_TIMEOUT) -> AuthorizationCodeResult:
        try:
            with anyio.fail_after(timeout):
                got = await self._receive.receive()
        except TimeoutError:
            raise ConfigError(f"no sign-in came back within {timeout:g} s; run cog mcp login again") from None
        if isinstance(got, str):
            raise ConfigError(f"the authorization server refused the sign-in: {got}")
        return got

    async def _answer(self, stream: SocketStream) -> None:
        from mcp.shared.auth import AuthorizationCodeResult

        async with stream:
            try:
                with anyio.fail_after(10):
                    head = b""
                    while b"\r\n\r\n" not in head and len(head) < _MAX_REQUEST:
                        head += await stream.receive(4096)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError):
                return
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            if len(parts) != 3 or parts[0] != "GET" or urlsplit(parts[1]).path != CALLBACK_PATH:
                await _respond(stream, 404, "Not found.")
                return
            query = {k: v[0] for k, v in parse_qs(urlsplit(parts[1]).query).items()}
            if self.state is None or query.get("state") != self.state:
                await _respond(stream, 400, "This is not the sign-in cog is waiting for (its state does not match).")
                return
            if "error" in query:
                await _respond(stream, 400, "The sign-in was refused; see the terminal.")
                why = query["error"] + (f" ({query['error_description']})" if "error_description" in query else "")
                await self._send.send(why[:300])
                return
            if not query.get("code"):
                await _respond(stream, 400, "No authorization code in this request.")
                return
            await _respond(stream, 200, _DONE_PAGE, html=True)
            await self._send.send(AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query.get("iss")))


async def _respond(stream: SocketStream, status: int, body: str, *, html: bool = False) -> None:
    from html import escape

    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    text = body if html else f"<!doctype html><meta charset=utf-8><title>cog</title><p>{escape(body)}</p>"
    data = text.encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(data)}\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n")
    try:
        await stream.send(head.encode() + data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


@dataclass(frozen=True)
class SignedIn:
    """A finished sign-in: the server's name as it introduced itself, and how many tools it offers."""

    server_name: str
    tools: int
    issuer: str | None


async def login(
    name: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    show_url: Callable[[str], None],
    open_browser: bool = True,
    timeout: float = LOGIN_TIMEOUT,
    store: TokenFile | None = None,
) -> SignedIn:
    """Sign in to the server ``name`` at ``url``: ``show_url(url)`` is given the authorization URL
    (and the browser opens it, when ``open_browser``); returns once the server lists its tools
    with the new token. Raises :class:`ConfigError` on any failure, naming it."""
    import webbrowser

    from cogcli.mcp.client import connect_http, describe_failure
    from cogcli.mcp.oauth_provider import CogOAuth

    store = store or TokenFile(url)
    receiver = LoopbackReceiver()

    async def redirect_handler(authorization_url: str) -> None:
        receiver.state = parse_qs(urlsplit(authorization_url).query).get("state", [None])[0]
        show_url(authorization_url)
        if open_browser:
            await anyio.to_thread.run_sync(webbrowser.open, authorization_url)

    async def callback_handler() -> AuthorizationCodeResult:
        return await receiver.wait(timeout)

    failure: ConfigError | None = None
    async with anyio.create_task_group() as tg:
        await tg.start(receiver.serve)
        async with store.locked():
            record = store.read()
            registered = (record.client_info or {}).get("redirect_uris") or []
            if record.client_info and receiver.redirect_uri not in registered:
                record.client_info = None  # registered for another port: register again
            record.tokens, record.expires_at = None, None  # a sign-in is asked for: start from none
            store.write(record)
        provider = CogOAuth(name, url, store, redirect_uri=receiver.redirect_uri,
                            redirect_handler=redirect_handler, callback_handler=callback_handler)
        try:
            async with connect_http(url, headers, auth=provider) as server:
                server_name, count = server.name, len(server.tools)
        except Exception as exc:
            failure = _config_error(exc) or ConfigError(f"signing in to {name} ({url}) failed: {describe_failure(exc)}")
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    provider.remember_metadata()
    record = store.read()
    return SignedIn(server_name=server_name, tools=count, issuer=record.issuer)


def _config_error(exc: BaseException) -> ConfigError | None:
    """The :class:`ConfigError` the receiver raised, when the transport handed it back wrapped."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConfigError):
            return seen
        if isinstance(seen, BaseExceptionGroup):
            found = [e for e in (_config_error(inner) for inner in seen.exceptions) if e is not None]
            return found[0] if found else None
        seen = seen.__cause__ or seen.__context__
    return None


async def logout(url: str, store: TokenFile | None = None) -> tuple[bool, bool]:
    """Forget the sign-in to the server at ``url``, revoking its tokens where the authorization
    server offers revocation: (whether there was a sign-in, whether it was revoked)."""
    import httpx2

    store = store or TokenFile(url)
    async with store.locked():
        record = store.read()
        tokens = record.tokens or {}
        revoked = False
        client_id = (record.client_info or {}).get("client_id")
        if record.revocation_endpoint and client_id and tokens:
            revoked = True
            async with httpx2.AsyncClient(timeout=30) as http:
                for kind in ("refresh_token", "access_token"):
                    if not tokens.get(kind):
                        continue
                    data = {"token": tokens[kind], "token_type_hint": kind, "client_id": client_id}
                    secret = (record.client_info or {}).get("client_secret")
                    if secret:
                        data["client_secret"] = secret
                    try:
                        answer = await http.post(record.revocation_endpoint, data=data)
                        if answer.status_code == 400 and not secret and "client_secret" in answer.text:
                            # some servers (the SDK's own) want the field even from a public client: empty
                            answer = await http.post(record.revocation_endpoint, data={**data, "client_secret": ""})
                        revoked = revoked and answer.status_code == 200
                    except httpx2.HTTPError as exc:
                        log.warning("could not revoke the %s at %s: %s", kind.replace("_", " "), record.revocation_endpoint, type(exc).__name__)
                        revoked = False
        had = bool(tokens)
        store.delete()
    return had, revoked
