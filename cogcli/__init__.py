"""cogcli: a coding agent for the command line whose tool results are split by reader.

The contract in one screen: :func:`tool` defines a tool, :func:`tool_output` splits what it
returns (``content`` for the model, ``details`` for the application, ``presentation`` for any
client), ``context.update()`` reports progress, and :func:`invoke_tool` is the one place a call
is validated, run and split. :class:`Cogitator` runs an :class:`Agent`; :class:`Session` starts a
run in a workspace exactly as ``cog edit`` does (its settings, model, tools, trust, instructions).

Names are imported on first use, so ``cog --help`` does not pay for pydantic and anyio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogcli.contract.context import AbortSignal, ToolContext, ToolUpdate
    from cogcli.contract.errors import CogError, ConfigError, ErrorCode, ModelError, ToolCallError
    from cogcli.wire.events import RunStatus
    from cogcli.contract.invoke import ToolResult, invoke_tool
    from cogcli.contract.output import ToolOutputResult, is_tool_output_result, tool_output, tool_output_content
    from cogcli.contract.presentation import ToolPresentation, presentation_json_schema
    from cogcli.loop.runtime import Agent, Cogitator, RunResult
    from cogcli.session import Session
    from cogcli.contract.tool import Tool, tool

_EXPORTS = {
    "AbortSignal": "contract.context",
    "ToolContext": "contract.context",
    "ToolUpdate": "contract.context",
    "CogError": "contract.errors",
    "ConfigError": "contract.errors",
    "ErrorCode": "contract.errors",
    "ModelError": "contract.errors",
    "ToolCallError": "contract.errors",
    "RunStatus": "wire.events",
    "ToolResult": "contract.invoke",
    "invoke_tool": "contract.invoke",
    "ToolOutputResult": "contract.output",
    "is_tool_output_result": "contract.output",
    "tool_output": "contract.output",
    "tool_output_content": "contract.output",
    "ToolPresentation": "contract.presentation",
    "presentation_json_schema": "contract.presentation",
    "Agent": "loop.runtime",
    "Cogitator": "loop.runtime",
    "RunResult": "loop.runtime",
    "Session": "session",
    "Tool": "contract.tool",
    "tool": "contract.tool",
}

__all__ = sorted(_EXPORTS)

from cogcli.version import __version__  # noqa: E402


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cogcli' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"cogcli.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
