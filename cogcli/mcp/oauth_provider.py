"""OAuth 2.1 for a remote MCP server, through the SDK's own client (:class:`mcp.client.auth.OAuthClientProvider`):
protected-resource and authorization-server metadata discovery, the resource indicator (RFC 8707)
and the issuer (RFC 9207, and the metadata's own) checked, dynamic registration, PKCE, refresh.

What cog adds to it:

- the tokens are kept by :class:`cogcli.mcp.token_store.TokenFile` (state folder, 0600), with when
  the access token expires, which the SDK forgets across processes;
- a refresh **before** expiry (:data:`REFRESH_MARGIN`), done under the server's cross-process
  lock after reading the file again: of two ``cog`` processes, one spends the refresh token and the
  other finds the fresh tokens it wrote (an authorization server that rotates refresh tokens
  would refuse the second spend, and that process would be signed out);
- in a run (no person to send to a browser), a server asking for authorization ends the
  connection with :class:`SignInNeeded` at once — no registration, no browser — and the session
  goes on without that server's tools, naming ``cog mcp login NAME`` (:mod:`cogcli.mcp.client`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)

from cogcli.mcp.token_store import TokenFile

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import AuthorizationCodeResult

# the SDK logs a failed flow with its traceback, and a refused refresh, on loggers no one configured
# (Python then prints them raw on stderr); cog says what failed itself, in one line naming the fix
logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)

#: refresh an access token this many seconds before it expires
REFRESH_MARGIN = 60.0
#: the redirect URI a run declares: it never sends anyone to a browser, so it is never used
_NO_REDIRECT = "http://127.0.0.1/callback"


class SignInNeeded(Exception):
    """The server wants the person to sign in (``cog mcp login NAME``)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the MCP server {name} needs you to sign in: run `cog mcp login {name}`")
        self.name = name


def client_metadata(redirect_uri: str) -> OAuthClientMetadata:
    """How cog registers itself: a public client (no secret) on a loopback redirect."""
    from cogcli.version import __version__

    return OAuthClientMetadata(
        client_name="cog",
        software_id="cogcli",
        software_version=__version__,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


class CogOAuth(OAuthClientProvider):
    """The SDK's provider for the server ``name`` at ``url``, its tokens in ``store``.

    ``redirect_uri``, ``redirect_handler`` and ``callback_handler`` are given for a sign-in
    (:mod:`cogcli.mcp.login`); without them a request the server refuses for want of a token
    raises :class:`SignInNeeded`."""

    def __init__(
        self,
        name: str,
        url: str,
        store: TokenFile,
        *,
        redirect_uri: str | None = None,
        redirect_handler: Callable[[str], Awaitable[None]] | None = None,
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
        refresh_margin: float = REFRESH_MARGIN,
    ) -> None:
        super().__init__(
            url, client_metadata(redirect_uri or _NO_REDIRECT), store,
            redirect_handler=redirect_handler, callback_handler=callback_handler,
        )
        self.name = name
        self.store = store
        self.interactive = redirect_handler is not None
        self.refresh_margin = refresh_margin
        #: set when the server asked for a sign-in this provider cannot do (the failure may reach
        #: the caller wrapped by the transport)
        self.sign_in_needed = False

    async def _initialize(self) -> None:
        self._load()
        self._initialized = True

    def _load(self) -> None:
        """Take the tokens, registration and expiry from the file (another process may have refreshed)."""
        record = self.store.read()
        self.context.current_tokens = OAuthToken.model_validate(record.tokens) if record.tokens else None
        self.context.client_info = OAuthClientInformationFull.model_validate(record.client_info) if record.client_info else None
        self.context.token_expiry_time = record.expires_at
        if self.context.oauth_metadata is None and record.oauth_metadata:  # where to refresh, as discovered at sign-in
            self.context.oauth_metadata = OAuthMetadata.model_validate(record.oauth_metadata)
        if self.context.protected_resource_metadata is None and record.resource_metadata:
            prm = ProtectedResourceMetadata.model_validate(record.resource_metadata)
            self.context.protected_resource_metadata = prm
            self.context.auth_server_url = str(prm.authorization_servers[0]) if prm.authorization_servers else None

    def remember_metadata(self) -> None:
        """Keep the metadata this sign-in discovered, for the processes that refresh later."""
        record = self.store.read()
        context = self.context
        record.oauth_metadata = context.oauth_metadata.model_dump(mode="json", exclude_none=True) if context.oauth_metadata else None
        prm = context.protected_resource_metadata
        record.resource_metadata = prm.model_dump(mode="json", exclude_none=True) if prm else None
        revocation = context.oauth_metadata.revocation_endpoint if context.oauth_metadata else None
        record.revocation_endpoint = str(revocation) if revocation else None
        self.store.write(record)

    def _expiring(self) -> bool:
        expiry = self.context.token_expiry_time
        return self.context.current_tokens is not None and expiry is not None and time.time() >= expiry - self.refresh_margin

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if not self._initialized:
            await self._initialize()
        if self._expiring() and self.context.can_refresh_token():
            async with self.context.lock, self.store.locked():
                self._load()  # what another process wrote while this one waited
                if self._expiring() and self.context.can_refresh_token():
                    response = yield await self._refresh_token()
                    await self._handle_refresh_response(response)  # on failure the tokens are cleared
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if not self.interactive and outgoing is request and _asks_for_authorization(response):
                    self.sign_in_needed = True
                    raise SignInNeeded(self.name)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


def _asks_for_authorization(response: httpx2.Response) -> bool:
    if response.status_code == 401:
        return True
    return response.status_code == 403 and "insufficient_scope" in response.headers.get("www-authenticate", "")
