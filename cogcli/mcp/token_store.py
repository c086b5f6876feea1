"""Where a remote MCP server's OAuth tokens are kept: one file per server, bound to the issuer
that issued them, in the person's state folder (``$XDG_STATE_HOME/cog/mcp-tokens/``, folder 0700,
files 0600), never in a workspace and never through a link.

The file is named by the sha256 of the server's URL, not by the name the person gave it, so a
workspace that declares a server under a familiar name but another URL never gets the person's
tokens. It holds the client registration (with the issuer it belongs to), the tokens and when the
access token expires (an absolute time: the SDK only knows ``expires_in``, relative to when it
was issued). A token whose issuer changed is dropped with the registration.

Two ``cog`` processes share it: :meth:`TokenFile.locked` takes an ``flock`` on a lock file beside
it, held across a refresh (:mod:`cogcli.mcp.oauth_provider`) so one process spends a refresh token and the
other reads the fresh tokens it wrote.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError

from cogcli.contract.errors import ConfigError
from cogcli.secrets.environment import remember_run_secrets

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

FOLDER = "mcp-tokens"
MAX_FILE_BYTES = 256 * 1024


class StoredTokens(BaseModel):
    """One server's file."""

    model_config = ConfigDict(extra="ignore")

    server_url: str
    issuer: str | None = None
    client_info: dict[str, Any] | None = None
    tokens: dict[str, Any] | None = None
    #: when the access token expires (seconds since the epoch; None: the server did not say)
    expires_at: float | None = None
    #: the authorization server's revocation endpoint, when it has one (``cog mcp logout``)
    revocation_endpoint: str | None = None
    #: the metadata discovered at sign-in (RFC 8414, RFC 9728): where a later process refreshes,
    #: and the resource it asks for, without discovering them again
    oauth_metadata: dict[str, Any] | None = None
    resource_metadata: dict[str, Any] | None = None


def tokens_folder() -> Path:
    """``$XDG_STATE_HOME/cog/mcp-tokens`` (made 0700; a link there is refused)."""
    from cogcli.settings.person_state import state_home

    folder = state_home() / FOLDER
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ConfigError(f"{folder} is not a folder of yours (a link, or another user's); remove it and sign in again with cog mcp login")
    os.chmod(folder, 0o700)
    return folder


def server_key(url: str) -> str:
    """The file name for the server at ``url``: the first 32 hex digits of its sha256."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


class TokenFile:
    """The SDK's :class:`mcp.client.auth.TokenStorage` for one server, kept in a file; every token
    it reads or writes is made a run secret (redacted wherever it would show)."""

    def __init__(self, server_url: str, folder: Path | None = None) -> None:
        self.server_url = server_url
        self.folder = folder or tokens_folder()
        self.path = self.folder / f"{server_key(server_url)}.json"
        self.lock_path = self.folder / f"{server_key(server_url)}.lock"

    # --- the record -----------------------------------------------------------------------

    def read(self) -> StoredTokens:
        """The record (empty when there is none, or it is not a plain file of this user's)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return StoredTokens(server_url=self.server_url)
        except OSError as exc:
            raise ConfigError(f"cannot read the sign-in in {self.path} ({exc.strerror}); remove it and run cog mcp login") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                raise ConfigError(f"{self.path} is not a plain file of yours; remove it and run cog mcp login")
            data = os.read(fd, MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        try:
            record = StoredTokens.model_validate_json(data)
        except ValidationError:
            return StoredTokens(server_url=self.server_url)  # unreadable: as if signed out
        if record.server_url != self.server_url:
            return StoredTokens(server_url=self.server_url)
        remember_run_secrets(_token_values(record.tokens))
        return record

    def write(self, record: StoredTokens) -> None:
        """Replace the file (temp file 0600 + rename: a link in its place is replaced, not followed)."""
        remember_run_secrets(_token_values(record.tokens))
        fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=self.folder)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(record.model_dump_json())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def delete(self) -> bool:
        """Forget this server's sign-in; True when there was one."""
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return False

    def signed_in(self) -> bool:
        record = self.read()
        return bool(record.tokens and record.tokens.get("access_token"))

    # --- the lock ---------------------------------------------------------------------------

    @asynccontextmanager
    async def locked(self) -> AsyncIterator[None]:
        """Hold this server's lock (``flock`` on its ``.lock`` file) across processes."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            await anyio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_EX, abandon_on_cancel=True)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # --- the SDK's TokenStorage -----------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        tokens = self.read().tokens
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = self.read()
        record.tokens = tokens.model_dump(mode="json", exclude_none=True)
        record.expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self.write(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        info = self.read().client_info
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = self.read()
        issuer = client_info.issuer
        if record.issuer is not None and issuer is not None and issuer != record.issuer:
            record.tokens, record.expires_at, record.revocation_endpoint = None, None, None  # another issuer's tokens
            record.oauth_metadata = record.resource_metadata = None
        record.client_info = client_info.model_dump(mode="json", exclude_none=True)
        record.issuer = issuer or record.issuer
        self.write(record)


def _token_values(tokens: dict[str, Any] | None) -> list[str]:
    if not tokens:
        return []
    return [v for k, v in tokens.items() if k in ("access_token", "refresh_token", "id_token") and isinstance(v, str)]


def describe(record: StoredTokens) -> str:
    """Whether a record is a sign-in, for ``cog mcp list``: ``signed in (expires in 52 min)``."""
    if not (record.tokens and record.tokens.get("access_token")):
        return "not signed in"
    if record.expires_at is None:
        return "signed in"
    left = record.expires_at - time.time()
    if left <= 0:
        return "signed in (token expired; refreshed on next use)" if record.tokens.get("refresh_token") else "sign-in expired"
    return f"signed in (token valid {int(left // 60)} min)"

