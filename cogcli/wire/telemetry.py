"""OpenTelemetry spans of cog's runs in the GenAI semantic conventions (status: Development).

- ``invoke_agent cog`` (INTERNAL) for a run, from its ``start`` to its ``finish`` event: the agent's
  name, ``gen_ai.conversation.id`` (the thread id), the run's usage, ``error.type`` when it did not
  complete (its error code, or its status: ``max_steps``, ``budget_exceeded``, …);
- ``chat {model}`` (CLIENT) for each model request, a child of the run's span: the model, the
  finish reasons, ``gen_ai.usage.input_tokens`` / ``…output_tokens`` and, with the latest
  conventions, ``…cache_read.input_tokens`` / ``…cache_creation.input_tokens``;
- ``execute_tool {gen_ai.tool.name}`` (INTERNAL) for each call, a child of the run's span:
  ``gen_ai.operation.name=execute_tool``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``, and
  ``error.type`` = cog's error code when it failed (timed from the result's ``duration_ms``).

Which names: the conventions ask instrumentations not to change what they emit by default while
the conventions are in development; ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``
asks for the latest. By default cog emits the v1.36 names (``gen_ai.system`` for the provider);
opted in, ``gen_ai.provider.name`` in its place and the cache usage attributes. Content (arguments,
results, messages) is never recorded.

When: only when asked — ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
set, or ``COG_OTEL=1`` (and not ``OTEL_SDK_DISABLED=true``). This module imports OpenTelemetry
only then (``pip install 'cogcli[otel]'``); a process that set up its own tracer provider keeps it.
The hook is the run's events (:meth:`RunSpans.handle`) and the model (:class:`TracedModel`): the
run loop knows nothing of it.
"""

from __future__ import annotations

import contextvars
import logging
import os
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

log = logging.getLogger("cogcli")

#: the run span the model's requests belong to (set by the run's start event, in the run's task)
_RUN_SPAN: contextvars.ContextVar[Any] = contextvars.ContextVar("cog_run_span", default=None)
_OPT_IN = "gen_ai_latest_experimental"
#: cog's providers under the conventions' well-known names
_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "ollama": "ollama"}


def wanted(env: dict[str, str] | None = None) -> bool:
    """Whether the person asked for spans (an OTLP endpoint, or ``COG_OTEL=1``)."""
    env = dict(os.environ) if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
                or env.get("COG_OTEL", "").strip() in ("1", "true", "yes"))


def latest_conventions() -> bool:
    """``OTEL_SEMCONV_STABILITY_OPT_IN`` names ``gen_ai_latest_experimental`` (a comma-separated list)."""
    return _OPT_IN in {p.strip() for p in os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "").split(",")}


class Telemetry:
    """Makes the spans of a session's runs on one tracer provider."""

    def __init__(self, tracer_provider: Any = None, *, owned: bool = False) -> None:
        from opentelemetry import trace

        from cogcli.version import __version__

        self.provider = tracer_provider
        self.owned = owned
        self.tracer = trace.get_tracer("cogcli", __version__, tracer_provider=tracer_provider)

    @classmethod
    def from_environment(cls) -> Telemetry | None:
        """The process's tracer provider when one was set up, else an SDK provider exporting over
        OTLP/HTTP (the ``OTEL_EXPORTER_OTLP_*`` variables configure it); None, with a warning, when
        the ``otel`` extra is not installed."""
        try:
            from opentelemetry import trace
        except ImportError:
            log.warning("OpenTelemetry is not installed, so no spans are sent: pip install 'cogcli[otel]'")
            return None
        current = trace.get_tracer_provider()
        if type(current).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider"):
            return cls(current)
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            log.warning("the OpenTelemetry SDK or its OTLP exporter is not installed, so no spans are sent: pip install 'cogcli[otel]'")
            return None
        provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "cog")}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return cls(provider, owned=True)

    def run_spans(self, model: str | None) -> RunSpans:
        return RunSpans(self, model)

    def traced(self, model: Any) -> TracedModel:
        return TracedModel(model, self)

    def shutdown(self) -> None:
        """Send what is buffered (a provider cog made is shut down; the process's own is flushed)."""
        if self.provider is None:
            return
        try:
            (self.provider.shutdown if self.owned else self.provider.force_flush)()
        except Exception:
            log.warning("sending the OpenTelemetry spans failed", exc_info=True)


def _provider_attr(spec: str | None) -> dict[str, str]:
    provider = (spec or "").partition(":")[0].lower()
    name = _PROVIDERS.get(provider, provider or "unknown")
    return {"gen_ai.provider.name": name} if latest_conventions() else {"gen_ai.system": name}


def _model_name(spec: str | None) -> str:
    provider, sep, name = (spec or "").partition(":")
    return name if sep and provider != "replay" else (spec or "unknown")


class RunSpans:
    """Spans of the runs whose events it is given (:meth:`handle`, an ``on_event`` hook)."""

    def __init__(self, telemetry: Telemetry, model: str | None) -> None:
        self.telemetry, self.model = telemetry, model
        self.runs: dict[str, tuple[Any, contextvars.Token[Any] | None]] = {}
        self.calls: dict[str, str] = {}
        self.errors: dict[str, str] = {}

    def handle(self, event: Any) -> None:
        try:
            self._handle(event)
        except Exception:  # a span never breaks a run
            log.debug("a span could not be recorded", exc_info=True)

    def _handle(self, event: Any) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

        kind = getattr(event, "type", None)
        if kind == "start":
            span = self.telemetry.tracer.start_span(
                "invoke_agent cog", kind=SpanKind.INTERNAL,
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "cog", "gen_ai.conversation.id": event.thread_id,
                            "gen_ai.request.model": _model_name(self.model), **_provider_attr(self.model)},
            )
            self.runs[event.message_id] = (span, _RUN_SPAN.set(span))
        elif kind == "tool-call-end":
            self.calls[event.id] = event.tool_name
        elif kind == "error":
            self.errors["run"] = event.code or "ERROR"
        elif kind == "tool-result" and (run := _RUN_SPAN.get()) is not None:
            end = time.time_ns()
            start = end - int((event.duration_ms or 0) * 1_000_000)
            name = event.tool_name or self.calls.get(event.tool_call_id or event.id, "unknown")
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                          "gen_ai.tool.call.id": event.tool_call_id or event.id, "gen_ai.tool.type": "function"}
            if event.error_code or event.error:
                attributes["error.type"] = event.error_code or "TOOL_ERROR"
            span = self.telemetry.tracer.start_span(f"execute_tool {name}", context=set_span_in_context(run), kind=SpanKind.INTERNAL,
                                                    attributes=attributes, start_time=start)
            if "error.type" in attributes:
                span.set_status(Status(StatusCode.ERROR, str(attributes["error.type"])))
            span.end(end_time=end)
        elif kind == "finish" and event.message_id in self.runs:
            span, token = self.runs.pop(event.message_id)
            usage = event.usage
            if usage is not None:
                span.set_attributes(_usage_attributes(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens))
            status = str(event.status)
            if status != "completed":
                error = self.errors.pop("run", None) or status
                span.set_attribute("error.type", error)
                span.set_status(Status(StatusCode.ERROR, error))
            span.end()
            if token is not None:
                try:
                    _RUN_SPAN.reset(token)
                except ValueError:  # ended in another context than it started: nothing to put back
                    pass


def _usage_attributes(input_tokens: int, output_tokens: int, cache_read: int | None, cache_write: int | None) -> dict[str, int]:
    attributes = {"gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens}
    if latest_conventions():
        if cache_read is not None:
            attributes["gen_ai.usage.cache_read.input_tokens"] = cache_read
        if cache_write is not None:
            attributes["gen_ai.usage.cache_creation.input_tokens"] = cache_write
    return attributes


class TracedModel:
    """A model whose every request is a ``chat {model}`` span (a child of the run's span)."""

    def __init__(self, model: Any, telemetry: Telemetry) -> None:
        self.inner, self.telemetry = model, telemetry

    def __getattr__(self, name: str) -> Any:  # name, context_window, … of the model it wraps
        return getattr(self.inner, name)

    async def stream(self, messages: Sequence[Any], tools: Sequence[Any]) -> AsyncIterator[Any]:
        from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

        spec = getattr(self.inner, "name", None)
        model = _model_name(spec)
        run = _RUN_SPAN.get()
        span = self.telemetry.tracer.start_span(
            f"chat {model}", context=set_span_in_context(run) if run is not None else None, kind=SpanKind.CLIENT,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model, **_provider_attr(spec)},
        )
        reasons: list[str] = []
        usage = [0, 0, None, None]
        inner = self.inner.stream(messages, tools)
        try:
            async for event in inner:
                kind = getattr(event, "type", None)
                if kind == "usage":
                    usage[0] += event.input_tokens
                    usage[1] += event.output_tokens
                    usage[2] = (usage[2] or 0) + (event.cached_input_tokens or 0)
                    usage[3] = None if event.cache_write_tokens is None else (usage[3] or 0) + event.cache_write_tokens
                elif kind == "turn-end" and event.stop_reason:
                    reasons.append(event.stop_reason)
                yield event
        except GeneratorExit:  # the run stopped reading (it ended, or was aborted mid-turn)
            raise
        except BaseException as exc:
            import anyio

            code = "ABORTED" if isinstance(exc, anyio.get_cancelled_exc_class()) else getattr(exc, "code", None) or type(exc).__name__
            span.set_attribute("error.type", str(code))
            span.set_status(Status(StatusCode.ERROR, str(code)))
            raise
        finally:
            closing = getattr(inner, "aclose", None)
            if closing is not None:
                await closing()
            span.set_attributes(_usage_attributes(usage[0], usage[1], usage[2], usage[3]))
            if reasons:
                span.set_attribute("gen_ai.response.finish_reasons", reasons)
            span.end()

    async def aclose(self) -> None:
        await self.inner.aclose()
