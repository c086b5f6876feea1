"""cog's tools inside a real pydantic-ai Agent (driven offline by FunctionModel): the model reads the
content only, the run's ToolReturnParts keep details and presentation in their metadata, progress
goes to on_update, errors reach the model as text with their code in metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cogcli import Cogitator, ToolContext, ToolResult, ToolUpdate, tool, tool_output
from cogcli.adapters.pydantic_ai import to_pydantic_ai_tool, to_pydantic_ai_tools, to_pydantic_ai_toolset
from cogcli.adapters.shared import result_metadata
from workspace_tools import workspace_tools

pytestmark = pytest.mark.anyio

TEST_IDS = ["tests/test_ops.py::test_add", "tests/test_ops.py::test_sub", "tests/test_ops.py::test_mul"]


class Script:
    """A FunctionModel function: one list of parts per turn; keeps the requests the model got."""

    def __init__(self, *turns: list[Any]) -> None:
        self.turns = list(turns)
        self.requests: list[list[ModelMessage]] = []
        self.infos: list[AgentInfo] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        self.infos.append(info)
        return ModelResponse(parts=self.turns.pop(0))


def returns(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    return {p.tool_call_id: p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}


def model_reads(part: ToolReturnPart) -> str:
    """What a provider sends its model of a tool return (pydantic-ai never sends ``metadata``)."""
    return part.model_response_str()


async def test_agent_reads_runs_tests_edits_and_fails_through_the_adapter(make_repo) -> None:
    root = make_repo("calc")
    updates: list[ToolUpdate] = []
    results: dict[str, ToolResult] = {}
    toolset = to_pydantic_ai_toolset(
        workspace_tools(root, sandbox="off"), on_update=updates.append, on_result=lambda r: results.__setitem__(r.call_id, r)
    )
    script = Script(
        [
            ToolCallPart("read_file", {"path": "calc/ops.py", "offset": 2, "limit": 2}, tool_call_id="call-read"),
            ToolCallPart("run_tests", {}, tool_call_id="call-tests"),
            ToolCallPart("read_file", {"path": "missing.py"}, tool_call_id="call-missing"),
            ToolCallPart("read_file", {"file": "calc/ops.py"}, tool_call_id="call-bad"),
        ],
        [ToolCallPart("edit_file", {"path": "calc/ops.py", "old_text": "    return a - b\n\n\ndef sub", "new_text": "    return a + b\n\n\ndef sub"}, tool_call_id="call-edit")],
        [TextPart("fixed add")],
    )
    result = await Agent(FunctionModel(script), toolsets=[toolset]).run("Fix the failing test")

    assert result.output == "fixed add"  # the failed calls did not end the run
    parts = returns(result.all_messages())
    assert set(parts) == set(results) == {"call-read", "call-tests", "call-missing", "call-bad", "call-edit"}
    for call_id, part in parts.items():  # the model read exactly what cog's own runs give their model
        assert part.content == model_reads(part) == results[call_id].model_text(20_000)
        assert part.metadata == result_metadata(results[call_id])

    read = parts["call-read"]
    assert read.content.startswith('     2\t    """Return the sum of a and b."""\n     3\t    return a - b\n')
    assert read.metadata["details"] == {**read.metadata["details"], "path": "calc/ops.py", "start_line": 2, "end_line": 3}
    assert read.metadata["presentation"] == {"label": "Read file", "icon": "file", "detail": "calc/ops.py:2-3"}
    assert read.metadata["error_code"] is None

    tests = parts["call-tests"]
    details = tests.metadata["details"]
    assert (details["passed"], details["failed"], details["tests_total"]) == (2, 1, 3)
    assert [t["id"] for t in details["tests"]] == TEST_IDS
    assert tests.metadata["presentation"]["label"] == "Run tests"
    assert "1 failed, 2 passed" in tests.content
    assert "test session starts" in details["output_tail"] and "test session starts" not in tests.content

    # progress: one update per test, with pydantic-ai's call id — for people watching, never the model
    assert [(u.call_id, u.tool_name, u.content) for u in updates] == [
        ("call-tests", "run_tests", f"{TEST_IDS[0]} failed"),
        ("call-tests", "run_tests", f"{TEST_IDS[1]} passed"),
        ("call-tests", "run_tests", f"{TEST_IDS[2]} passed"),
    ]
    assert [u.details["total_so_far"] for u in updates] == [1, 2, 3]
    assert [u.presentation.detail for u in updates if u.presentation] == TEST_IDS
    seen_by_model = "\n".join(model_reads(p) for p in parts.values())
    assert "total_so_far" not in seen_by_model and f"{TEST_IDS[1]} passed" not in seen_by_model

    missing = parts["call-missing"]
    assert missing.content == "Error: missing.py does not exist; list_files shows the files there are"
    assert missing.metadata == {"details": None, "presentation": {"label": "Read file", "icon": "file", "detail": "missing.py"}, "error_code": "FILE_NOT_FOUND"}
    bad = parts["call-bad"]
    assert bad.content.startswith("Error: invalid arguments for read_file:\n")
    assert "- path: Field required" in bad.content and "- file: read_file takes no such parameter" in bad.content
    assert bad.metadata["error_code"] == "INVALID_ARGUMENTS"

    edit = parts["call-edit"]
    diff = edit.metadata["details"]["diff"]
    assert "-    return a - b\n+    return a + b" in diff
    assert edit.metadata["presentation"]["label"] == "Edit file"
    assert "+    return a + b" not in edit.content  # the diff is the application's, not the model's
    assert "return a + b" in (root / "calc" / "ops.py").read_text()

    # the model saw the results in its next request, with no metadata in what it reads
    second = returns(script.requests[1])
    assert {k: model_reads(v) for k, v in second.items()} == {k: parts[k].content for k in second}


class CountParams(BaseModel):
    text: str
    shout: bool = False


@tool(presentation=lambda p: {"label": "Count words", "detail": p.text[:10]})
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


async def test_one_tool_with_a_cogitator_keeps_its_schema_and_calls_through_invoke_tool() -> None:
    cog = RecordingCogitator()
    updates: list[ToolUpdate] = []
    adapted = to_pydantic_ai_tool(count_words, cogitator=cog, on_update=updates.append)
    script = Script([ToolCallPart("count_words", {"text": "split by reader"}, tool_call_id="c1")], [TextPart("3 words")])
    result = await Agent(FunctionModel(script), tools=[adapted]).run("count")

    (definition,) = script.infos[0].function_tools
    assert (definition.name, definition.description) == ("count_words", "Counts the words of a text.")
    assert definition.parameters_json_schema == count_words.input_schema()
    assert adapted.sequential is False  # no side effects: pydantic-ai may run it beside other calls

    assert cog.calls == [("count_words", {"text": "split by reader"}, "c1")]
    part = returns(result.all_messages())["c1"]
    assert part.content == '{"words": 3}'
    assert part.metadata == {"details": {"longest": "reader"}, "presentation": {"label": "Count words", "detail": "split by r"}, "error_code": None}
    assert [(u.call_id, u.content) for u in updates] == [("c1", "1/3 split"), ("c1", "2/3 by"), ("c1", "3/3 reader")]


async def test_a_long_result_is_cut_like_in_a_run_and_the_whole_stays_with_the_application(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(400)))
    kept: list[ToolResult] = []
    (adapted,) = to_pydantic_ai_tools(workspace_tools(tmp_path, only={"read_file"}), max_result_length=200, on_result=kept.append)
    script = Script([ToolCallPart("read_file", {"path": "big.txt"}, tool_call_id="c1")], [TextPart("ok")])
    result = await Agent(FunctionModel(script), tools=[adapted]).run("read")

    part = returns(result.all_messages())["c1"]
    assert part.content == kept[0].model_text(200)
    assert len(part.content) < 260 and part.content.endswith("characters cut]")
    assert "line 399" in kept[0].result and "line 399" not in part.content


async def test_credentials_never_reach_the_run_messages(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (tmp_path / "settings.py").write_text(f"GITHUB_TOKEN = '{token}'\n")
    script = Script([ToolCallPart("read_file", {"path": "settings.py"}, tool_call_id="c1")], [TextPart("ok")])
    result = await Agent(FunctionModel(script), tools=to_pydantic_ai_tools(workspace_tools(tmp_path, only={"read_file"}))).run("read")

    part = returns(result.all_messages())["c1"]
    assert "[REDACTED]" in part.content
    assert token not in ModelMessagesTypeAdapter.dump_json(result.all_messages()).decode()


async def test_a_folder_gives_its_tools_with_its_own_settings(tmp_path: Path) -> None:
    (tmp_path / "cog.toml").write_text('secret_globs = ["*.private"]\n')
    (tmp_path / "keys.private").write_text("hidden\n")
    tools = to_pydantic_ai_tools(tmp_path)
    assert [t.name for t in tools][:3] == ["read_file", "list_files", "search_text"]
    assert {t.name: t.sequential for t in tools}["edit_file"] is True  # side effects run alone
    script = Script([ToolCallPart("read_file", {"path": "keys.private"}, tool_call_id="c1")], [TextPart("ok")])
    result = await Agent(FunctionModel(script), tools=tools).run("read")
    part = returns(result.all_messages())["c1"]
    assert part.metadata["error_code"] == "SECRET_FILE"
    assert "hidden" not in part.content


def test_bad_sources_are_named(tmp_path: Path) -> None:
    from cogcli.contract.errors import ConfigError

    with pytest.raises(ConfigError, match="is not a directory"):
        to_pydantic_ai_tools(tmp_path / "nope")
    with pytest.raises(ValueError, match="two tools are named 'count_words'"):
        to_pydantic_ai_tools([count_words, count_words])
    with pytest.raises(TypeError, match="expected cog tools"):
        to_pydantic_ai_tools([print])  # type: ignore[list-item]
