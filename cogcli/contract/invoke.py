"""invoke_tool(): the one place a call is run, timed out, its updates forwarded and its result split;
:func:`preview_call`, the one place a call's preview is run (what it would do, shown before approval).

    result = await invoke_tool(edit_file, {"path": "a.py", "old_text": "foo", "new_text": "bar"})

The call is prepared once (:func:`cogcli.contract.prepare.prepare`: looked up, parsed, validated, its
presentation resolved), run by :func:`run_prepared` under its timeout and the abort signal (each
progress update redacted as it streams), and its result split (content / details / presentation).

A result is redacted exactly once, by whoever hands it out: :func:`invoke_tool` for a call made on
its own (``cog tool``, ``cog mcp``, the Python API), :class:`cogcli.loop.conclude.Conclude` for the calls
of a run — both with :func:`cogcli.secrets.redactor.redact_result`. :func:`run_prepared` does not redact.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from cogcli.contract.prepare import PreparedCall, Tools, format_validation_error, prepare
from cogcli.contract.context import AbortSignal, ToolContext, UpdateCallback, cancel_on_abort
from cogcli.contract.errors import CogError, ErrorCode
from cogcli.contract.output import ImageContent, ToolOutputResult
from cogcli.contract.presentation import ToolPresentation
from cogcli.contract.preview import Preview, as_preview
from cogcli.contract.result import ToolResult, new_call_id
from cogcli.secrets.redactor import redact_result, redacted_traceback, update_redactor
from cogcli.contract.tool import Tool, _positional_arity
from cogcli.shown.approval import arguments_too_long

__all__ = ["ToolResult", "format_validation_error", "invoke_tool", "new_call_id", "preview_call", "run_prepared"]

log = logging.getLogger("cogcli")


class _Failure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _jsonable(value: Any, what: str, tool_name: str) -> Any:
    if value is None or isinstance(value, (str, int, float, bool, ImageContent)):
        return value  # an image stays one: its bytes go to the model, only its facts serialize
    try:
        return to_jsonable_python(value)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise _Failure(
            ErrorCode.RESULT_NOT_SERIALIZABLE,
            f"tool {tool_name} returned {what} that cannot be sent as JSON ({exc}); "
            "return strings, numbers, lists, dicts or pydantic models",
        ) from None


_TRACER: Any = ...


def _tracer() -> Any:
    """opentelemetry's tracer when opentelemetry-api is installed and this process uses it, else
    None (no hard dependency). A span is recorded only by a tracer provider someone set up, and
    setting one up imports ``opentelemetry.trace`` (or names one in ``OTEL_PYTHON_TRACER_PROVIDER``,
    which the API loads on first use); before that, a call's span would be a no-op, so a one-off
    call (``cog tool``) does not import the API to make one. Not kept while unused: a provider set
    up later traces the calls made after it."""
    global _TRACER
    if _TRACER is ...:
        if "opentelemetry.trace" not in sys.modules and not os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"):
            return None
        try:
            from opentelemetry import trace
        except ImportError:
            _TRACER = None
        else:
            _TRACER = trace.get_tracer("cogcli")
    return _TRACER


@contextlib.contextmanager
def _span(tool_name: str, call_id: str) -> Iterator[Any]:
    tracer = _tracer()
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(f"tool {tool_name}", record_exception=False, set_status_on_exception=False) as span:
        span.set_attribute("tool.name", tool_name)
        span.set_attribute("tool.call_id", call_id)
        yield span


async def _run_execute(tool: Tool[Any], params: BaseModel, ctx: ToolContext) -> Any:
    return await call_function(tool.execute, (params, ctx)[: tool.arity], tool.is_async)


async def call_function(fn: Callable[..., Any], args: tuple[Any, ...], is_async: bool) -> Any:
    """Call a tool's function (``execute``, ``preview``) as a run does: an async one awaited, a sync
    one in a worker thread (left behind when cancelled), an awaitable it returns awaited."""
    if is_async:
        value = await fn(*args)
    else:
        value = await anyio.to_thread.run_sync(functools.partial(fn, *args), abandon_on_cancel=True)
    if inspect.isawaitable(value):
        value = await value
    return value


#: how long a tool's preview may take before the call ends unasked (never asked about without it)
PREVIEW_TIMEOUT_S = 30.0


async def preview_call(call: PreparedCall, *, planned: Preview | None = None, signal: Any = None) -> Preview | ToolResult | None:
    """What ``call`` would do, from its tool's ``preview`` (None: the tool has none, and it is shown
    by its arguments), or the result the call already is — it then ends with that error and nobody
    is asked — when the preview shows it cannot work (a :class:`CogError`: ``old_text`` not
    found), when the preview failed or took longer than :data:`PREVIEW_TIMEOUT_S` (a person is
    never asked without the preview a call should have), or, with no preview, when its arguments
    are too long to show whole (:func:`cogcli.shown.approval.arguments_too_long`). ``planned``: the preview of the call before it in the
    turn on the same path (``context.planned``)."""
    tool = call.tool
    if tool is None or call.params is None:
        return None
    if tool.preview is None:  # shown by its arguments, all of them, or not asked about at all
        why = arguments_too_long(call.arguments)
        return None if why is None else call.outcome(ErrorCode.INVALID_ARGUMENTS, f"{call.name} was not run: {why}.")
    context = ToolContext(call.id, call.name, signal=signal, planned=planned)
    args = (call.params, context)[: min(_positional_arity(tool.preview), 2)]
    preview = tool.preview

    try:
        value: Any = None
        error: Exception | None = None
        with anyio.fail_after(PREVIEW_TIMEOUT_S):
            async with anyio.create_task_group() as tg:  # an abort stops the wait (the run then ends each call ABORTED)
                if signal is not None:
                    tg.start_soon(cancel_on_abort, signal, tg.cancel_scope)
                try:
                    value = await call_function(preview, args, inspect.iscoroutinefunction(preview))
                except Exception as exc:  # raised below, outside the task group (which would wrap it)
                    error = exc
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        return as_preview(value)
    except CogError as exc:
        return call.outcome(exc.code, exc.message)
    except Exception as exc:  # a person is never asked about a call without the preview it should have
        trace = redacted_traceback(exc)
        log.warning("the preview of %s failed; the call ends unasked\n%s", call.name, trace)
        why = "it took too long" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        return call.outcome(
            ErrorCode.TOOL_ERROR,
            f"{call.name} was not run: what it would do could not be shown for approval ({why}), and cog never asks "
            "about a call without showing it. Nothing was changed",
        )
    finally:
        context.close()


async def invoke_tool(
    tool: Tool[Any] | str,
    args: Mapping[str, Any] | str | None = None,
    *,
    tools: Tools | None = None,
    call_id: str | None = None,
    on_update: UpdateCallback | None = None,
    timeout: float | None = None,
    signal: AbortSignal | None = None,
) -> ToolResult:
    """Validate ``args``, run ``tool`` under its timeout and the abort ``signal``, forward its
    ``context.update()`` calls to ``on_update`` and split what it returned.

    ``tool`` may be a name looked up in ``tools``; ``args`` may be the JSON text a model sent.
    Never raises for a failed call: the :class:`ToolResult` carries ``error`` and ``error_code``.
    Credentials are taken out of the result and of every update, as in a run.
    """
    call = prepare(tool, args, call_id=call_id or new_call_id(), tools=tools)
    # the one redaction of a call made on its own (a run's calls are redacted when concluded)
    return redact_result(await run_prepared(call, on_update=on_update, timeout=timeout, signal=signal))


async def run_prepared(
    call: PreparedCall,
    *,
    on_update: UpdateCallback | None = None,
    timeout: float | None = None,
    signal: AbortSignal | None = None,
) -> ToolResult:
    """Run a :class:`PreparedCall` (or return the result it already is): the one path every call
    takes, from a run, ``cog tool``, ``cog mcp`` or the Python API. Its updates are redacted as they
    stream; its result is not yet — whoever hands it out redacts it once (:func:`invoke_tool`, or
    the run's :class:`~cogcli.loop.conclude.Conclude`)."""
    started = time.perf_counter()
    with _span(call.name, call.id) as span:
        if call.failed is not None:
            result = call.failed
        else:
            result = await _execute(call, _redacting(on_update), timeout, signal, started)
        if span is not None and result.error_code is not None:
            span.set_attribute("error.type", result.error_code)
            from opentelemetry.trace import Status, StatusCode

            # the code, not the message: the span is exported before the result is redacted
            span.set_status(Status(StatusCode.ERROR, result.error_code))
    return result


def _redacting(on_update: UpdateCallback | None) -> UpdateCallback | None:
    """``on_update`` behind redaction: nobody watching a call sees a credential in its progress."""
    if on_update is None:
        return None
    redact = update_redactor()
    return lambda update: on_update(redact(update))


async def _execute(
    call: PreparedCall,
    on_update: UpdateCallback | None,
    timeout: float | None,
    signal: AbortSignal | None,
    started: float,
) -> ToolResult:
    tool, name = call.tool, call.name
    assert tool is not None and call.params is not None

    def failed(code: str, message: str) -> ToolResult:
        return call.outcome(code, message, (time.perf_counter() - started) * 1000)

    if signal is not None and signal.aborted:
        return failed(ErrorCode.ABORTED, f"{name} was not run: the run was aborted")
    limit = timeout if timeout is not None else tool.timeout
    ctx = ToolContext(call.id, name, signal=signal, on_update=on_update, sandboxed=tool.sandboxed, approved=call.preview)
    try:
        cut_short, value, error = await _run_bounded(tool, call.params, ctx, limit, signal)
    finally:
        ctx.close()
    if cut_short:
        if signal is not None and signal.aborted:
            return failed(ErrorCode.ABORTED, f"{name} was aborted before it finished")
        return failed(ErrorCode.TOOL_TIMEOUT, f"{name} timed out after {limit:g} s and was cancelled")
    if error is not None:
        if isinstance(error, CogError):
            return failed(error.code, error.message)
        if log.isEnabledFor(logging.ERROR):
            log.error("tool %s raised\n%s", name, redacted_traceback(error))
        return failed(ErrorCode.TOOL_ERROR, f"{type(error).__name__}: {error}")
    try:
        content, details, own = _split(tool, value)
    except _Failure as f:
        return failed(f.code, f.message)
    return ToolResult(
        call_id=call.id,
        name=name,
        arguments=call.arguments,
        result=content,
        details=details,
        presentation=own or call.presentation,
        duration_ms=(time.perf_counter() - started) * 1000,
    )


async def _run_bounded(
    tool: Tool[Any], params: BaseModel, ctx: ToolContext, limit: float | None, signal: AbortSignal | None
) -> tuple[bool, Any, BaseException | None]:
    """Run ``execute`` under the time ``limit`` and the abort ``signal``: (cut short, value, error)."""
    value: Any = None
    error: BaseException | None = None
    with anyio.CancelScope() as scope:
        if limit is not None:
            scope.deadline = anyio.current_time() + limit
        if signal is None:
            try:
                value = await _run_execute(tool, params, ctx)
            except Exception as exc:
                error = exc
        else:
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_on_abort, signal, scope)
                try:
                    value = await _run_execute(tool, params, ctx)
                except Exception as exc:
                    error = exc
                tg.cancel_scope.cancel()
    return scope.cancelled_caught, value, error


def _split(tool: Tool[Any], value: Any) -> tuple[Any, Any, ToolPresentation | None]:
    """(content, details, the result's own presentation) of what ``execute`` returned, as JSON
    values; the content checked against the tool's output schema. Raises :class:`_Failure`."""
    own: ToolPresentation | None = None
    details: Any = None
    if isinstance(value, ToolOutputResult):
        value, details, own = value.content, value.details, value.presentation
    content = _jsonable(value, "content", tool.name)
    details = _jsonable(details, "details", tool.name)
    if tool.output_schema is not None:
        try:
            tool.output_schema.model_validate(content)
        except ValidationError as exc:
            lines = format_validation_error(tool.name, exc).split("\n", 1)[-1]
            raise _Failure(
                ErrorCode.INVALID_OUTPUT,
                f"tool {tool.name} returned content that does not match its output schema "
                f"{tool.output_schema.__name__}:\n{lines}",
            ) from None
    return content, details, own
