"""The person's remote MCP servers: ``[mcp_servers.NAME]`` tables of their config.toml, and the
edits ``cog mcp add`` / ``cog mcp remove`` make to that file.

    [mcp_servers.linear]
    url = "https://mcp.linear.app/mcp"
    [mcp_servers.internal]
    url = "https://mcp.example.com/mcp"
    headers = { "X-Api-Key" = "INTERNAL_MCP_KEY" }   # header → the variable holding its value

A header's value is never written into the file: the table names the environment variable it
comes from, read when cog connects (a variable that is not set is an error naming it). A server
that needs OAuth is signed in to with ``cog mcp login NAME`` (:mod:`cogcli.mcp.login`); its tokens
live in the person's state folder, never here.

The older form, ``mcp_servers = ["CMD ARGS", "https://…"]``, is a plain setting
(:mod:`cogcli.settings.options`); a file holds one form or the other (TOML allows no both).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cogcli.contract.errors import ConfigError

#: a server's name: what ``cog mcp login NAME`` and messages call it
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_URL_CHARS = 2048
MAX_SERVERS = 64

FIX = 'give a table per server with its url, e.g. [mcp_servers.linear] url = "https://mcp.linear.app/mcp"'


def check_url(url: str) -> str:
    """``url`` when it is an ``http(s)://`` URL without credentials or control characters."""
    from urllib.parse import urlsplit

    if len(url) > MAX_URL_CHARS or any(c < " " or c == "\x7f" for c in url):
        raise ValueError(f"{url[:80]!r} is not a URL (too long, or control characters)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url[:80]!r} is not an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("the URL carries a user or password; give credentials with headers from a variable, or cog mcp login")
    return url


def check_name(name: str) -> str:
    if not NAME_PATTERN.match(name):
        raise ValueError(f"{name[:80]!r} is not a server name: use letters, digits, - and _ (at most 64, starting with a letter or digit)")
    return name


class RemoteServer(BaseModel):
    """One ``[mcp_servers.NAME]`` table: a server over Streamable HTTP."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    url: str = Field(max_length=MAX_URL_CHARS)
    #: header name → the environment variable that holds its value
    headers: dict[str, str] = {}

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        return check_url(url)

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str]) -> dict[str, str]:
        if len(headers) > 32:
            raise ValueError("at most 32 headers")
        for header, variable in headers.items():
            if not _HEADER_NAME.match(header):
                raise ValueError(f"{header[:80]!r} is not an HTTP header name")
            if not _VARIABLE.match(variable):
                raise ValueError(
                    f"the header {header} names {variable[:80]!r}, which is no environment variable name: "
                    "give the variable that holds the value, never the value itself"
                )
        return headers


class WorkspaceRemoteServer(RemoteServer):
    """A ``[mcp_servers.NAME]`` table of a workspace's ``cog.toml``: a URL only. Such a server is
    connected to once the person approved its URL (``cog trust``); it may not name variables of the
    person's environment to send as headers (a stranger's file would pick which of their secrets
    leave the machine, and to where)."""

    @field_validator("headers")
    @classmethod
    def _no_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        if headers:
            raise ValueError(
                "a workspace's MCP server may not send your environment's variables as headers; "
                "add the server to your own config with cog mcp add NAME URL --header NAME=VARIABLE"
            )
        return headers


def check_servers(servers: dict[str, RemoteServer]) -> dict[str, RemoteServer]:
    if len(servers) > MAX_SERVERS:
        raise ValueError(f"at most {MAX_SERVERS} servers")
    for name in servers:
        check_name(name)
    return servers


def header_values(name: str, server: RemoteServer, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers to send to ``server``, their values read from the environment now; a variable
    that is not set is a :class:`ConfigError` naming it and the server."""
    env = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for header, variable in server.headers.items():
        value = env.get(variable)
        if value is None:
            raise ConfigError(
                f"the MCP server {name} sends the header {header} from ${variable}, which is not set; "
                f"export {variable}, or drop the header with cog mcp remove {name} and cog mcp add"
            )
        values[header] = value
    return values


# --- editing the person's config.toml ---------------------------------------------------------


def _table_header(name: str) -> re.Pattern[str]:
    quoted = re.escape(name)
    return re.compile(rf'^\s*\[\s*mcp_servers\s*\.\s*(?:{quoted}|"{quoted}"|\'{quoted}\')\s*\]\s*(?:#.*)?$')


def _toml_string(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)  # a JSON string of printable text is a TOML basic string


def added_text(current: str, name: str, server: RemoteServer) -> str:
    """``current`` (the config file's text) with a ``[mcp_servers.NAME]`` table appended."""
    lines = ["", f"[mcp_servers.{name}]", f"url = {_toml_string(server.url)}"]
    if server.headers:
        pairs = ", ".join(f"{_toml_string(h)} = {_toml_string(v)}" for h, v in server.headers.items())
        lines.append(f"headers = {{ {pairs} }}")
    body = current if not current or current.endswith("\n") else current + "\n"
    return body + "\n".join(lines).lstrip("\n" if not body else "") + "\n"


def removed_text(current: str, name: str) -> str | None:
    """``current`` without the ``[mcp_servers.NAME]`` table (its lines up to the next table), or
    None when it has none."""
    lines = current.splitlines(keepends=True)
    header = _table_header(name)
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    while start > 0 and not lines[start - 1].strip():
        start -= 1  # the blank line before it
    return "".join(lines[:start] + lines[end:])


def write_config(path: Path, text: str) -> None:
    """Replace the config file with ``text`` (temp file + rename, its mode kept, 0600 when new);
    a config that is a link is refused (the file it leads to is not cog's to rewrite)."""
    if path.is_symlink():
        raise ConfigError(f"{path} is a link; edit the file it leads to yourself, or make it a plain file")
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=".config-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
