"""cog's tools in realtime voice sessions: the OpenAI Realtime API and the Gemini Live API.

Both build and read plain JSON-shaped dicts: no SDK is imported here, and the events work with the
official SDKs (``openai``, ``google-genai``: ``pip install 'cogcli[realtime]'``) or a raw websocket.

OpenAI Realtime::

    tools = OpenAIRealtimeTools("path/to/repo", on_result=show_row, on_update=show_progress)
    await connection.send(tools.session_update(instructions="You fix code."))
    async for event in connection:
        reply = await tools.handle(event)        # None unless it is response.function_call_arguments.done
        if reply is not None:
            await connection.send(reply)         # conversation.item.create: function_call_output, content only
            await connection.send(RESPONSE_CREATE)

Gemini Live::

    tools = GeminiLiveTools("path/to/repo", on_result=show_row)
    config = {"response_modalities": ["AUDIO"], "tools": tools.tools_config()}
    async with client.aio.live.connect(model=…, config=config) as session:
        async for message in session.receive():
            if message.tool_call:
                reply = await tools.handle(message.tool_call)
                await session.send_tool_response(**reply)   # function_responses[].response: content only

The model reads only what a cog run's model reads — the content as text, cut to
``max_result_length`` — or the error message; ``on_result`` gets the whole
:class:`~cogcli.contract.result.ToolResult` (details, presentation, error code) and ``on_update`` each
``context.update()`` with the session's call id. A session's calls run one after the other, in the
order they came.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cogcli.adapters.shared import MAX_RESULT_LENGTH, Invoker, ResultCallback, ToolSource, tools_of
from cogcli.contract.tool import Tool, tool_index

if TYPE_CHECKING:
    from cogcli.contract.context import UpdateCallback
    from cogcli.contract.result import ToolResult
    from cogcli.loop.runtime import Cogitator

#: the OpenAI Realtime event a client sends after a function call's output, so the model answers
RESPONSE_CREATE: Mapping[str, str] = {"type": "response.create"}

#: the OpenAI Realtime server event that carries a call's complete arguments
FUNCTION_CALL_DONE = "response.function_call_arguments.done"


def _get(value: Any, *names: str) -> Any:
    """The first of ``names`` present on a mapping (an event as JSON) or an object (an SDK model)."""
    for name in names:
        if isinstance(value, Mapping):
            if name in value:
                return value[name]
        elif getattr(value, name, None) is not None:
            return getattr(value, name)
    return None


class _Tools:
    def __init__(
        self,
        source: ToolSource,
        *,
        cogitator: Cogitator | None = None,
        on_result: ResultCallback | None = None,
        on_update: UpdateCallback | None = None,
        max_result_length: int | None = MAX_RESULT_LENGTH,
    ) -> None:
        self.tools: list[Tool[Any]] = tools_of(source)
        self.index = tool_index(self.tools)  # raises ValueError naming a name used twice
        self.invoker = Invoker(cogitator=cogitator, on_update=on_update, on_result=on_result, max_result_length=max_result_length)

    async def _call(self, name: Any, arguments: Any, call_id: str | None) -> ToolResult:
        # an unknown name is the call's TOOL_NOT_FOUND result, which the model reads
        return await self.invoker(str(name or ""), arguments, call_id=call_id, tools=self.index)


# --- OpenAI Realtime ----------------------------------------------------------------------------


def openai_tool_definitions(tools: Sequence[Tool[Any]]) -> list[dict[str, Any]]:
    """The ``session.tools`` of an OpenAI Realtime session: one function tool per cog tool."""
    return [{"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema()} for t in tools]


class OpenAIRealtimeTools(_Tools):
    """cog's tools in an OpenAI Realtime session: :meth:`session_update` offers them,
    :meth:`handle` answers a finished function call with its content only.

    ``source``: a list of cog tools, a workspace folder (its tools as ``cog mcp`` serves them) or a
    :class:`~cogcli.session.Session`; a call runs through ``cogitator.invoke_tool`` when given."""

    def definitions(self) -> list[dict[str, Any]]:
        return openai_tool_definitions(self.tools)

    def session_update(self, **session: Any) -> dict[str, Any]:
        """The ``session.update`` client event offering the tools (``tool_choice`` ``auto``);
        ``session`` adds other fields of a realtime session (``instructions``, ``audio``, …)."""
        fields = {"type": "realtime", "tool_choice": "auto", **session, "tools": self.definitions()}
        return {"type": "session.update", "session": fields}

    async def handle(self, event: Any) -> dict[str, Any] | None:
        """For a ``response.function_call_arguments.done`` event (a dict as sent on the wire, or the
        ``openai`` SDK's model of it): run the call and return the ``conversation.item.create``
        event whose ``function_call_output.output`` is what the model reads. Send it, then
        :data:`RESPONSE_CREATE`. Any other event: None."""
        if _get(event, "type") != FUNCTION_CALL_DONE:
            return None
        call_id = _get(event, "call_id")
        arguments = _get(event, "arguments")
        result = await self._call(_get(event, "name"), arguments if arguments else None, call_id)
        return {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": result.call_id, "output": self.invoker.model_text(result)},
        }


# --- Gemini Live --------------------------------------------------------------------------------


def gemini_function_declarations(tools: Sequence[Tool[Any]]) -> list[dict[str, Any]]:
    """One ``FunctionDeclaration`` per cog tool, its parameters as JSON Schema."""
    return [{"name": t.name, "description": t.description, "parameters_json_schema": t.input_schema()} for t in tools]


class GeminiLiveTools(_Tools):
    """cog's tools in a Gemini Live session: :meth:`tools_config` offers them, :meth:`handle`
    answers a ``tool_call`` with a ``tool_response`` holding content only.

    ``source``: a list of cog tools, a workspace folder (its tools as ``cog mcp`` serves them) or a
    :class:`~cogcli.session.Session`; a call runs through ``cogitator.invoke_tool`` when given."""

    def function_declarations(self) -> list[dict[str, Any]]:
        return gemini_function_declarations(self.tools)

    def tools_config(self) -> list[dict[str, Any]]:
        """The ``tools`` of a ``LiveConnectConfig``: one tool holding every function declaration."""
        return [{"function_declarations": self.function_declarations()}]

    async def handle(self, tool_call: Any) -> dict[str, Any]:
        """Run each function call of a ``tool_call`` (``LiveServerToolCall``, a server message
        holding one, or their JSON) in order and return the ``tool_response``:
        ``{"function_responses": [{"id", "name", "response": {"output": …}}]}`` (``{"error": …}``
        for a failed call) — ``session.send_tool_response(**reply)`` sends it."""
        inner = _get(tool_call, "tool_call", "toolCall")
        calls = _get(inner if inner is not None else tool_call, "function_calls", "functionCalls") or []
        responses = []
        for call in calls:
            call_id = _get(call, "id")
            result = await self._call(_get(call, "name"), _get(call, "args") or {}, call_id)
            text = self.invoker.model_text(result)
            response = {"output": text} if result.ok else {"error": text.removeprefix("Error: ")}
            reply: dict[str, Any] = {"id": call_id} if call_id else {}
            responses.append({**reply, "name": result.name, "response": response})
        return {"function_responses": responses}


__all__ = [
    "FUNCTION_CALL_DONE",
    "RESPONSE_CREATE",
    "GeminiLiveTools",
    "OpenAIRealtimeTools",
    "gemini_function_declarations",
    "openai_tool_definitions",
]
