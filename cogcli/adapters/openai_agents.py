"""cog's tools as OpenAI Agents SDK function tools (``pip install 'cogcli[openai-agents]'``).

    from agents import Agent, Runner
    from cogcli.adapters.openai_agents import to_function_tools

    agent = Agent(name="coder", tools=to_function_tools("path/to/repo", on_result=keep, on_update=print))
    result = await Runner.run(agent, "Fix the failing test")

``on_invoke_tool`` returns what the model reads — the content as text, cut to
``max_result_length`` like in a cog run — and nothing else reaches the SDK: ``on_result`` gets the
whole :class:`~cogcli.contract.result.ToolResult` (details, presentation, error code), ``on_update`` each
``context.update()`` with the SDK's call id. A failed call returns ``Error: <message>`` to the model,
as the SDK expects of a tool whose error the model should read (raising would end the run);
``on_result`` sees its ``error_code``.

The parameter schema is cog's and cog validates the arguments (``INVALID_ARGUMENTS`` names the
field). It is sent non-strict by default: OpenAI's strict mode makes every property required,
which would oblige the model to spell out each optional argument; pass ``strict_json_schema=True``
to have the SDK convert it anyway.

The SDK is imported when a function here is first called, not when this module is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cogcli.adapters.shared import MAX_RESULT_LENGTH, Invoker, ResultCallback, ToolSource, require, tools_of
from cogcli.contract.tool import Tool, tool_index

if TYPE_CHECKING:
    import agents

    from cogcli.contract.context import UpdateCallback
    from cogcli.loop.runtime import Cogitator

EXTRA = "openai-agents"


def to_function_tool(
    tool: Tool[Any],
    *,
    cogitator: Cogitator | None = None,
    on_result: ResultCallback | None = None,
    on_update: UpdateCallback | None = None,
    max_result_length: int | None = MAX_RESULT_LENGTH,
    strict_json_schema: bool = False,
) -> agents.FunctionTool:
    """``tool`` as an ``agents.FunctionTool`` (name, description, ``params_json_schema``).

    A call runs through ``cogitator.invoke_tool`` when given (else :func:`cogcli.contract.invoke.invoke_tool`)
    with the SDK's ``tool_call_id`` as its call id."""
    sdk = require("agents", EXTRA)
    invoker = Invoker(cogitator=cogitator, on_update=on_update, on_result=on_result, max_result_length=max_result_length)

    async def on_invoke_tool(ctx: agents.ToolContext[Any], args_json: str) -> str:
        # the JSON text as the model sent it: cog parses and validates it (an empty text is no arguments)
        result = await invoker(tool, args_json if args_json.strip() else None, call_id=ctx.tool_call_id)
        return invoker.model_text(result)

    return sdk.FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.input_schema(),
        on_invoke_tool=on_invoke_tool,
        strict_json_schema=strict_json_schema,
    )


def to_function_tools(
    source: ToolSource,
    *,
    cogitator: Cogitator | None = None,
    on_result: ResultCallback | None = None,
    on_update: UpdateCallback | None = None,
    max_result_length: int | None = MAX_RESULT_LENGTH,
    strict_json_schema: bool = False,
) -> list[agents.FunctionTool]:
    """:func:`to_function_tool` for each tool of ``source``: a list of cog tools, a workspace folder
    (its tools as ``cog mcp`` serves them, with the folder's cog.toml settings) or a
    :class:`~cogcli.session.Session`."""
    tools = tools_of(source)
    tool_index(tools)  # raises ValueError naming a name used twice
    return [
        to_function_tool(
            t,
            cogitator=cogitator,
            on_result=on_result,
            on_update=on_update,
            max_result_length=max_result_length,
            strict_json_schema=strict_json_schema,
        )
        for t in tools
    ]


__all__ = ["to_function_tool", "to_function_tools"]
