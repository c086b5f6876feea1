"""cog's tools in a real OpenAI Agents SDK run (Runner.run with a scripted Model, offline): the
model gets the content only, on_result the whole ToolResult, on_update the progress."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.items import ModelResponse, ToolCallOutputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from pydantic import BaseModel

from cogcli import Cogitator, ToolContext, ToolResult, ToolUpdate, tool, tool_output
from cogcli.adapters.openai_agents import to_function_tool, to_function_tools
from workspace_tools import workspace_tools

pytestmark = pytest.mark.anyio

NO_TRACING = RunConfig(tracing_disabled=True)


def call(call_id: str, name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", id=f"fc-{call_id}", call_id=call_id, name=name, arguments=arguments, status="completed")


def say(text: str) -> ResponseOutputMessage:
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return ResponseOutputMessage(type="message", id="msg", role="assistant", status="completed", content=content)


class ScriptedModel(Model):
    """The SDK's model interface, answering from a script: one list of output items per turn."""

    def __init__(self, *turns: list[Any]) -> None:
        self.turns = list(turns)
        self.inputs: list[Any] = []
        self.tools: list[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **_: Any) -> ModelResponse:  # type: ignore[no-untyped-def]
        self.inputs.append(input)
        self.tools.append(tools)
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests run the SDK without streaming")


def outputs_read_by_model(model_input: list[Any]) -> dict[str, str]:
    """call id → the function_call_output the SDK sent the model in its next request."""
    return {item["call_id"]: item["output"] for item in model_input if isinstance(item, dict) and item.get("type") == "function_call_output"}


async def test_runner_gives_the_model_content_and_on_result_the_rest(make_repo) -> None:
    root = make_repo("calc")
    results: dict[str, ToolResult] = {}
    tools = to_function_tools(workspace_tools(root, sandbox="off"), on_result=lambda r: results.__setitem__(r.call_id, r))
    edit = {"path": "calc/ops.py", "old_text": "    return a - b\n\n\ndef sub", "new_text": "    return a + b\n\n\ndef sub"}
    model = ScriptedModel(
        [
            call("c-read", "read_file", json.dumps({"path": "calc/ops.py", "limit": 3})),
            call("c-status", "git_status", ""),
            call("c-missing", "read_file", json.dumps({"path": "missing.py"})),
            call("c-badjson", "read_file", '{"path": '),
        ],
        [call("c-edit", "edit_file", json.dumps(edit))],
        [say("fixed")],
    )
    run = await Runner.run(Agent(name="coder", model=model, tools=tools), "Fix add", run_config=NO_TRACING)

    assert run.final_output == "fixed"
    read_by_model = outputs_read_by_model(model.inputs[1]) | outputs_read_by_model(model.inputs[2])
    assert set(read_by_model) == set(results) == {"c-read", "c-status", "c-missing", "c-badjson", "c-edit"}
    for call_id, text in read_by_model.items():
        assert text == results[call_id].model_text(20_000)  # what cog's own runs give their model
    assert {i.raw_item["call_id"]: i.output for i in run.new_items if isinstance(i, ToolCallOutputItem)} == read_by_model

    read = results["c-read"]
    assert read_by_model["c-read"].startswith("     1\tdef add(a: int, b: int) -> int:\n")
    assert read.details == {**read.details, "path": "calc/ops.py", "start_line": 1, "end_line": 3}
    assert read.presentation is not None and (read.presentation.label, read.presentation.detail) == ("Read file", "calc/ops.py:1-3")
    assert results["c-status"].ok and results["c-status"].presentation.label == "Git status"

    assert read_by_model["c-missing"] == "Error: missing.py does not exist; list_files shows the files there are"
    assert results["c-missing"].error_code == "FILE_NOT_FOUND"
    assert read_by_model["c-badjson"].startswith("Error: ")
    assert results["c-badjson"].error_code == "INVALID_ARGUMENTS"

    diff = results["c-edit"].details["diff"]
    assert "-    return a - b\n+    return a + b" in diff
    assert "+    return a + b" not in read_by_model["c-edit"]
    assert "return a + b" in (root / "calc" / "ops.py").read_text()


class CountParams(BaseModel):
    text: str
    shout: bool | None = None


@tool(presentation={"label": "Count words"})
async def count_words(params: CountParams, context: ToolContext):
    """Counts the words of a text."""
    words = params.text.split()
    for i, word in enumerate(words, 1):
        context.update(content=f"{i}/{len(words)} {word}")
    return tool_output({"words": len(words)}, details={"longest": max(words, key=len)})


class RecordingCogitator(Cogitator):
    """A real Cogitator that notes the calls made through its invoke_tool."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any, str | None]] = []

    async def invoke_tool(self, tool: Any, args: Any = None, **options: Any) -> ToolResult:
        self.calls.append((getattr(tool, "name", tool), args, options.get("call_id")))
        return await super().invoke_tool(tool, args, **options)


async def test_a_cogitator_runs_the_call_and_updates_carry_the_sdk_call_id() -> None:
    cog = RecordingCogitator()
    updates: list[ToolUpdate] = []
    results: list[ToolResult] = []

    async def keep(result: ToolResult) -> None:  # an async on_result is awaited
        results.append(result)

    function_tool = to_function_tool(count_words, cogitator=cog, on_update=updates.append, on_result=keep)
    model = ScriptedModel([call("c1", "count_words", '{"text": "split by reader"}')], [say("3")])
    await Runner.run(Agent(name="counter", model=model, tools=[function_tool]), "count", run_config=NO_TRACING)

    assert cog.calls == [("count_words", '{"text": "split by reader"}', "c1")]
    assert outputs_read_by_model(model.inputs[1]) == {"c1": '{"words": 3}'}
    assert [(r.details, r.presentation.label) for r in results] == [({"longest": "reader"}, "Count words")]
    assert [(u.call_id, u.tool_name, u.content) for u in updates] == [
        ("c1", "count_words", "1/3 split"),
        ("c1", "count_words", "2/3 by"),
        ("c1", "count_words", "3/3 reader"),
    ]


async def test_the_schema_is_cogs_and_strict_mode_is_the_callers_choice() -> None:
    loose = to_function_tool(count_words)
    assert (loose.name, loose.description, loose.strict_json_schema) == ("count_words", "Counts the words of a text.", False)
    assert loose.params_json_schema == count_words.input_schema()

    strict = to_function_tool(count_words, strict_json_schema=True)
    assert strict.params_json_schema["required"] == ["text", "shout"]  # the SDK's strict form
    assert strict.params_json_schema["additionalProperties"] is False
    # what a strict model must send (the optional field as null) is still valid for cog
    model = ScriptedModel([call("c1", "count_words", '{"text": "a b", "shout": null}')], [say("2")])
    await Runner.run(Agent(name="counter", model=model, tools=[strict]), "count", run_config=NO_TRACING)
    assert outputs_read_by_model(model.inputs[1]) == {"c1": '{"words": 2}'}


async def test_a_folder_gives_its_tools(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    tools = to_function_tools(tmp_path)
    assert [t.name for t in tools] == ["read_file", "list_files", "search_text", "edit_file", "apply_patch", "write_file", "move_file", "delete_file", "git_status",
                                      "git_diff", "run_tests", "run_command", "command_output", "kill_command", "diagnostics"]
    model = ScriptedModel([call("c1", "read_file", '{"path": "a.txt"}')], [say("ok")])
    await Runner.run(Agent(name="reader", model=model, tools=tools), "read", run_config=NO_TRACING)
    assert outputs_read_by_model(model.inputs[1])["c1"].startswith("     1\thello")
