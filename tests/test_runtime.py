"""The run loop with a scripted in-process model: events, concurrency, truncation, the
details/content split, middleware, abort, model errors, limits and threads."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest
from runtime_helpers import (
    SECRET_DIFF,
    Rendezvous,
    big,
    call_events,
    echo,
    edit,
    of_type,
    run_tests,
    without_stamps,
)
from cogcli.models.scripted import Call, Fail, Hang, ScriptedModel, Turn, all_request_text

from cogcli import AbortSignal, ToolResult, tool
from cogcli.contract.errors import ErrorCode
from cogcli.wire.events import BaseEvent, FinishEvent, parse_event
from cogcli.threads.store import AssistantEntry, ThreadStore, ToolResultEntry
from cogcli.models.base import ToolCallRequest
from cogcli.loop.runtime import Agent, Cogitator, RunResult
from cogcli.contract.tool import NoParameters


def agent(model: ScriptedModel, tools: list[Any], **kw: Any) -> Agent:
    return Agent(name="test", instructions="You are a test agent.", model=model, tools=tools, **kw)


async def run(cog: Cogitator, a: Agent, input: str = "do it", **kw: Any) -> tuple[RunResult, list[BaseEvent]]:
    events: list[BaseEvent] = []
    result = await cog.run(a, input=input, on_event=events.append, **kw)
    return result, events


def assert_one_finish(events: list[BaseEvent], status: str) -> FinishEvent:
    finishes = of_type(events, "finish")
    assert len(finishes) == 1
    assert events[-1] is finishes[0]
    assert finishes[0].status == status
    assert [e.seq for e in events] == list(range(len(events)))
    return finishes[0]


# --- events ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_complete_call_carries_the_presentation_its_arguments_make(tmp_path) -> None:
    """``tool-call-end`` names the call's own detail (``Edit file  a.py``) before any approval or
    result, so every client draws the row's header from it; arguments that do not validate give none."""
    model = ScriptedModel([
        Turn("", [Call("c1", "edit", {"path": "src/a.py"}), Call("c2", "edit", {"path": 3}), Call("c3", "echo", {"text": "hi"})]),
        Turn("done"),
    ])
    _, events = await run(Cogitator(ThreadStore(tmp_path / "t.db")), agent(model, [edit, echo]))
    ends = {e.id: e for e in of_type(events, "tool-call-end")}
    assert ends["c1"].presentation is not None and (ends["c1"].presentation.label, ends["c1"].presentation.detail) == ("Edit file", "src/a.py")
    assert ends["c2"].presentation is None  # invalid arguments: its result says why
    assert ends["c3"].presentation is not None and ends["c3"].presentation.label == "Echo"


@pytest.mark.anyio
async def test_events_are_stamped_and_each_call_keeps_its_order() -> None:
    model = ScriptedModel([
        Turn("Running the tests.", [Call("c1", "run_tests", {"text": "t1,t2,t3"})], usage=(100, 10)),
        Turn("All pass.", usage=(200, 20)),
    ])
    cog = Cogitator()
    result, events = await run(cog, agent(model, [run_tests]))

    assert result.status == "completed"
    assert result.output == "All pass."
    assert events[0].type == "start" and events[0].thread_id == result.thread_id
    assert events[0].schema_version == 1
    assert all(e.timestamp and e.timestamp.endswith("Z") for e in events)
    finish = assert_one_finish(events, "completed")
    assert finish.steps == 2 and result.steps == 2
    assert finish.usage.input_tokens == 300 and finish.usage.output_tokens == 30 and finish.usage.total_tokens == 330
    assert result.usage == finish.usage
    assert finish.tests == {"passed": 3, "failed": 0, "errors": 0, "skipped": 0} == result.tests

    kinds = call_events(events, "c1")
    deltas = kinds.count("tool-call-delta")
    assert deltas >= 2
    assert kinds == ["tool-call-start"] + ["tool-call-delta"] * deltas + ["tool-call-end"] + ["tool-update"] * 3 + ["tool-result"]
    start = of_type(events, "tool-call-start")[0]
    assert start.presentation is not None and start.presentation.label == "Run tests"  # static: known at start
    end = of_type(events, "tool-call-end")[0]
    assert end.arguments == {"text": "t1,t2,t3"}
    assert "".join(d.args_text_delta for d in of_type(events, "tool-call-delta")) == json.dumps({"text": "t1,t2,t3"})
    updates = of_type(events, "tool-update")
    assert [u.content for u in updates] == ["t1 passed", "t2 passed", "t3 passed"]
    assert [u.presentation.detail for u in updates] == ["t1", "t2", "t3"]

    # text: start, deltas, end, before the call starts; a second block in the second turn
    texts = [e for e in events if e.type.startswith("text-")]
    first_id = texts[0].id
    first = [e for e in texts if e.id == first_id]
    assert first[0].type == "text-start" and first[-1].type == "text-end"
    assert "".join(e.delta for e in first if e.type == "text-delta") == "Running the tests."
    assert events.index(first[-1]) < events.index(start)
    assert len({e.id for e in texts}) == 2

    # every event survives the wire
    for e in events:
        assert parse_event(json.dumps(e.to_wire())) == e


@pytest.mark.anyio
async def test_calls_of_one_turn_run_concurrently_and_return_in_call_order() -> None:
    meet = Rendezvous().tool()
    model = ScriptedModel([
        Turn("", [Call("ca", "meet", {"text": "a>b"}), Call("cb", "meet", {"text": "b>a"})]),
        Turn("done"),
    ])
    with anyio.fail_after(30):  # run one after the other, the calls would wait for each other forever
        result, events = await run(Cogitator(), agent(model, [meet]))
    assert result.status == "completed"
    # b finished first (live order of results), the model reads them in call order
    assert [e.tool_call_id for e in of_type(events, "tool-result")] == ["cb", "ca"]
    assert [r.call_id for r in result.tool_calls] == ["ca", "cb"]
    tool_messages = [m for m in model.requests[1] if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [("ca", "a met b"), ("cb", "b met a")]


@pytest.mark.anyio
async def test_model_reads_truncated_content_while_callbacks_get_the_whole() -> None:
    model = ScriptedModel([Turn("", [Call("c1", "big", {"size": 500})]), Turn("ok")])
    seen: list[ToolResult] = []
    result, events = await run(Cogitator(), agent(model, [big], max_result_length=100), on_tool_result=seen.append)
    read = [m for m in model.requests[1] if m.role == "tool"][0].content
    assert read.startswith("x" * 100)
    assert read[100:] == "\n…[400 characters cut]"
    assert seen[0].result == "x" * 500
    assert of_type(events, "tool-result")[0].result == "x" * 500
    assert result.tool_calls[0].result == "x" * 500


@pytest.mark.anyio
async def test_details_and_presentation_never_reach_the_model_even_from_a_continued_thread() -> None:
    model = ScriptedModel([
        Turn("Editing.", [Call("c1", "edit", {"path": "notes.txt"})]),
        Turn("Edited notes.txt."),
        Turn("Anything else?"),
    ])
    cog = Cogitator()
    seen: list[ToolResult] = []
    first, events = await run(cog, agent(model, [edit]), on_tool_result=seen.append)
    # the application got the diff and the presentation ...
    assert seen[0].details["diff"] == SECRET_DIFF
    assert seen[0].presentation.label == "Edit file" and seen[0].presentation.detail == "notes.txt"
    assert of_type(events, "tool-result")[0].details["diff"] == SECRET_DIFF
    assert first.files_changed[0].path == "notes.txt"
    assert (first.files_changed[0].added, first.files_changed[0].removed) == (1, 1)
    assert of_type(events, "finish")[0].files_changed == first.files_changed
    # ... the thread keeps them beside what the model read ...
    entries = [s.entry for s in cog.store.entries(first.thread_id)]
    tool_entry = next(e for e in entries if isinstance(e, ToolResultEntry))
    assert tool_entry.metadata.details["diff"] == SECRET_DIFF
    assert tool_entry.tool_results[0].content == json.dumps({"path": "notes.txt", "replacements": 1})

    # ... and a second run on the thread rebuilds the history from the store
    second, _ = await run(cog, agent(model, [edit]), "and now?", thread_id=first.thread_id)
    assert second.thread_id == first.thread_id
    assert len(model.requests) == 3
    sent = all_request_text(model)
    for secret in ("DIFF_MARKER_OLD", "DIFF_MARKER_NEW", "@@ -1 +1 @@", "Edit file", "file-pen"):
        assert secret not in sent
    read = [m.content for request in model.requests[1:] for m in request if m.role == "tool"]
    assert read == [json.dumps({"path": "notes.txt", "replacements": 1})] * 2  # the content did go, both times


@pytest.mark.anyio
async def test_after_model_rewrites_arguments_with_a_tool_update_before_the_call_runs() -> None:
    model = ScriptedModel([Turn("", [Call("c1", "echo", {"text": "streamed"})]), Turn("done")])

    async def after_model(call: ToolCallRequest) -> dict[str, Any] | None:
        return {"text": "rewritten"} if call.arguments == {"text": "streamed"} else None

    cog = Cogitator()
    result, events = await run(cog, agent(model, [echo]), after_model=after_model)
    assert call_events(events, "c1")[-2:] == ["tool-update", "tool-result"]
    update = of_type(events, "tool-update")[0]
    assert update.arguments == {"text": "rewritten"}
    assert of_type(events, "tool-call-end")[0].arguments == {"text": "streamed"}
    assert of_type(events, "tool-result")[0].result == "rewritten"
    assert [m.content for m in model.requests[1] if m.role == "tool"] == ["rewritten"]
    # memory keeps what the model said and what the call ran with; a redraw says so too
    redrawn = cog.store.thread_events(result.thread_id)
    assert [without_stamps(e) for e in of_type(redrawn, "tool-update")] == [without_stamps(update)]


# --- failures go back to the model ---------------------------------------------------------


@pytest.mark.anyio
async def test_invalid_json_and_unknown_tools_are_results_the_model_retries_on() -> None:
    model = ScriptedModel([
        Turn("", [Call("c1", "echo", '{"text": "unterminated'), Call("c2", "nope", {})]),
        Turn("", [Call("c3", "echo", {"text": "fixed"})]),
        Turn("done"),
    ])
    result, events = await run(Cogitator(), agent(model, [echo]))
    assert result.status == "completed"
    by_id = {r.call_id: r for r in result.tool_calls}
    assert by_id["c1"].error_code == ErrorCode.INVALID_ARGUMENTS
    assert by_id["c2"].error_code == ErrorCode.TOOL_NOT_FOUND
    assert by_id["c3"].result == "fixed"
    assert of_type(events, "tool-call-end")[0].arguments == '{"text": "unterminated'
    read = {m.tool_call_id: m.content for m in model.requests[1] if m.role == "tool"}
    assert read["c1"].startswith("Error: invalid arguments for echo: not valid JSON")
    assert "unknown tool 'nope'" in read["c2"] and "echo" in read["c2"]


@pytest.mark.anyio
async def test_max_steps_stops_the_run() -> None:
    model = ScriptedModel([Turn("", [Call(f"c{i}", "echo", {"text": str(i)})]) for i in range(5)])
    result, events = await run(Cogitator(), agent(model, [echo], max_steps=2))
    assert result.status == "max_steps"
    assert result.steps == 2 and len(model.requests) == 2
    assert [r.result for r in result.tool_calls] == ["0", "1"]
    assert_one_finish(events, "max_steps")


@pytest.mark.anyio
async def test_an_on_event_that_raises_is_logged_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([Turn("", [Call("c1", "run_tests", {"text": "t1"})]), Turn("done")])
    seen: list[str] = []

    def on_event(event: BaseEvent) -> None:
        seen.append(event.type)
        raise RuntimeError("renderer broke")

    with caplog.at_level(logging.WARNING, logger="cogcli"):
        result = await Cogitator().run(agent(model, [run_tests]), input="go", on_event=on_event)
    assert result.status == "completed" and result.output == "done"
    assert seen[0] == "start" and seen[-1] == "finish" and "tool-result" in seen
    assert "on_event failed" in caplog.text


# --- terminating: abort, model errors ------------------------------------------------------


@pytest.mark.anyio
async def test_abort_mid_tool_ends_it_aborted_keeps_the_thread_and_sends_one_finish() -> None:
    tool_started = anyio.Event()
    late_updates: list[Any] = []

    @tool(presentation={"label": "Wait"}, parameters=NoParameters)
    async def wait(params: Any, context: Any) -> str:
        """Wait forever."""
        context.update(content="waiting")
        tool_started.set()
        try:
            await anyio.sleep_forever()
        finally:
            context.update(content="too late")  # after abort: dropped
        return "never"

    model = ScriptedModel([
        Turn("First.", [Call("c1", "echo", {"text": "kept"})]),
        Turn("Waiting.", [Call("c2", "wait", {})]),
        Turn("never reached"),
    ])
    signal = AbortSignal()
    cog = Cogitator()
    events: list[BaseEvent] = []

    async def abort_when_started() -> None:
        await tool_started.wait()
        signal.abort("ctrl-c")

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_when_started)
        with anyio.fail_after(30):
            result = await cog.run(
                agent(model, [echo, wait]), input="go", on_event=events.append, signal=signal, on_tool_update=late_updates.append
            )

    assert result.status == "aborted"
    assert_one_finish(events, "aborted")
    assert len(model.requests) == 2  # the model was not asked again
    waited = of_type(events, "tool-result")[-1]
    assert waited.tool_call_id == "c2" and waited.error_code == ErrorCode.ABORTED
    assert [u.content for u in of_type(events, "tool-update")] == ["waiting"]
    assert [u.content for u in late_updates] == ["waiting"]
    # the thread has both steps, the aborted call's result included, and says how it ended
    thread = cog.store.get_thread(result.thread_id)
    assert thread.status == "aborted"
    results = [e.entry for e in thread.entries if isinstance(e.entry, ToolResultEntry)]
    assert [r.tool_results[0].call_id for r in results] == ["c1", "c2"]
    assert results[1].metadata.error_code == ErrorCode.ABORTED
    assert results[1].tool_results[0].content.startswith("Error: wait was aborted")


@pytest.mark.anyio
async def test_abort_while_the_model_streams_stops_the_stream() -> None:
    hang = Hang(Turn("Partial answer", [Call("c2", "echo", {"text": "half"})]), after=6)
    model = ScriptedModel([Turn("", [Call("c1", "echo", {"text": "one"})]), hang])
    signal = AbortSignal()
    cog = Cogitator()
    events: list[BaseEvent] = []

    async def abort_when_hanging() -> None:
        await hang.started.wait()
        signal.abort()

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_when_hanging)
        with anyio.fail_after(30):
            result = await cog.run(agent(model, [echo]), input="go", on_event=events.append, signal=signal)

    assert result.status == "aborted" and result.steps == 2
    assert_one_finish(events, "aborted")
    # the started call is closed in the stream: end (with the text so far) and an ABORTED result
    assert call_events(events, "c2")[0] == "tool-call-start"
    assert call_events(events, "c2")[-2:] == ["tool-call-end", "tool-result"]
    assert of_type(events, "tool-result")[-1].error_code == ErrorCode.ABORTED
    texts = of_type(events, "text-end")
    assert texts, "the open text block was ended"
    # the thread keeps the partial text; a call whose arguments never completed is not kept
    entries = [s.entry for s in cog.store.entries(result.thread_id)]
    last_turn = [e for e in entries if isinstance(e, AssistantEntry)][-1]
    assert last_turn.content == "Partial answer" and last_turn.tool_calls == []


@pytest.mark.anyio
async def test_model_error_ends_the_run_with_an_error_event_and_keeps_the_thread() -> None:
    model = ScriptedModel([
        Turn("Reading.", [Call("c1", "echo", {"text": "one"})]),
        Fail(Turn("Half a sent", [Call("c2", "echo", {"text": "x"})]), after=2, message="stream cut"),
    ])
    cog = Cogitator()
    result, events = await run(cog, agent(model, [echo]))
    assert result.status == "error"
    assert result.error == "stream cut" and result.error_code == ErrorCode.MODEL_STREAM_ERROR
    errors = of_type(events, "error")
    assert [(e.message, e.code) for e in errors] == [("stream cut", "MODEL_STREAM_ERROR")]
    assert_one_finish(events, "error")
    thread = cog.store.get_thread(result.thread_id)
    assert thread.status == "error"
    kinds = [s.entry.kind for s in thread.entries]
    assert kinds == ["user", "assistant", "tool_result", "assistant", "run_end"]
    assert thread.entries[3].entry.content == "Half a sent"[:8]  # the two text deltas that arrived
    redrawn = cog.store.thread_events(result.thread_id)
    assert [(e.message, e.code) for e in of_type(redrawn, "error")] == [("stream cut", "MODEL_STREAM_ERROR")]


@pytest.mark.anyio
async def test_a_broken_store_still_gives_one_finish() -> None:
    class BrokenStore(ThreadStore):
        def append(self, *args: Any, **kw: Any) -> None:
            raise OSError("disk full")

    model = ScriptedModel([Turn("hi")])
    result, events = await run(Cogitator(BrokenStore()), agent(model, []))
    assert result.status == "error" and "disk full" in (result.error or "")
    assert_one_finish(events, "error")


# --- threads -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_continuing_a_thread_by_id_prefix_rebuilds_its_history() -> None:
    model = ScriptedModel([
        Turn("Looking.", [Call("c1", "echo", {"text": "first result"})]),
        Turn("First answer."),
        Turn("Second answer."),
    ])
    cog = Cogitator()
    first, _ = await run(cog, agent(model, [echo]), "first question")
    second, _ = await run(cog, agent(model, [echo]), "second question", thread_id=first.thread_id[:10])
    assert second.thread_id == first.thread_id and second.output == "Second answer."
    roles = [(m.role, m.content) for m in model.requests[2]]
    assert roles == [
        ("system", "You are a test agent."),
        ("user", "first question"),
        ("assistant", "Looking."),
        ("tool", "first result"),
        ("assistant", "First answer."),
        ("user", "second question"),
    ]
    assert model.requests[2][2].tool_calls == [ToolCallRequest(id="c1", name="echo", arguments={"text": "first result"})]
    assert [t.title for t in cog.store.list_threads()] == ["first question"]


@pytest.mark.anyio
async def test_thread_events_redraw_the_rows_the_live_run_drew() -> None:
    model = ScriptedModel([
        Turn("Editing.", [Call("c1", "edit", {"path": "a.py"}), Call("c2", "echo", {"text": "hi"})]),
        Turn("", [Call("c3", "run_tests", {"text": "t1,t2"}), Call("c4", "echo", "{bad json")]),
        Turn("Done."),
    ])
    cog = Cogitator()
    result, live = await run(cog, agent(model, [edit, echo, run_tests]))
    redrawn = cog.store.thread_events(result.thread_id)

    def rows(events: list[BaseEvent]) -> list[dict[str, Any]]:
        return sorted((without_stamps(e) for e in of_type(events, "tool-result")), key=lambda r: r["toolCallId"])

    assert rows(redrawn) == rows(live)
    assert len(rows(live)) == 4
    assert {e.id: e.presentation for e in of_type(redrawn, "tool-call-start")}["c1"].detail == "a.py"
    assert [e.arguments for e in of_type(redrawn, "tool-call-end")] == [e.arguments for e in of_type(live, "tool-call-end")]
    live_text = "".join(e.delta for e in of_type(live, "text-delta"))
    assert "".join(e.delta for e in of_type(redrawn, "text-delta")) == live_text == "Editing.Done."
    finish_live, finish_redrawn = of_type(live, "finish")[0], of_type(redrawn, "finish")[0]
    for key in ("status", "steps", "usage", "files_changed", "tests", "message_id", "thread_id"):
        assert getattr(finish_redrawn, key) == getattr(finish_live, key)
    assert [e.seq for e in redrawn] == list(range(len(redrawn)))
    assert redrawn[0].type == "start" and redrawn[0].message_id == live[0].message_id


@pytest.mark.anyio
async def test_a_cancelled_run_still_sends_one_finish_and_records_its_status() -> None:
    started = anyio.Event()

    @tool(parameters=NoParameters)
    async def hang(params: Any) -> str:
        """Hang."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    model = ScriptedModel([Turn("", [Call("c1", "hang", {})])])
    cog = Cogitator()
    events: list[BaseEvent] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: cog.run(agent(model, [hang]), input="go", on_event=events.append))
            await started.wait()
            tg.cancel_scope.cancel()  # the caller gives up on the run (not through the signal)
    assert_one_finish(events, "aborted")
    assert call_events(events, "c1")[-1] == "tool-result"
    assert of_type(events, "tool-result")[0].error_code == ErrorCode.ABORTED
    thread = cog.store.last_thread()
    assert thread.status == "aborted"
    assert [s.entry.kind for s in thread.entries] == ["user", "assistant", "tool_result", "run_end"]


@pytest.mark.anyio
async def test_an_after_model_that_raises_fails_the_run_and_closes_its_calls() -> None:
    def after_model(call: ToolCallRequest) -> None:
        raise ValueError("policy engine down")

    model = ScriptedModel([Turn("Echoing.", [Call("c1", "echo", {"text": "x"})])])
    cog = Cogitator()
    result, events = await run(cog, agent(model, [echo]), after_model=after_model)
    assert result.status == "error" and "policy engine down" in (result.error or "")
    assert_one_finish(events, "error")
    closed = of_type(events, "tool-result")[0]
    assert closed.tool_call_id == "c1" and closed.error_code == ErrorCode.TOOL_ERROR and closed.result is None
    assert [s.entry.kind for s in cog.store.entries(result.thread_id)] == ["user", "assistant", "tool_result", "run_end"]


def test_files_changed_counts_only_tools_that_write_files() -> None:
    from cogcli.contract.invoke import ToolResult
    from cogcli.loop.runtime import files_changed
    from runtime_helpers import edit

    from cogcli import tool

    @tool(name="git_diff")
    async def git_diff() -> str:
        """Shows the session's diff"""
        return ""

    diff = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n--- a removed line that looks like a header\n+new\n ctx\n"
    results = [
        ToolResult(call_id="1", name="edit", arguments={"path": "a.py"}, details={"diff": diff}),
        ToolResult(call_id="2", name="git_diff", arguments={}, details={"diff": diff}),  # a view: not a change
        ToolResult(call_id="3", name="edit", arguments={"path": "a.py"}, error="no match", error_code="EDIT_NO_MATCH"),
    ]
    changes = files_changed(results, [edit, git_diff])
    assert [(c.path, c.added, c.removed) for c in changes] == [("a.py", 1, 1)]


def test_run_result_keeps_every_field_of_how_the_run_ended() -> None:
    """``RunResult.of`` dropped peak_context_tokens, context_window and compactions (issue 37): every
    field of :class:`cogcli.threads.entries.RunEndFields` is one of RunResult's (``output``, the structured
    answer, as ``structured_output``)."""
    from cogcli.threads.entries import RunEndFields
    from cogcli.threads.run_end import RunEnd
    from cogcli.loop.runtime import RunResult

    assert set(RunEndFields.model_fields) - {"output"} <= set(RunResult.model_fields)
    end = RunEnd(status="completed", steps=2, peak_context_tokens=1234, context_window=8192, compactions=1, output={"a": 1})
    result = RunResult.of(end, output="done", thread_id="t", tool_calls=[])
    assert (result.peak_context_tokens, result.context_window, result.compactions) == (1234, 8192, 1)
    assert result.structured_output == {"a": 1} and result.output == "done" and result.steps == 2
