"""The JSON-RPC errors cog's ACP agent answers with (the agent, its listing and its modes raise them)."""

from __future__ import annotations

from typing import Any

import acp

#: JSON-RPC error codes (the SDK's :class:`acp.RequestError` helpers use the same)
INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
#: a session/load of a thread this workspace does not have
NOT_FOUND = -32002


def _error(code: int, message: str, **data: Any) -> acp.RequestError:
    return acp.RequestError(code, message, data or None)
