"""One path for a tool call: every outcome is concluded exactly once (``on_tool_result`` included),
and ``invoke_tool`` — the Python API, ``Cogitator.invoke_tool``, ``cog tool`` — redacts exactly as a run does."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_helpers import json_lines, run_cog
from runtime_helpers import echo, edit

from cogcli import ToolContext, invoke_tool, tool, tool_output
from cogcli.gate.approval import Decision
from cogcli.contract.context import AbortSignal, ToolUpdate
from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.wire.events import Approval, BaseEvent, ToolResultEvent
from cogcli.contract.invoke import ToolResult
from cogcli.models.scripted import Call, Fail, Hang, ScriptedModel, Turn
from cogcli.loop.runtime import Agent, Cogitator, RunResult
from cogcli.secrets.redactor import REDACTED
from cogcli.contract.tool import NoParameters

#: made up, in the shape of an OpenAI project key
KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2


@tool(parameters=NoParameters)
async def boom(params: Any) -> str:
    """Fail."""
    raise ToolCallError("it broke", code=ErrorCode.TOOL_ERROR)


@tool(parameters=NoParameters)
async def leaky(params: Any, context: ToolContext) -> Any:
    """Report and return a key, and fail with one in its message on request."""
    context.update(content=f"found {KEY}", details={"line": f"key={KEY}"}, presentation={"label": "Leak", "detail": KEY})
    return tool_output({"config": f"api_key = {KEY}"}, presentation={"label": "Leak"})


class Counted:
    """on_tool_result that counts, and the run's tool-result events."""

    def __init__(self) -> None:
        self.calls: list[ToolResult] = []
        self.events: list[BaseEvent] = []

    async def on_tool_result(self, result: ToolResult) -> None:
        await anyio.lowlevel.checkpoint()
        self.calls.append(result)

    def check(self, run: RunResult | None, ids: list[str]) -> dict[str, ToolResult]:
        counts = Counter(r.call_id for r in self.calls)
        assert counts == Counter(ids), f"on_tool_result per call: {dict(counts)}"
        emitted = [e.tool_call_id for e in self.events if e.type == "tool-result"]  # type: ignore[attr-defined]
        assert Counter(emitted) == Counter(ids), f"tool-result events per call: {emitted}"
        if run is not None:
            assert sorted(r.call_id for r in run.tool_calls) == sorted(ids)
        # the callback got exactly what the event says
        by_id = {r.call_id: r for r in self.calls}
        for e in self.events:
            if e.type == "tool-result":  # type: ignore[attr-defined]
                assert ToolResultEvent.of(by_id[e.tool_call_id]).to_wire() == {k: v for k, v in e.to_wire().items() if k not in ("seq", "timestamp")}  # type: ignore[attr-defined]
        return by_id


def agent(model: ScriptedModel, tools: list[Any]) -> Agent:
    return Agent(name="t", instructions="x", model=model, tools=tools)


@pytest.mark.anyio
async def test_ran_failed_invalid_and_unknown_calls_each_reach_on_tool_result_once() -> None:
    model = ScriptedModel([
        Turn("", [Call("ok", "echo", {"text": "hi"}), Call("bad", "boom", {}), Call("args", "echo", {"nope": 1}),
                  Call("json", "echo", '{"text": '), Call("who", "nobody", {})]),
        Turn("done"),
    ])
    seen = Counted()
    result = await Cogitator().run(agent(model, [echo, boom]), input="go", on_event=seen.events.append, on_tool_result=seen.on_tool_result)
    by_id = seen.check(result, ["ok", "bad", "args", "json", "who"])
    assert [by_id[i].error_code for i in ("ok", "bad", "args", "json", "who")] == [
        None, ErrorCode.TOOL_ERROR, ErrorCode.INVALID_ARGUMENTS, ErrorCode.INVALID_ARGUMENTS, ErrorCode.TOOL_NOT_FOUND
    ]


@pytest.mark.anyio
async def test_a_refused_call_reaches_on_tool_result_once() -> None:
    model = ScriptedModel([Turn("", [Call("e1", "edit", {"path": "a.py"}), Call("e2", "echo", {"text": "x"})]), Turn("ok")])

    async def refuse(approvals: list[Approval]) -> dict[str, Any]:
        return {a.tool_call_id: Decision(False, "not today") for a in approvals}

    seen = Counted()
    result = await Cogitator().run(
        agent(model, [edit, echo]), input="go", on_event=seen.events.append, on_tool_result=seen.on_tool_result, approve=refuse
    )
    by_id = seen.check(result, ["e1", "e2"])
    assert by_id["e1"].error_code == ErrorCode.DENIED and by_id["e2"].ok


@pytest.mark.anyio
async def test_calls_cut_off_by_a_failed_stream_reach_on_tool_result_once() -> None:
    # c2 complete, c3 started with its arguments unfinished, then the stream fails
    cut = Turn("", [Call("c2", "echo", {"text": "x"}), Call("c3", "echo", {"text": "y"})])
    events_before_c3_ends = next(i for i, e in enumerate(cut.events()) if getattr(e, "id", None) == "c3" and e.type == "tool-call-delta") + 1
    model = ScriptedModel([Turn("", [Call("c1", "echo", {"text": "one"})]), Fail(cut, after=events_before_c3_ends)])
    seen = Counted()
    result = await Cogitator().run(agent(model, [echo]), input="go", on_event=seen.events.append, on_tool_result=seen.on_tool_result)
    assert result.status == "error"
    by_id = seen.check(result, ["c1", "c2", "c3"])
    assert by_id["c2"].error_code == by_id["c3"].error_code == ErrorCode.MODEL_STREAM_ERROR


@pytest.mark.anyio
async def test_calls_of_an_aborted_stream_and_an_after_model_failure_reach_on_tool_result_once() -> None:
    hang = Hang(Turn("", [Call("h1", "echo", {"text": "half"})]), after=3)
    model = ScriptedModel([hang])
    signal = AbortSignal()
    seen = Counted()

    async def abort_when_hanging() -> None:
        await hang.started.wait()
        signal.abort()

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_when_hanging)
        with anyio.fail_after(30):
            result = await Cogitator().run(
                agent(model, [echo]), input="go", on_event=seen.events.append, on_tool_result=seen.on_tool_result, signal=signal
            )
    assert result.status == "aborted"
    assert seen.check(result, ["h1"])["h1"].error_code == ErrorCode.ABORTED

    def after_model(call: Any) -> None:
        raise ValueError("policy engine down")

    seen = Counted()
    model = ScriptedModel([Turn("", [Call("m1", "echo", {"text": "x"})])])
    result = await Cogitator().run(
        agent(model, [echo]), input="go", on_event=seen.events.append, on_tool_result=seen.on_tool_result, after_model=after_model
    )
    assert result.status == "error"
    assert seen.check(result, ["m1"])["m1"].error_code == ErrorCode.TOOL_ERROR


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["signal", "cancel"])
async def test_a_running_call_aborted_or_cancelled_reaches_on_tool_result_once(how: str) -> None:
    started = anyio.Event()

    @tool(parameters=NoParameters)
    async def hangs(params: Any) -> str:
        """Hang."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    model = ScriptedModel([Turn("", [Call("r1", "hangs", {}), Call("r2", "echo", {"text": "quick"})]), Turn("done")])
    signal = AbortSignal()
    seen = Counted()
    result: RunResult | None = None

    async def go() -> None:
        nonlocal result
        result = await Cogitator().run(
            agent(model, [hangs, echo]), input="go", on_event=seen.events.append, on_tool_result=seen.on_tool_result, signal=signal
        )

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await started.wait()
            if how == "signal":
                signal.abort()
            else:
                tg.cancel_scope.cancel()  # the caller gives up on the run
    by_id = seen.check(result, ["r1", "r2"])
    assert by_id["r1"].error_code == ErrorCode.ABORTED


# --- redaction: invoke_tool as a run ----------------------------------------------------------


@pytest.mark.anyio
async def test_invoke_tool_redacts_its_result_and_updates_exactly_as_a_run_does() -> None:
    updates: list[ToolUpdate] = []
    direct = await invoke_tool(leaky, {}, call_id="c1", on_update=updates.append)
    method_updates: list[ToolUpdate] = []
    method = await Cogitator().invoke_tool(leaky, {}, on_update=method_updates.append)

    in_run: list[ToolResult] = []
    run_updates: list[ToolUpdate] = []
    model = ScriptedModel([Turn("", [Call("c1", "leaky", {})]), Turn("done")])
    await Cogitator().run(agent(model, [leaky]), input="go", on_tool_result=in_run.append, on_tool_update=run_updates.append)

    for result in (direct, method):
        assert KEY not in json.dumps(result.model_dump(mode="json"))
        assert result.result == in_run[0].result == {"config": f"api_key = {REDACTED}"}
        assert result.redacted == in_run[0].redacted == 1
    for seen in (updates, method_updates, run_updates):
        (update,) = seen
        assert (update.content, update.details, update.presentation.detail) == (  # type: ignore[union-attr]
            f"found {REDACTED}", {"line": f"key={REDACTED}"}, REDACTED
        )


@pytest.mark.anyio
async def test_invoke_tool_redacts_a_failed_calls_message() -> None:
    @tool(parameters=NoParameters)
    async def login(params: Any) -> str:
        """Fail with the key in the message."""
        raise ToolCallError(f"401 for {KEY}")

    failed = await invoke_tool(login, {})
    assert failed.error == f"401 for {REDACTED}" and failed.redacted == 1


def test_cog_tool_never_prints_a_key_in_clear(make_repo) -> None:
    repo: Path = make_repo("calc")
    (repo / "calc" / "settings.py").write_text(f'OPENAI_KEY = "{KEY}"\n')
    # (what search_text puts in its details is not redacted in a run either: details stay exact)
    for args in (["tool", "read_file", "path=calc/settings.py"], ["tool", "read_file", "path=calc/settings.py", "--json"],
                 ["tool", "search_text", "pattern=OPENAI_KEY"]):
        out = run_cog(args, repo)
        assert out.returncode == 0, out.stderr
        assert KEY not in out.stdout and KEY not in out.stderr
        assert REDACTED in out.stdout
    events = json_lines(run_cog(["tool", "read_file", "path=calc/settings.py", "--json"], repo).stdout)
    assert events[-1]["redacted"] == 1


def test_an_update_is_redacted_wherever_its_text_is_and_left_as_it_is_without_secrets() -> None:
    from cogcli.contract.presentation import ToolPresentation
    from cogcli.secrets.redactor import update_redactor

    redact = update_redactor({"DEPLOY_TOKEN": "hunter2-deploy-value"})
    clean = ToolUpdate("c", "t", "3 passed", {"passed": 3, "current": "a.py::x", "ids": [1, 2.5, None]}, ToolPresentation(label="Run"))
    assert redact(clean) is clean
    nested = ToolUpdate("c", "t", ["ok", {"env": "pw=hunter2-deploy-value"}], {KEY: [{"k": f"\n{KEY}"}]}, None)
    out = redact(nested)
    assert out.content == ["ok", {"env": f"pw={REDACTED}"}]
    assert out.details == {REDACTED: [{"k": f"\n{REDACTED}"}]}


@pytest.mark.anyio
async def test_a_model_turn_streams_into_wire_events_without_a_run() -> None:
    from cogcli.loop.turn import stream_turn

    model = ScriptedModel([Turn("Editing.", [Call("c1", "edit", {"path": "a.py"}), Call("c2", "echo", "{bad")])])
    events: list[BaseEvent] = []
    turn = await stream_turn(model, [], [], emit=events.append, signal=AbortSignal())
    assert turn.cut is None and turn.text == "Editing." and turn.usage.total_tokens == 15
    assert [(c.id, c.arguments, c.problem is None) for c in turn.calls] == [("c1", {"path": "a.py"}, True), ("c2", "{bad", False)]
    kinds = [e.type for e in events]  # type: ignore[attr-defined]
    assert kinds[0] == "text-start" and kinds.count("tool-call-end") == 2 and kinds.index("text-end") < kinds.index("tool-call-start")


@pytest.mark.anyio
async def test_the_finish_event_the_thread_and_run_result_share_one_end() -> None:
    model = ScriptedModel([Turn("", [Call("e1", "edit", {"path": "a.py"}), Call("t1", "run_tests", {"text": "a,b"})]), Turn("done")])
    from runtime_helpers import run_tests

    events: list[BaseEvent] = []
    cog = Cogitator()
    result = await cog.run(agent(model, [edit, run_tests]), input="go", on_event=events.append)
    live = events[-1]
    assert live.type == "finish"  # type: ignore[attr-defined]
    redrawn = cog.store.thread_events(result.thread_id)[-1]
    strip = {"seq", "timestamp", "durationMs"}
    assert {k: v for k, v in redrawn.to_wire().items() if k not in strip} == {k: v for k, v in live.to_wire().items() if k not in strip}
    assert (result.status, result.files_changed, result.tests) == (live.status, live.files_changed, live.tests)  # type: ignore[attr-defined]
    assert result.tests == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}
    assert [(f.path, f.added, f.removed) for f in result.files_changed] == [("a.py", 1, 1)]
