"""The MCP servers an editor names in ``session/new`` and ``session/load``, as cog's ``--mcp`` takes them."""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence
from typing import Any

from acp import schema as acp_schema

log = logging.getLogger("cogcli")


def mcp_commands(servers: Sequence[Any] | None) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The editor's MCP servers as ``--mcp`` command lines, and the environment the editor gives
    each (by command line), kept apart from it: a token the editor passes a server is in no argv
    (``ps``), no log line and no error message. An HTTP server is its URL, its headers given
    apart the same way (:func:`cogcli.mcp.client.is_url`); SSE servers are left out."""
    commands: list[str] = []
    env: dict[str, dict[str, str]] = {}
    for server in servers or []:
        if isinstance(server, acp_schema.McpServerHttp):  # Streamable HTTP: its headers kept apart as a stdio server's env
            command, variables = server.url, {h.name: h.value for h in server.headers or []}
        elif isinstance(server, acp_schema.McpServerStdio):
            command, variables = shlex.join([server.command, *server.args]), {e.name: e.value for e in server.env or []}
        else:
            log.warning("MCP server %r is neither a stdio nor an HTTP server; cog connects to those only, so it is left out", getattr(server, "name", "?"))
            continue
        if command in env and env[command] != variables:
            log.warning("two MCP servers run `%s` with different environments; cog starts it once, with the last one", command)
        if command not in env:
            commands.append(command)
        env[command] = variables
    return commands, env
