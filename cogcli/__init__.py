"""cogcli: a coding agent for the command line whose tool results are split by reader.

The contract in one screen: :func:`tool` defines a tool, :func:`tool_output` splits what it
returns (``content`` for the model, ``details`` for the application, ``presentation`` for any
client), ``context.update()`` reports progress, and :func:`invoke_tool` is the one place a call
is validated, run and split.
"""

from cogcli.context import AbortSignal, ToolContext, ToolUpdate
from cogcli.errors import CogError, ConfigError, ErrorCode, ModelError, ToolCallError
from cogcli.invoke import ToolResult, invoke_tool
from cogcli.output import ToolOutputResult, is_tool_output_result, tool_output, tool_output_content
from cogcli.presentation import ToolPresentation, presentation_json_schema
from cogcli.tools import Tool, tool

__all__ = [
    "AbortSignal",
    "CogError",
    "ConfigError",
    "ErrorCode",
    "ModelError",
    "Tool",
    "ToolCallError",
    "ToolContext",
    "ToolOutputResult",
    "ToolPresentation",
    "ToolResult",
    "ToolUpdate",
    "invoke_tool",
    "is_tool_output_result",
    "presentation_json_schema",
    "tool",
    "tool_output",
    "tool_output_content",
]

__version__ = "0.1.0"
