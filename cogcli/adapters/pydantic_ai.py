"""cog's tools as pydantic-ai tools (``pip install 'cogcli[pydantic-ai]'``).

    from pydantic_ai import Agent
    from cogcli.adapters.pydantic_ai import to_pydantic_ai_toolset

    agent = Agent("openai:gpt-5", toolsets=[to_pydantic_ai_toolset("path/to/repo", on_update=print)])
    result = await agent.run("Fix the failing test")

Each call returns ``ToolReturn(return_value=<what the model reads>, metadata=…)``: pydantic-ai sends
the model the return value only — the content as text, cut to ``max_result_length`` like in a cog
run — and keeps the metadata on the run's ``ToolReturnPart``: ``{"details", "presentation",
"error_code"}`` (:func:`cogcli.adapters.shared.result_metadata`). A failed call is not an exception:
the model reads ``Error: <message>`` (so the run goes on and the model can adapt, without using up
pydantic-ai's retries), and ``metadata["error_code"]`` says why.

pydantic-ai does not validate the arguments (the tool is made with ``Tool.from_schema``): cog
validates them against the tool's own parameter model, as in every cog call, and a mistake reaches
the model as an ``INVALID_ARGUMENTS`` error naming the field.

pydantic-ai is imported when a function here is first called, not when this module is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cogcli.adapters.shared import MAX_RESULT_LENGTH, Invoker, ResultCallback, ToolSource, require, result_metadata, tools_of
from cogcli.contract.tool import Tool, tool_index

if TYPE_CHECKING:
    import pydantic_ai
    from pydantic_ai.toolsets import FunctionToolset

    from cogcli.contract.context import UpdateCallback
    from cogcli.loop.runtime import Cogitator

EXTRA = "pydantic-ai"


def _pydantic_ai() -> Any:
    return require("pydantic_ai", EXTRA)


def to_pydantic_ai_tool(
    tool: Tool[Any],
    *,
    cogitator: Cogitator | None = None,
    on_update: UpdateCallback | None = None,
    on_result: ResultCallback | None = None,
    max_result_length: int | None = MAX_RESULT_LENGTH,
) -> pydantic_ai.Tool[Any]:
    """``tool`` as a ``pydantic_ai.Tool`` with its name, description and parameter schema.

    A call runs through ``cogitator.invoke_tool`` when given (else :func:`cogcli.contract.invoke.invoke_tool`)
    with pydantic-ai's tool call id as its call id; ``on_update`` gets each ``context.update()``,
    ``on_result`` the whole :class:`~cogcli.contract.result.ToolResult`. Tools with side effects
    (``edit_file``, ``write_file``, ``run_tests``) are ``sequential``: pydantic-ai runs them alone,
    never beside another call of the same turn.
    """
    pai = _pydantic_ai()
    invoker = Invoker(cogitator=cogitator, on_update=on_update, on_result=on_result, max_result_length=max_result_length)

    async def call(ctx: pydantic_ai.RunContext[Any], /, **arguments: Any) -> pydantic_ai.ToolReturn[Any]:
        result = await invoker(tool, arguments, call_id=ctx.tool_call_id)
        return pai.ToolReturn(return_value=invoker.model_text(result), metadata=result_metadata(result))

    call.__name__ = call.__qualname__ = tool.name
    call.__doc__ = tool.description
    return pai.Tool.from_schema(
        call,
        name=tool.name,
        description=tool.description,
        json_schema=tool.input_schema(),
        takes_ctx=True,
        sequential=bool(tool.side_effects),
    )


def to_pydantic_ai_tools(
    source: ToolSource,
    *,
    cogitator: Cogitator | None = None,
    on_update: UpdateCallback | None = None,
    on_result: ResultCallback | None = None,
    max_result_length: int | None = MAX_RESULT_LENGTH,
) -> list[pydantic_ai.Tool[Any]]:
    """:func:`to_pydantic_ai_tool` for each tool of ``source``: a list of cog tools, a workspace
    folder (its tools as ``cog mcp`` serves them: ``Session(root).tools``, with the folder's
    cog.toml settings) or a :class:`~cogcli.session.Session`."""
    tools = tools_of(source)
    tool_index(tools)  # raises ValueError naming a name used twice
    return [
        to_pydantic_ai_tool(t, cogitator=cogitator, on_update=on_update, on_result=on_result, max_result_length=max_result_length)
        for t in tools
    ]


def to_pydantic_ai_toolset(
    source: ToolSource,
    *,
    cogitator: Cogitator | None = None,
    on_update: UpdateCallback | None = None,
    on_result: ResultCallback | None = None,
    max_result_length: int | None = MAX_RESULT_LENGTH,
    id: str | None = "cog",
) -> FunctionToolset[Any]:
    """The tools of :func:`to_pydantic_ai_tools` as one ``FunctionToolset`` (``Agent(toolsets=[…])``)."""
    pai = _pydantic_ai()
    tools = to_pydantic_ai_tools(
        source, cogitator=cogitator, on_update=on_update, on_result=on_result, max_result_length=max_result_length
    )
    return pai.FunctionToolset(tools, id=id)


__all__ = ["to_pydantic_ai_tool", "to_pydantic_ai_tools", "to_pydantic_ai_toolset"]
