"""A call's result is redacted exactly once, by whoever hands it out: ``invoke_tool`` for a call made
on its own, the conclude step for the calls of a run — and still in every field on both paths."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import anyio
import pytest
from runtime_helpers import echo, edit

import cogcli.contract.invoke
import cogcli.loop.conclude
from cogcli import ToolContext, invoke_tool, tool, tool_output
from cogcli.gate.approval import Decision
from cogcli.contract.context import ToolUpdate
from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.wire.events import Approval, BaseEvent, ToolResultEvent
from cogcli.contract.invoke import ToolResult
from cogcli.threads.store import ThreadStore, ToolResultEntry
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.loop.runtime import Agent, Cogitator
from cogcli.secrets.redactor import REDACTED
from cogcli.contract.tool import NoParameters

#: made up, in the shape of a GitHub token
KEY = "ghp_" + "Zq8Xw2Vb5Nm7Lk4Jh1Gf3Ds6Ap9Oi0Uy" + "TrEw"


@tool(parameters=NoParameters)
async def leaky(params: Any, context: ToolContext) -> Any:
    """Report a key, and return it in the content, the details and the presentation."""
    context.update(content=f"found {KEY}", details={"line": f"key={KEY}"})
    return tool_output({"config": f"token = {KEY}"}, details={"diff": f"+token = {KEY}\n"}, presentation={"label": "Leak", "detail": KEY})


@tool(parameters=NoParameters)
async def broken(params: Any) -> str:
    """Fail with the key in the message."""
    raise ToolCallError(f"401 for {KEY}", code=ErrorCode.TOOL_ERROR)


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each call's result went through the redactor (by call id)."""
    seen: Counter[str] = Counter()
    real = cogcli.loop.conclude.redact_result

    def counting(result: ToolResult) -> ToolResult:
        seen[result.call_id] += 1
        return real(result)

    for hands_out in (cogcli.loop.conclude, cogcli.contract.invoke):  # a run's calls; a call on its own
        monkeypatch.setattr(hands_out, "redact_result", counting)
    return seen


def assert_clean(result: ToolResult | ToolResultEvent | ToolResultEntry) -> None:
    text = json.dumps(result.model_dump(mode="json"))
    assert KEY not in text
    assert REDACTED in text


@pytest.mark.anyio
async def test_a_call_made_on_its_own_is_redacted_once_in_every_field(passes: Counter[str]) -> None:
    updates: list[ToolUpdate] = []
    ran = await invoke_tool(leaky, {}, call_id="ran", on_update=updates.append)
    failed = await invoke_tool(broken, {}, call_id="failed")
    unknown = await invoke_tool("nobody", {}, call_id="unknown", tools=[echo])
    invalid = await invoke_tool(echo, {"nope": 1}, call_id="invalid")
    method = await Cogitator().invoke_tool(leaky, {}, call_id="method")

    assert passes == Counter({"ran": 1, "failed": 1, "unknown": 1, "invalid": 1, "method": 1})
    for result in (ran, method):
        assert_clean(result)
        assert result.result == {"config": f"token = {REDACTED}"}
        assert result.details == {"diff": f"+token = {REDACTED}\n"}
        assert result.presentation is not None and result.presentation.detail == REDACTED
        assert result.redacted == 3
    assert failed.error == f"401 for {REDACTED}" and failed.redacted == 1
    assert unknown.error_code == ErrorCode.TOOL_NOT_FOUND and invalid.error_code == ErrorCode.INVALID_ARGUMENTS
    (update,) = updates  # progress is redacted as it streams, not by the result's pass
    assert (update.content, update.details) == (f"found {REDACTED}", {"line": f"key={REDACTED}"})


@pytest.mark.anyio
async def test_each_call_of_a_run_is_redacted_once_in_every_field_by_its_conclusion(passes: Counter[str], tmp_path: Any) -> None:
    model = ScriptedModel([
        Turn("", [Call("ran", "leaky", {}), Call("failed", "broken", {}), Call("unknown", "nobody", {}),
                  Call("invalid", "echo", {"nope": 1}), Call("refused", "edit", {"path": "a.py"})]),
        Turn("done"),
    ])

    async def refuse(approvals: list[Approval]) -> dict[str, Any]:
        return {a.tool_call_id: Decision(False, f"not with {KEY}") for a in approvals}

    events: list[BaseEvent] = []
    concluded: list[ToolResult] = []
    updates: list[ToolUpdate] = []

    async def on_tool_result(result: ToolResult) -> None:
        await anyio.lowlevel.checkpoint()
        concluded.append(result)

    store = ThreadStore(tmp_path / "threads.db")
    agent = Agent(name="t", instructions="x", model=model, tools=[leaky, broken, echo, edit])
    run = await Cogitator(store=store).run(
        agent, input="go", on_event=events.append, on_tool_result=on_tool_result, on_tool_update=updates.append, approve=refuse
    )

    ids = ["ran", "failed", "unknown", "invalid", "refused"]
    assert passes == Counter(ids)
    by_id = {r.call_id: r for r in concluded}
    assert sorted(by_id) == sorted(ids)
    assert by_id["ran"].result == {"config": f"token = {REDACTED}"} and by_id["ran"].redacted == 3
    assert by_id["failed"].error == f"401 for {REDACTED}"
    assert by_id["refused"].error_code == ErrorCode.DENIED and KEY not in (by_id["refused"].error or "")
    for result in (*concluded, *run.tool_calls):
        assert KEY not in json.dumps(result.model_dump(mode="json"))
    wire = [e for e in events if isinstance(e, ToolResultEvent)]
    assert sorted(e.tool_call_id for e in wire) == sorted(ids)
    assert all(KEY not in json.dumps(e.to_wire()) for e in wire)
    assert_clean(next(e for e in wire if e.tool_call_id == "ran"))
    stored = [s.entry for s in store.entries(run.thread_id) if isinstance(s.entry, ToolResultEntry)]
    assert len(stored) == len(ids)
    assert all(KEY not in json.dumps(entry.model_dump(mode="json")) for entry in stored)
    (update,) = updates
    assert (update.content, update.details) == (f"found {REDACTED}", {"line": f"key={REDACTED}"})


@pytest.mark.anyio
async def test_a_failed_calls_trace_span_names_its_code_not_its_unredacted_message() -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import cogcli.contract.invoke as invoke_module

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = invoke_module._TRACER
    invoke_module._TRACER = provider.get_tracer("cogcli")
    try:
        result = await invoke_tool(broken, {}, call_id="c-key")
    finally:
        invoke_module._TRACER = previous
    (span,) = exporter.get_finished_spans()
    assert result.error == f"401 for {REDACTED}"
    assert span.status.description == ErrorCode.TOOL_ERROR
    assert KEY not in str(span.status.description) and KEY not in str(dict(span.attributes or {}))


@tool(parameters=NoParameters)
async def crashing(params: Any) -> str:
    """Raise an unexpected error (not a ToolCallError) with the key in its message."""
    raise RuntimeError(f"could not connect with {KEY}")


def test_a_tool_that_raises_logs_its_traceback_without_the_key(caplog: pytest.LogCaptureFixture) -> None:
    """An unexpected exception is logged with its traceback (for the person debugging a tool), and
    that text holds the exception's message: it is redacted like any output, never in clear."""
    with caplog.at_level("ERROR", logger="cogcli"):
        result = anyio.run(lambda: invoke_tool(crashing, {}))
    assert result.error_code == ErrorCode.TOOL_ERROR and KEY not in (result.error or "")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "tool crashing raised" in logged and "RuntimeError" in logged and REDACTED in logged
    assert KEY not in logged
