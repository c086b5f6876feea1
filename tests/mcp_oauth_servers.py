"""A remote MCP server that needs OAuth, and its authorization server, on loopback — both built from
the SDK's own parts: the authorization server is ``mcp.server.auth``'s routes (metadata, dynamic
registration, authorize, token, revoke) over an in-memory provider; the MCP server is the SDK's
low-level server behind its bearer middleware, checking each token's resource (RFC 8707).

The provider signs the person in at once (the browser step is a client following the redirect),
adds ``iss`` to the redirect (RFC 9207), rotates refresh tokens (a spent one is refused) and
counts the grants it answered. ``python tests/mcp_oauth_servers.py child URL [unlocked]`` is
a second ``cog`` process using the tokens kept on disk (the cross-process refresh test)."""

from __future__ import annotations

import secrets
import socket
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    ProviderTokenVerifier,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


@dataclass
class Provider:
    """An authorization server's state, in memory."""

    issuer: str
    access_lifetime: int = 3600
    refresh_delay: float = 0.0
    #: what the redirect says the issuer is (None: the real one; "" leaves ``iss`` out)
    redirect_iss: str | None = None
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    grants: dict[str, int] = field(default_factory=lambda: {"authorization_code": 0, "refresh_token": 0, "refused_refresh": 0})
    revoked: list[str] = field(default_factory=list)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id or ""] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id or "",
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
        )
        iss = self.issuer if self.redirect_iss is None else (self.redirect_iss or None)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=iss)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.access_lifetime, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.access_lifetime, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants["authorization_code"] += 1
        return self._issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        if found is None:
            self.grants["refused_refresh"] += 1
        return found

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:  # spent while this request waited
            self.grants["refused_refresh"] += 1
            raise TokenError("invalid_grant", "refresh token already used")
        await anyio.sleep(self.refresh_delay)  # a slow authorization server: two spends overlap
        self.grants["refresh_token"] += 1
        return self._issue(refresh_token.client_id, refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.revoked.append(token.token)
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def free_socket() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@dataclass
class World:
    provider: Provider
    issuer: str
    url: str  # the MCP endpoint


def tools_server() -> Any:
    """The protected MCP server: one tool, ``whoami``."""  # noqa: D401
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="whoami", description="Who the token belongs to.", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        """Echoes the token it was called with (a careless server does) and the X-Team header."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        request = getattr(ctx, "request", None)
        team = request.headers.get("x-team") if request is not None else None
        return types.CallToolResult(content=[types.TextContent(text=f"signed in with {token.token if token else None}, team {team}")])

    return Server("protected", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def oauth_world(**options: Any) -> AsyncIterator[World]:
    """The authorization server and the protected MCP server, each on its own loopback port."""
    import uvicorn
    from mcp.server.auth.routes import create_auth_routes
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
    from pydantic import AnyHttpUrl
    from starlette.applications import Starlette

    as_sock, rs_sock = free_socket(), free_socket()
    issuer = str(AnyHttpUrl(f"http://127.0.0.1:{as_sock.getsockname()[1]}"))  # as its metadata names it
    url = f"http://127.0.0.1:{rs_sock.getsockname()[1]}/mcp"
    provider = Provider(issuer=issuer, **options)
    auth_app = Starlette(routes=create_auth_routes(
        provider, issuer_url=AnyHttpUrl(issuer),
        client_registration_options=ClientRegistrationOptions(enabled=True), revocation_options=RevocationOptions(enabled=True),
    ))
    settings = AuthSettings(issuer_url=AnyHttpUrl(issuer), resource_server_url=AnyHttpUrl(url), validate_token_resource=True)
    mcp_app = tools_server().streamable_http_app(auth=settings, token_verifier=ProviderTokenVerifier(provider))  # type: ignore[arg-type]
    servers = [uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")) for app in (auth_app, mcp_app)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: servers[0].serve(sockets=[as_sock]))
        tg.start_soon(lambda: servers[1].serve(sockets=[rs_sock]))
        while not all(s.started for s in servers):
            await anyio.sleep(0.01)
        try:
            yield World(provider=provider, issuer=issuer, url=url)
        finally:
            for s in servers:
                s.should_exit = True
    as_sock.close()
    rs_sock.close()


async def follow_as_browser(authorization_url: str) -> int:
    """What a browser does with the authorization URL: follow the redirects to the loopback
    callback; the callback's status."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as http:
        return (await http.get(authorization_url)).status_code


async def _child(url: str, unlocked: bool) -> None:
    """A second ``cog`` process: connect with the kept tokens, list the tools."""
    from contextlib import asynccontextmanager as manager

    from cogcli.mcp.client import connect_http
    from cogcli.mcp.oauth_provider import CogOAuth
    from cogcli.mcp.token_store import TokenFile

    store = TokenFile(url)
    if unlocked:  # the defence taken away, to show what it prevents

        @manager
        async def no_lock() -> AsyncIterator[None]:
            yield

        store.locked = no_lock  # type: ignore[method-assign]
    auth = CogOAuth("protected", url, store)
    try:
        async with connect_http(url, auth=auth) as server:
            print("OK", len(server.tools), flush=True)
    except Exception as exc:
        print("FAILED", "sign-in needed" if auth.sign_in_needed else type(exc).__name__, flush=True)


if __name__ == "__main__" and sys.argv[1] == "child":
    anyio.run(_child, sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "unlocked")
