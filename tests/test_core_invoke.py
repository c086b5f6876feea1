"""The core contract (issue 2): every rule of results-and-progress as a test that fails if it breaks."""

from __future__ import annotations

import logging
import threading
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field

from cogcli import (
    AbortSignal,
    ErrorCode,
    Tool,
    ToolCallError,
    ToolPresentation,
    ToolUpdate,
    invoke_tool,
    is_tool_output_result,
    presentation_json_schema,
    tool,
    tool_output,
    tool_output_content,
)


class EditParams(BaseModel):
    path: str
    old_text: str
    new_text: str


class UrlParams(BaseModel):
    url: str
    retries: int = 2


@tool(presentation=lambda p: {"label": "Edit file", "icon": "file-pen", "detail": p.path})
async def edit_file(params: EditParams) -> Any:
    """Replaces text in a file"""
    return tool_output(
        content={"path": params.path, "replacements": 1},
        details={"diff": f"--- a/{params.path}\n+++ b/{params.path}\n-{params.old_text}\n+{params.new_text}\n"},
    )


# --- rule 1: only content is what a model reads ---------------------------------------------


def test_tool_output_helpers_tell_split_results_from_plain_ones() -> None:
    out = tool_output({"n": 1}, details={"diff": "x"}, presentation={"label": "L"})
    assert is_tool_output_result(out)
    assert not is_tool_output_result({"n": 1})
    assert tool_output_content(out) == {"n": 1}
    assert tool_output_content("plain") == "plain"
    assert out.presentation == ToolPresentation(label="L")


@pytest.mark.anyio
async def test_model_reads_content_only_and_the_app_gets_everything() -> None:
    result = await invoke_tool(edit_file, {"path": "src/a.py", "old_text": "foo", "new_text": "bar"})
    assert result.ok
    assert result.result == {"path": "src/a.py", "replacements": 1}
    assert result.details["diff"].startswith("--- a/src/a.py")
    assert result.presentation == ToolPresentation(label="Edit file", icon="file-pen", detail="src/a.py")
    text = result.model_text()
    assert '"replacements": 1' in text
    assert "+++" not in text and "diff" not in text
    assert "Edit file" not in text and "file-pen" not in text


@pytest.mark.anyio
async def test_model_text_is_cut_to_max_length_with_a_visible_marker() -> None:
    @tool()
    async def big(params: UrlParams) -> str:
        """Big"""
        return "x" * 100

    result = await invoke_tool(big, {"url": "u"})
    assert result.result == "x" * 100  # the app gets the whole content
    text = result.model_text(max_length=10)
    assert text.startswith("x" * 10) and "[90 characters cut]" in text


class Replacements(BaseModel):
    replacements: int


@pytest.mark.anyio
async def test_output_schema_validates_content_not_the_container() -> None:
    @tool(output_schema=Replacements)
    async def good(params: UrlParams) -> Any:
        """ok"""
        return tool_output({"replacements": 1}, details={"diff": "..."})

    @tool(output_schema=Replacements)
    async def bad(params: UrlParams) -> Any:
        """bad"""
        return tool_output({"replacements": "many"}, details={"diff": "..."})

    ok = await invoke_tool(good, {"url": "u"})
    assert ok.ok and ok.result == {"replacements": 1}
    failed = await invoke_tool(bad, {"url": "u"})
    assert failed.error_code == ErrorCode.INVALID_OUTPUT
    assert "Replacements" in failed.error and "replacements" in failed.error


# --- rule 2: presentation precedence -----------------------------------------------------------


@pytest.mark.anyio
async def test_presentation_from_arguments_as_the_schema_parsed_them() -> None:
    seen: list[UrlParams] = []

    def present(p: UrlParams) -> ToolPresentation:
        seen.append(p)
        return ToolPresentation(label="Fetch page", icon="globe", detail=f"{p.url} ×{p.retries}")

    @tool(presentation=present)
    async def fetch_page(params: UrlParams) -> str:
        """Fetches a web page"""
        return "<html>"

    result = await invoke_tool(fetch_page, '{"url": "https://example.com", "retries": "3"}')
    assert isinstance(seen[0], UrlParams) and seen[0].retries == 3  # coerced by the schema
    assert result.presentation == ToolPresentation(label="Fetch page", icon="globe", detail="https://example.com ×3")


@pytest.mark.anyio
async def test_results_own_presentation_wins_over_the_tools() -> None:
    @tool(presentation=ToolPresentation(label="Static"))
    async def t(params: UrlParams) -> Any:
        """t"""
        return tool_output("done", presentation=ToolPresentation(label="Own", detail="mine"))

    @tool(presentation={"label": "Static", "icon": "globe"})
    async def s(params: UrlParams) -> str:
        """s"""
        return "done"

    @tool()
    async def none(params: UrlParams) -> str:
        """none"""
        return "done"

    assert (await invoke_tool(t, {"url": "u"})).presentation == ToolPresentation(label="Own", detail="mine")
    assert (await invoke_tool(s, {"url": "u"})).presentation == ToolPresentation(label="Static", icon="globe")
    assert (await invoke_tool(none, {"url": "u"})).presentation is None


@pytest.mark.anyio
async def test_failed_calls_keep_the_tools_presentation() -> None:
    @tool(presentation=lambda p: ToolPresentation(label="Fetch page", detail=p.url))
    async def fetch_page(params: UrlParams) -> str:
        """Fetches"""
        raise ToolCallError("connection refused", code="FETCH_FAILED")

    result = await invoke_tool(fetch_page, {"url": "https://example.com"})
    assert result.error == "connection refused" and result.error_code == "FETCH_FAILED"
    assert result.presentation == ToolPresentation(label="Fetch page", detail="https://example.com")


@pytest.mark.anyio
async def test_static_presentation_survives_invalid_arguments() -> None:
    @tool(presentation=ToolPresentation(label="Fetch page", icon="globe"))
    async def fetch_page(params: UrlParams) -> str:
        """Fetches"""
        return "x"

    result = await invoke_tool(fetch_page, {"retries": 1})
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert result.presentation == ToolPresentation(label="Fetch page", icon="globe")


@pytest.mark.anyio
async def test_a_presentation_function_that_raises_leaves_the_call_without_one(caplog: pytest.LogCaptureFixture) -> None:
    def broken(p: UrlParams) -> ToolPresentation:
        raise KeyError("oops")

    @tool(presentation=broken)
    async def fetch_page(params: UrlParams) -> str:
        """Fetches"""
        return "page"

    with caplog.at_level(logging.WARNING, logger="cogcli"):
        result = await invoke_tool(fetch_page, {"url": "u"})
    assert result.ok and result.result == "page"
    assert result.presentation is None
    assert any("presentation of tool 'fetch_page' failed" in r.getMessage() for r in caplog.records)


def test_presentation_json_schema_is_exported() -> None:
    schema = presentation_json_schema()
    assert schema["required"] == ["label"]
    assert set(schema["properties"]) >= {"label", "icon", "detail"}


# --- rule 3: progress --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_updates_reach_on_update_in_order_with_call_id_and_tool_name() -> None:
    @tool()
    async def run_tests(params: UrlParams, context: Any) -> dict[str, int]:
        """Runs tests"""
        for i in range(5):
            context.update(content=f"test_{i} passed", presentation={"label": "Run tests", "detail": f"test_{i}"})
            await anyio.sleep(0)
        return {"passed": 5}

    updates: list[ToolUpdate] = []
    result = await invoke_tool(run_tests, {"url": "u"}, call_id="call-1", on_update=updates.append)
    assert [u.content for u in updates] == [f"test_{i} passed" for i in range(5)]
    assert {(u.call_id, u.tool_name) for u in updates} == {("call-1", "run_tests")}
    assert updates[2].presentation == ToolPresentation(label="Run tests", detail="test_2")
    # updates are for people watching: nothing of them is in what the model reads
    assert "passed" not in result.model_text().replace('"passed": 5', "")


@pytest.mark.anyio
async def test_a_sync_tool_runs_in_a_worker_thread_and_its_updates_arrive_in_order_on_the_loop_thread() -> None:
    loop_thread = threading.get_ident()
    tool_threads: list[int] = []
    callback_threads: list[int] = []

    @tool()
    def crunch(params: UrlParams, context: Any) -> int:
        """Sync work"""
        tool_threads.append(threading.get_ident())
        for i in range(50):
            context.update(content=i)
        return 50

    def on_update(u: ToolUpdate) -> None:
        callback_threads.append(threading.get_ident())
        got.append(u.content)

    got: list[int] = []
    result = await invoke_tool(crunch, {"url": "u"}, on_update=on_update)
    assert result.result == 50
    assert tool_threads[0] != loop_thread
    assert got == list(range(50))
    assert set(callback_threads) == {loop_thread}


@pytest.mark.anyio
async def test_updates_after_the_tool_returned_are_dropped() -> None:
    leftover: dict[str, Any] = {}

    @tool()
    async def leaves_a_timer(params: UrlParams, context: Any) -> str:
        """Leaves work behind"""
        context.update(content="before return")
        leftover["context"] = context
        return "done"

    updates: list[ToolUpdate] = []
    result = await invoke_tool(leaves_a_timer, {"url": "u"}, on_update=updates.append)
    assert result.ok
    leftover["context"].update(content="after return")  # the timer it left behind fires
    thread = threading.Thread(target=leftover["context"].update, kwargs={"content": "from a thread"})
    thread.start()
    thread.join()
    assert [u.content for u in updates] == ["before return"]


@pytest.mark.anyio
async def test_updates_after_abort_are_dropped_and_the_call_ends_aborted() -> None:
    signal = AbortSignal()
    cleaned_up = anyio.Event()

    @tool()
    async def long_running(params: UrlParams, context: Any) -> str:
        """Long"""
        context.update(content="started")
        signal.abort()  # e.g. Ctrl-C while the tool is running
        context.update(content="after abort")
        try:
            await anyio.sleep(30)
        finally:
            cleaned_up.set()
        return "never"

    updates: list[ToolUpdate] = []
    with anyio.fail_after(10):
        result = await invoke_tool(long_running, {"url": "u"}, on_update=updates.append, signal=signal)
    assert result.error_code == ErrorCode.ABORTED
    assert cleaned_up.is_set()  # the tool's task was cancelled, not left running
    assert [u.content for u in updates] == ["started"]


@pytest.mark.anyio
async def test_abort_from_another_task_cancels_a_waiting_tool() -> None:
    signal = AbortSignal()
    started = anyio.Event()

    @tool()
    async def waits(params: UrlParams, context: Any) -> str:
        """Waits"""
        started.set()
        await anyio.sleep(30)
        return "never"

    results = []

    async def call() -> None:
        results.append(await invoke_tool(waits, {"url": "u"}, signal=signal))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await started.wait()
            signal.abort()
    assert results[0].error_code == ErrorCode.ABORTED


@pytest.mark.anyio
async def test_a_call_is_not_run_when_the_signal_already_fired() -> None:
    ran = []

    @tool()
    async def t(params: UrlParams) -> str:
        """t"""
        ran.append(1)
        return "x"

    signal = AbortSignal()
    signal.abort()
    result = await invoke_tool(t, {"url": "u"}, signal=signal)
    assert result.error_code == ErrorCode.ABORTED and ran == []


@pytest.mark.anyio
async def test_an_on_update_that_raises_is_logged_and_does_not_fail_the_call(caplog: pytest.LogCaptureFixture) -> None:
    @tool()
    async def t(params: UrlParams, context: Any) -> str:
        """t"""
        context.update(content=1)
        context.update(content=2)
        return "ok"

    calls: list[Any] = []

    def bad_callback(u: ToolUpdate) -> None:
        calls.append(u.content)
        raise RuntimeError("renderer crashed")

    with caplog.at_level(logging.WARNING, logger="cogcli"):
        result = await invoke_tool(t, {"url": "u"}, on_update=bad_callback)
    assert result.ok and result.result == "ok"
    assert calls == [1, 2]  # every update was still offered
    assert any("on_update callback failed" in r.getMessage() for r in caplog.records)


@pytest.mark.anyio
async def test_a_sandboxed_tool_reports_no_updates() -> None:
    @tool(sandboxed=True)
    async def in_sandbox(params: UrlParams, context: Any) -> str:
        """Runs elsewhere"""
        context.update(content="invisible")
        return "ok"

    updates: list[ToolUpdate] = []
    result = await invoke_tool(in_sandbox, {"url": "u"}, on_update=updates.append)
    assert result.ok and updates == []


# --- rule 4: errors carry a code ----------------------------------------------------------------


@pytest.mark.anyio
async def test_invalid_arguments_give_pydantic_text_the_model_can_act_on() -> None:
    result = await invoke_tool(edit_file, {"path": "a.py", "old_text": 3})
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert "old_text: Input should be a valid string" in result.error
    assert "new_text: Field required" in result.error
    assert result.model_text().startswith("Error: invalid arguments for edit_file")


@pytest.mark.anyio
async def test_invalid_json_and_non_object_arguments_are_invalid_arguments() -> None:
    bad_json = await invoke_tool(edit_file, '{"path": "a.py", ')
    assert bad_json.error_code == ErrorCode.INVALID_ARGUMENTS and "not valid JSON" in bad_json.error
    assert bad_json.arguments == '{"path": "a.py", '
    not_object = await invoke_tool(edit_file, "[1, 2]")
    assert not_object.error_code == ErrorCode.INVALID_ARGUMENTS and "expected a JSON object" in not_object.error


@pytest.mark.anyio
async def test_unknown_tool_names_the_available_ones() -> None:
    result = await invoke_tool("delete_everything", {}, tools=[edit_file])
    assert result.error_code == ErrorCode.TOOL_NOT_FOUND
    assert "delete_everything" in result.error and "edit_file" in result.error
    found = await invoke_tool("edit_file", {"path": "a", "old_text": "b", "new_text": "c"}, tools={"edit_file": edit_file})
    assert found.ok


@pytest.mark.anyio
async def test_timeout_cancels_the_tools_task() -> None:
    cancelled = []

    @tool(timeout=0.2)
    async def hangs(params: UrlParams) -> str:
        """Hangs"""
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        return "never"

    with anyio.fail_after(10):
        result = await invoke_tool(hangs, {"url": "u"})
    assert result.error_code == ErrorCode.TOOL_TIMEOUT
    assert "timed out after 0.2 s" in result.error
    assert cancelled == [True]
    # the call's timeout argument overrides the tool's
    with anyio.fail_after(10):
        quick = await invoke_tool(hangs, {"url": "u"}, timeout=0.05)
    assert quick.error_code == ErrorCode.TOOL_TIMEOUT and "0.05 s" in quick.error


@pytest.mark.anyio
async def test_a_sync_tool_that_hangs_still_times_out() -> None:
    release = threading.Event()

    @tool()
    def blocks(params: UrlParams, context: Any) -> str:
        """Blocks a thread"""
        release.wait(30)
        context.update(content="late")  # after the timeout: dropped
        return "late"

    updates: list[ToolUpdate] = []
    with anyio.fail_after(10):
        result = await invoke_tool(blocks, {"url": "u"}, timeout=0.2, on_update=updates.append)
    release.set()
    assert result.error_code == ErrorCode.TOOL_TIMEOUT
    await anyio.sleep(0.1)
    assert updates == []


@pytest.mark.anyio
async def test_an_exception_in_execute_is_tool_error_with_message_kept_and_traceback_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool()
    async def explodes(params: UrlParams) -> str:
        """Explodes"""
        raise ValueError("the widget is broken")

    with caplog.at_level(logging.ERROR, logger="cogcli"):
        result = await invoke_tool(explodes, {"url": "u"})
    assert result.error_code == ErrorCode.TOOL_ERROR
    assert result.error == "ValueError: the widget is broken"
    assert "Traceback" not in result.model_text()
    # the traceback is logged as (redacted) text, not as exc_info a handler would print in clear
    assert any("Traceback" in r.getMessage() and "ValueError: the widget is broken" in r.getMessage() for r in caplog.records)


# --- rule 5: not JSON-serialisable -------------------------------------------------------------


@pytest.mark.anyio
async def test_results_that_are_not_json_serialisable_get_a_clear_error() -> None:
    @tool()
    async def returns_a_lock(params: UrlParams) -> Any:
        """Bad result"""
        return {"lock": threading.Lock()}

    @tool()
    async def details_not_json(params: UrlParams) -> Any:
        """Bad details"""
        return tool_output("fine", details={"socket": object()})

    class Rich(BaseModel):
        names: list[str] = Field(default_factory=list)

    @tool()
    async def returns_a_model(params: UrlParams) -> Any:
        """Model result"""
        return Rich(names=["a"])

    r1 = await invoke_tool(returns_a_lock, {"url": "u"})
    assert r1.error_code == ErrorCode.RESULT_NOT_SERIALIZABLE and "content" in r1.error
    r2 = await invoke_tool(details_not_json, {"url": "u"})
    assert r2.error_code == ErrorCode.RESULT_NOT_SERIALIZABLE and "details" in r2.error
    r3 = await invoke_tool(returns_a_model, {"url": "u"})
    assert r3.ok and r3.result == {"names": ["a"]}


# --- rule 6: tracing ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_each_call_is_a_span_when_opentelemetry_is_installed() -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("cogcli")

    import cogcli.contract.invoke as invoke_module

    previous = invoke_module._TRACER
    invoke_module._TRACER = tracer
    try:
        await invoke_tool(edit_file, {"path": "a", "old_text": "b", "new_text": "c"}, call_id="c-ok")
        await invoke_tool(edit_file, {"path": "a"}, call_id="c-bad")
    finally:
        invoke_module._TRACER = previous
    spans = {s.attributes["tool.call_id"]: s for s in exporter.get_finished_spans()}
    assert spans["c-ok"].attributes["tool.name"] == "edit_file"
    assert "error.type" not in spans["c-ok"].attributes
    assert spans["c-bad"].attributes["error.type"] == "INVALID_ARGUMENTS"
    assert spans["c-bad"].status.status_code == trace.StatusCode.ERROR


#: a fresh interpreter: a call made before anything in it uses OpenTelemetry, then one after a provider is set up
_TRACED_LATER = """
import sys, anyio
from pydantic import BaseModel
from cogcli import invoke_tool, tool

class Text(BaseModel):
    text: str

@tool(name="echo", description="echo")
def echo(params: Text) -> str:
    return params.text

assert anyio.run(invoke_tool, echo, {"text": "a"}).ok
print("before", any(m.startswith("opentelemetry") for m in sys.modules))
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
assert anyio.run(invoke_tool, echo, {"text": "b"}).ok
print("spans", [s.name for s in exporter.get_finished_spans()])
"""


def test_a_call_imports_opentelemetry_only_when_the_process_uses_it() -> None:
    """Without a tracer provider a span is a no-op, and setting one up imports opentelemetry.trace:
    a call made before that imports nothing of it (a one-off `cog tool`), one made after is a span."""
    pytest.importorskip("opentelemetry.sdk.trace")
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", _TRACED_LATER], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["before False", "spans ['tool echo']"]


# --- the tool() API ----------------------------------------------------------------------------


def test_tool_function_form_and_decorator_form_build_the_same_contract() -> None:
    async def execute(params: UrlParams, context: Any) -> str:
        return params.url

    t = tool(name="fetch", description="Fetch it", parameters=UrlParams, execute=execute, timeout=5)
    assert isinstance(t, Tool) and t.is_async and t.takes_context and t.timeout == 5
    assert t.spec()["parameters"]["required"] == ["url"]

    @tool()
    def plain(params: UrlParams) -> str:
        """Plain sync tool

        with a longer description."""
        return params.url

    assert plain.name == "plain" and plain.description.startswith("Plain sync tool")
    assert not plain.is_async and not plain.takes_context and plain.parameters is UrlParams


def test_tool_rejects_what_it_cannot_use() -> None:
    with pytest.raises(TypeError, match="pydantic model"):

        @tool()
        async def no_model(x: int) -> None:
            """x"""

    with pytest.raises(TypeError, match="needs name"):
        tool(execute=lambda p: p, description="d", parameters=UrlParams)
    with pytest.raises(ValueError, match="must be letters"):
        tool(name="bad name!", description="d", parameters=UrlParams, execute=lambda p: p)


@pytest.mark.anyio
async def test_a_tool_without_parameters_is_called_with_nothing() -> None:
    @tool()
    async def now() -> str:
        """What time it is"""
        return "noon"

    assert now.arity == 0
    result = await invoke_tool(now, {})
    assert result.ok and result.result == "noon"
