"""invoke_tool(): the one place a call is validated, run, timed out, its updates forwarded and its result split."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from cogcli.context import AbortSignal, ToolContext, UpdateCallback
from cogcli.errors import CogError, ErrorCode
from cogcli.output import ToolOutputResult, content_text, truncate_text
from cogcli.presentation import ToolPresentation, resolve_presentation
from cogcli.tools import Tool

log = logging.getLogger("cogcli")


class ToolResult(BaseModel):
    """One finished call, as ``on_tool_result`` gets it: ``result`` is the whole content,
    ``details`` and ``presentation`` sit beside it. Only :meth:`model_text` reaches a model."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    arguments: Any = None
    result: Any = None
    details: Any = None
    presentation: ToolPresentation | None = None
    error: str | None = None
    error_code: str | None = None
    duration_ms: float = 0.0
    #: credentials replaced by ``[REDACTED]`` in ``result``/``error`` before a model read them (set by the run loop)
    redacted: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    def model_text(self, max_length: int | None = None) -> str:
        """What a model reads of this call: the content (cut to ``max_length``) or the error message."""
        if self.error is not None:
            return _sendable(truncate_text(f"Error: {self.error}", max_length))
        return _sendable(truncate_text(content_text(self.result), max_length))


def _sendable(text: str) -> str:
    """``text`` with any lone surrogate (a file name that is not UTF-8, as Python decodes it) written
    as a visible ``\\udcXX`` escape: what a model reads must encode as UTF-8 to be sent or stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def format_validation_error(tool_name: str, exc: ValidationError) -> str:
    """A pydantic error as a model can act on it: one line per bad field."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        lines.append(f"- {where}: {err.get('msg')}")
    return f"invalid arguments for {tool_name}:\n" + "\n".join(lines)


class _Failure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _parse_arguments(tool_name: str, args: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if args is None or args == "":
        return {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError as exc:
            raise _Failure(
                ErrorCode.INVALID_ARGUMENTS,
                f"invalid arguments for {tool_name}: not valid JSON ({exc.msg} at position {exc.pos}); "
                "send the arguments as one JSON object",
            ) from None
    if not isinstance(args, Mapping):
        raise _Failure(
            ErrorCode.INVALID_ARGUMENTS,
            f"invalid arguments for {tool_name}: expected a JSON object, got {type(args).__name__}",
        )
    return dict(args)


def _jsonable(value: Any, what: str, tool_name: str) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
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
    """opentelemetry's tracer when opentelemetry-api is installed, else None (no hard dependency)."""
    global _TRACER
    if _TRACER is ...:
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


async def _cancel_on_abort(signal: AbortSignal, scope: anyio.CancelScope) -> None:
    await signal.wait()
    scope.cancel()


async def _run_execute(tool: Tool[Any], params: BaseModel, ctx: ToolContext) -> Any:
    args = (params, ctx)[: tool.arity]
    if tool.is_async:
        value = await tool.execute(*args)
    else:
        value = await anyio.to_thread.run_sync(functools.partial(tool.execute, *args), abandon_on_cancel=True)
    if inspect.isawaitable(value):
        value = await value
    return value


async def invoke_tool(
    tool: Tool[Any] | str,
    args: Mapping[str, Any] | str | None = None,
    *,
    tools: Sequence[Tool[Any]] | Mapping[str, Tool[Any]] | None = None,
    call_id: str | None = None,
    on_update: UpdateCallback | None = None,
    timeout: float | None = None,
    signal: AbortSignal | None = None,
) -> ToolResult:
    """Validate ``args``, run ``tool`` under its timeout and the abort ``signal``, forward its
    ``context.update()`` calls to ``on_update`` and split what it returned.

    ``tool`` may be a name looked up in ``tools``; ``args`` may be the JSON text a model sent.
    Never raises for a failed call: the :class:`ToolResult` carries ``error`` and ``error_code``.
    """
    started = time.perf_counter()
    call_id = call_id or new_call_id()
    name = tool if isinstance(tool, str) else tool.name
    with _span(name, call_id) as span:
        result = await _invoke(tool, name, args, tools, call_id, on_update, timeout, signal, started)
        if span is not None and result.error_code is not None:
            span.set_attribute("error.type", result.error_code)
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, result.error))
    return result


async def _invoke(
    tool_or_name: Tool[Any] | str,
    name: str,
    args: Mapping[str, Any] | str | None,
    tools: Sequence[Tool[Any]] | Mapping[str, Tool[Any]] | None,
    call_id: str,
    on_update: UpdateCallback | None,
    timeout: float | None,
    signal: AbortSignal | None,
    started: float,
) -> ToolResult:
    raw_args: Any = args
    presentation: ToolPresentation | None = None

    def failed(code: str, message: str) -> ToolResult:
        return ToolResult(
            call_id=call_id,
            name=name,
            arguments=raw_args,
            presentation=presentation,
            error=message,
            error_code=code,
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    tool = _lookup(tool_or_name, tools)
    if tool is None:
        known = ", ".join(sorted(_names(tools))) or "none"
        return failed(ErrorCode.TOOL_NOT_FOUND, f"unknown tool {name!r}; available tools: {known}")

    presentation = tool.static_presentation()
    try:
        raw_args = _parse_arguments(name, args)
    except _Failure as f:
        return failed(f.code, f.message)
    try:
        params = tool.parameters.model_validate(raw_args)
    except ValidationError as exc:
        return failed(ErrorCode.INVALID_ARGUMENTS, format_validation_error(name, exc))
    presentation = resolve_presentation(tool.presentation, params, name)

    if signal is not None and signal.aborted:
        return failed(ErrorCode.ABORTED, f"{name} was not run: the run was aborted")

    ctx = ToolContext(call_id, name, signal=signal, on_update=on_update, sandboxed=tool.sandboxed)
    limit = timeout if timeout is not None else tool.timeout
    value: Any = None
    error: BaseException | None = None
    try:
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
                    tg.start_soon(_cancel_on_abort, signal, scope)
                    try:
                        value = await _run_execute(tool, params, ctx)
                    except Exception as exc:
                        error = exc
                    tg.cancel_scope.cancel()
    finally:
        ctx.close()

    if scope.cancelled_caught:
        if signal is not None and signal.aborted:
            return failed(ErrorCode.ABORTED, f"{name} was aborted before it finished")
        return failed(ErrorCode.TOOL_TIMEOUT, f"{name} timed out after {limit:g} s and was cancelled")
    if error is not None:
        if isinstance(error, CogError):
            return failed(error.code, error.message)
        log.error("tool %s raised", name, exc_info=error)
        return failed(ErrorCode.TOOL_ERROR, f"{type(error).__name__}: {error}")

    own: ToolPresentation | None = None
    details: Any = None
    if isinstance(value, ToolOutputResult):
        value, details, own = value.content, value.details, value.presentation
    try:
        content = _jsonable(value, "content", name)
        details = _jsonable(details, "details", name)
    except _Failure as f:
        return failed(f.code, f.message)
    if tool.output_schema is not None:
        try:
            tool.output_schema.model_validate(content)
        except ValidationError as exc:
            lines = format_validation_error(name, exc).split("\n", 1)[-1]
            return failed(
                ErrorCode.INVALID_OUTPUT,
                f"tool {name} returned content that does not match its output schema "
                f"{tool.output_schema.__name__}:\n{lines}",
            )
    return ToolResult(
        call_id=call_id,
        name=name,
        arguments=raw_args,
        result=content,
        details=details,
        presentation=own or presentation,
        duration_ms=(time.perf_counter() - started) * 1000,
    )


def _lookup(
    tool: Tool[Any] | str, tools: Sequence[Tool[Any]] | Mapping[str, Tool[Any]] | None
) -> Tool[Any] | None:
    if not isinstance(tool, str):
        return tool
    if tools is None:
        return None
    if isinstance(tools, Mapping):
        return tools.get(tool)
    return next((t for t in tools if t.name == tool), None)


def _names(tools: Sequence[Tool[Any]] | Mapping[str, Tool[Any]] | None) -> list[str]:
    if tools is None:
        return []
    return list(tools) if isinstance(tools, Mapping) else [t.name for t in tools]
