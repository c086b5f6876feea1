"""cog's tools in realtime voice sessions: the events the adapters build validate as the official
SDKs' types (openai's realtime client events, google-genai's Live types), the model gets content
only, details and presentation go to on_result, progress to on_update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.genai import types as genai
from openai.types.realtime import RealtimeClientEvent, ResponseFunctionCallArgumentsDoneEvent
from openai.types.realtime.conversation_item_create_event import ConversationItemCreateEvent
from openai.types.realtime.realtime_conversation_item_function_call_output import RealtimeConversationItemFunctionCallOutput
from openai.types.realtime.session_update_event import SessionUpdateEvent
from pydantic import BaseModel, TypeAdapter

from cogcli import Cogitator, ToolContext, ToolResult, ToolUpdate, tool, tool_output
from cogcli.adapters.realtime import RESPONSE_CREATE, GeminiLiveTools, OpenAIRealtimeTools
from workspace_tools import workspace_tools

pytestmark = pytest.mark.anyio

CLIENT_EVENT = TypeAdapter(RealtimeClientEvent)


class CountParams(BaseModel):
    text: str


@tool(presentation=lambda p: {"label": "Count words", "detail": p.text[:10]})
async def count_words(params: CountParams, context: ToolContext):
    """Counts the words of a text."""
    words = params.text.split()
    for i, word in enumerate(words, 1):
        context.update(content=f"{i}/{len(words)} {word}")
    return tool_output({"words": len(words)}, details={"longest": max(words, key=len)})


def arguments_done(call_id: str, name: str, arguments: str) -> ResponseFunctionCallArgumentsDoneEvent:
    """The server event as the openai SDK's realtime connection yields it."""
    return ResponseFunctionCallArgumentsDoneEvent(
        type="response.function_call_arguments.done", event_id=f"ev-{call_id}", response_id="resp-1",
        item_id=f"item-{call_id}", output_index=0, call_id=call_id, name=name, arguments=arguments,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.md").write_text("# Notes\nsplit results by reader\n")
    return tmp_path


# --- OpenAI Realtime ----------------------------------------------------------------------------


def test_session_update_is_a_valid_client_event_offering_each_tool(workspace: Path) -> None:
    tools = workspace_tools(workspace)
    adapter = OpenAIRealtimeTools(tools)
    event = CLIENT_EVENT.validate_python(adapter.session_update(instructions="You fix code."))
    assert isinstance(event, SessionUpdateEvent)
    assert event.session.instructions == "You fix code." and event.session.tool_choice == "auto"
    assert [(t.type, t.name, t.description, t.parameters) for t in event.session.tools] == [
        ("function", t.name, t.description, t.input_schema()) for t in tools
    ]
    assert CLIENT_EVENT.validate_python(dict(RESPONSE_CREATE)).type == "response.create"


async def test_a_function_call_is_answered_with_content_only(workspace: Path) -> None:
    results: list[ToolResult] = []
    adapter = OpenAIRealtimeTools(workspace_tools(workspace), on_result=results.append)

    reply = await adapter.handle(arguments_done("call-1", "read_file", json.dumps({"path": "notes.md"})))
    event = CLIENT_EVENT.validate_python(reply)
    assert isinstance(event, ConversationItemCreateEvent)
    assert isinstance(event.item, RealtimeConversationItemFunctionCallOutput)
    assert event.item.call_id == "call-1"
    assert event.item.output == "     1\t# Notes\n     2\tsplit results by reader\n" == results[0].model_text()
    assert reply == {"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "call-1", "output": event.item.output}}
    (result,) = results
    assert result.details == {**result.details, "path": "notes.md", "start_line": 1, "end_line": 2}
    assert (result.presentation.label, result.presentation.detail) == ("Read file", "notes.md")
    assert "start_line" not in event.item.output


async def test_event_dicts_from_a_raw_websocket_work_too_and_errors_reach_the_model(workspace: Path) -> None:
    results: list[ToolResult] = []
    adapter = OpenAIRealtimeTools(workspace_tools(workspace), on_result=results.append)
    wire = arguments_done("call-2", "read_file", '{"path": "../outside"}').model_dump(mode="json")

    reply = await adapter.handle(wire)
    event = CLIENT_EVENT.validate_python(reply)
    assert event.item.output.startswith("Error: ") and "leads out of the workspace" in event.item.output
    assert results[-1].error_code == "PATH_OUTSIDE_WORKSPACE"

    unknown = await adapter.handle(arguments_done("call-3", "delete_everything", "{}"))
    assert CLIENT_EVENT.validate_python(unknown).item.output.startswith("Error: unknown tool 'delete_everything'")
    assert results[-1].error_code == "TOOL_NOT_FOUND"

    bad_json = await adapter.handle(arguments_done("call-4", "read_file", '{"path": '))
    assert CLIENT_EVENT.validate_python(bad_json).item.call_id == "call-4"
    assert results[-1].error_code == "INVALID_ARGUMENTS"

    # other server events are not answered
    assert await adapter.handle({"type": "response.function_call_arguments.delta", "delta": "{"}) is None
    assert await adapter.handle({"type": "session.created"}) is None


class RecordingCogitator(Cogitator):
    """A real Cogitator that notes the calls made through its invoke_tool."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any, str | None]] = []

    async def invoke_tool(self, tool: Any, args: Any = None, **options: Any) -> ToolResult:
        self.calls.append((getattr(tool, "name", tool), args, options.get("call_id")))
        return await super().invoke_tool(tool, args, **options)


async def test_updates_go_to_on_update_with_the_session_call_id_through_a_cogitator() -> None:
    cog = RecordingCogitator()
    updates: list[ToolUpdate] = []
    adapter = OpenAIRealtimeTools([count_words], cogitator=cog, on_update=updates.append)
    reply = await adapter.handle(arguments_done("call-9", "count_words", '{"text": "one two"}'))
    assert CLIENT_EVENT.validate_python(reply).item.output == '{"words": 2}'
    assert cog.calls == [("count_words", '{"text": "one two"}', "call-9")]
    assert [(u.call_id, u.content) for u in updates] == [("call-9", "1/2 one"), ("call-9", "2/2 two")]


# --- Gemini Live --------------------------------------------------------------------------------


def test_function_declarations_fit_a_live_connect_config(workspace: Path) -> None:
    tools = workspace_tools(workspace)
    config = genai.LiveConnectConfig.model_validate({"response_modalities": ["AUDIO"], "tools": GeminiLiveTools(tools).tools_config()})
    (declared,) = config.tools
    assert [(d.name, d.description, d.parameters_json_schema) for d in declared.function_declarations] == [
        (t.name, t.description, t.input_schema()) for t in tools
    ]


async def test_a_tool_call_is_answered_with_content_only_in_order(workspace: Path) -> None:
    results: list[ToolResult] = []
    updates: list[ToolUpdate] = []
    adapter = GeminiLiveTools([*workspace_tools(workspace), count_words], on_result=results.append, on_update=updates.append)
    tool_call = genai.LiveServerToolCall(
        function_calls=[
            genai.FunctionCall(id="fc-1", name="read_file", args={"path": "notes.md", "offset": 2}),
            genai.FunctionCall(id="fc-2", name="count_words", args={"text": "split by reader"}),
            genai.FunctionCall(id="fc-3", name="read_file", args={"path": "nope.md"}),
        ]
    )
    reply = await adapter.handle(tool_call)
    response = genai.LiveClientToolResponse.model_validate(reply)

    assert [(r.id, r.name) for r in response.function_responses] == [("fc-1", "read_file"), ("fc-2", "count_words"), ("fc-3", "read_file")]
    first, second, third = (r.response for r in response.function_responses)
    assert first == {"output": "     2\tsplit results by reader\n"}
    assert second == {"output": '{"words": 3}'}
    assert third == {"error": "nope.md does not exist; list_files shows the files there are"}
    assert [r.call_id for r in results] == ["fc-1", "fc-2", "fc-3"]
    assert results[1].details == {"longest": "reader"} and results[1].presentation.label == "Count words"
    assert results[2].error_code == "FILE_NOT_FOUND" and results[2].presentation.label == "Read file"
    assert [(u.call_id, u.content) for u in updates] == [("fc-2", "1/3 split"), ("fc-2", "2/3 by"), ("fc-2", "3/3 reader")]
    assert "longest" not in json.dumps(reply)


async def test_a_server_message_or_its_wire_json_is_read_too(workspace: Path) -> None:
    adapter = GeminiLiveTools([count_words])
    message = genai.LiveServerMessage.model_validate({"toolCall": {"functionCalls": [{"id": "x1", "name": "count_words", "args": {"text": "a b"}}]}})
    expected = {"function_responses": [{"id": "x1", "name": "count_words", "response": {"output": '{"words": 2}'}}]}
    assert await adapter.handle(message) == expected
    assert await adapter.handle(message.model_dump(mode="json", by_alias=True, exclude_none=True)) == expected
    assert await adapter.handle(message.tool_call.model_dump(mode="json", exclude_none=True)) == expected
    # a call without an id (Gemini may leave it out) is answered by name
    no_id = await adapter.handle({"function_calls": [{"name": "count_words", "args": {"text": "a"}}]})
    assert no_id == {"function_responses": [{"name": "count_words", "response": {"output": '{"words": 1}'}}]}
    genai.LiveClientToolResponse.model_validate(no_id)
