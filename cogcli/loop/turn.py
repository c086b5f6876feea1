"""One model turn, streamed: model stream events in, wire events out, a :class:`Turn` at the end.

    turn = await stream_turn(model, history, specs, emit=emitter.emit, signal=signal)

Text deltas become ``text-start/-delta/-end``; reasoning ``reasoning-start/-delta/-end`` (each whole
block kept verbatim in :attr:`Turn.reasoning`, for the history to send back); each tool call ``tool-call-start → tool-call-delta*
→ tool-call-end`` (its arguments parsed once, when they are complete; the tool's name as the model wrote it redacted,
escaped and bounded here, where it enters: :func:`cogcli.secrets.names.shown_name`). A stream that fails or is
aborted leaves a turn marked ``cut``; its unfinished calls are the caller's to close. A turn the
model stopped at its output limit (``stop_reason`` ``length`` / ``max_tokens``) completes, but the
arguments of a call it was writing are cut: :meth:`Turn.cut_calls` names them, and the run concludes
them without running them. Testable without a run: give it any :class:`~cogcli.models.base.Model`
and collect what ``emit`` gets.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from cogcli.contract.prepare import PreparedCall, parse_arguments
from cogcli.contract.context import AbortSignal, cancel_on_abort
from cogcli.contract.errors import ModelError
from cogcli.wire.events import (
    BaseEvent,
    ReasoningDeltaEvent,
    ReasoningEndEvent,
    ReasoningStartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
)
from cogcli.models.base import (
    Message,
    Model,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallRequest,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
    UsageReport,
)
from cogcli.contract.presentation import ToolPresentation
from cogcli.secrets.names import shown_name

log = logging.getLogger("cogcli")

#: the stop reasons with which providers say a turn ended at the output limit (OpenAI, Anthropic)
OUTPUT_LIMIT_REASONS = frozenset({"length", "max_tokens"})


@dataclass
class StreamedCall:
    """A tool call as the turn streamed it."""

    id: str
    name: str
    #: the argument text in the fragments it arrived in, joined when read (no copy per fragment:
    #: a megabyte of arguments in 5-character fragments must not take quadratic time)
    parts: list[str] = field(default_factory=list)
    #: set once the call's arguments are complete, parsed once (see :func:`cogcli.contract.prepare.parse_arguments`)
    arguments: Any = None
    problem: str | None = None
    finished: bool = False
    #: the call prepared (looked up, validated, presented) when its arguments were complete; the
    #: run runs this one unless middleware changes the arguments (None: not prepared then)
    prepared: PreparedCall | None = None

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def finish(self, text: str | None = None) -> None:
        if text is not None:
            self.parts = [text]
        self.arguments, self.problem = parse_arguments(self.text)
        self.finished = True

    def request(self) -> ToolCallRequest:
        """The call as memory and the model's history keep it (arguments as streamed)."""
        return ToolCallRequest(id=self.id, name=self.name, arguments=self.arguments if self.finished else parse_arguments(self.text)[0])


@dataclass
class Turn:
    """One model turn as streamed: its text, reasoning and calls."""
    text: str = ""
    #: the turn's reasoning blocks, whole and as the provider sent them (signatures included)
    reasoning: list[Reasoning] = field(default_factory=list)
    #: how long each of ``reasoning`` streamed, in milliseconds (what the thread keeps with it)
    reasoning_ms: list[int] = field(default_factory=list)
    calls: list[StreamedCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    #: the provider's usage reports, as they came (the context budget learns from them)
    reports: list[UsageReport] = field(default_factory=list)
    #: set when the turn did not complete: "aborted" or "error"
    cut: str | None = None
    error: ModelError | None = None
    #: why the model ended the turn, as its client said (``TurnFinished.stop_reason``)
    stop_reason: str | None = None

    @property
    def at_output_limit(self) -> bool:
        """The model stopped because it reached its output limit: whatever it was writing is cut."""
        return self.stop_reason in OUTPUT_LIMIT_REASONS

    def cut_calls(self) -> list[int]:
        """The indexes of the calls whose arguments the output limit cut: in a turn stopped at the
        limit, each call whose argument text is not a whole JSON object (an object closes only at
        its end, so a whole one was not cut; several calls streamed interleaved cannot be told
        apart otherwise). Empty in any other turn."""
        if not self.at_output_limit:
            return []
        return [i for i, call in enumerate(self.calls) if call.problem is not None]


def usage_of(report: UsageReport) -> Usage:
    """A provider's usage report as the run counts it."""
    return Usage(
        input_tokens=report.input_tokens,
        output_tokens=report.output_tokens,
        total_tokens=report.input_tokens + report.output_tokens,
        cached_input_tokens=report.cached_input_tokens or None,
        cache_write_tokens=report.cache_write_tokens,
        reasoning_tokens=report.reasoning_tokens,
        cost_usd=report.cost_usd,
    )


async def stream_turn(
    model: Model,
    history: Sequence[Message],
    specs: Sequence[ToolSpec],
    *,
    emit: Callable[[BaseEvent], Any],
    signal: AbortSignal,
    presentation_of: Callable[[str], ToolPresentation | None] = lambda name: None,
    prepare_call: Callable[[StreamedCall], PreparedCall] | None = None,
) -> Turn:
    """Stream one turn of ``model``, emitting its wire events as they arrive. Never raises for a
    failed stream: the turn comes back with ``cut="error"`` and the :class:`ModelError`.
    ``presentation_of(name)`` is a tool's presentation before its arguments are known (on
    ``tool-call-start``); ``prepare_call(call)`` prepares a call once its arguments are complete, and
    its presentation goes with ``tool-call-end``."""
    turn = _Assembly(emit, presentation_of, prepare_call)
    stream = model.stream(list(history), specs)
    completed = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_on_abort, signal, tg.cancel_scope)
            try:
                async for event in stream:
                    turn.add(event)
                completed = True
            except ModelError as exc:
                turn.turn.error = exc
            except Exception as exc:  # a client bug: report it like a failed stream
                log.error("model %s failed", getattr(model, "name", "?"), exc_info=True)
                turn.turn.error = ModelError(f"{type(exc).__name__}: {exc}")
            tg.cancel_scope.cancel()
    finally:
        turn.end_reasoning()
        turn.end_text()
        await _close_stream(stream)
    return turn.done(completed)


class _Assembly:
    """Folds model stream events into a :class:`Turn`, emitting the wire events they stand for."""

    def __init__(
        self, emit: Callable[[BaseEvent], Any], presentation_of: Callable[[str], ToolPresentation | None],
        prepare_call: Callable[[StreamedCall], PreparedCall] | None,
    ) -> None:
        self.emit = emit
        self.presentation_of = presentation_of
        self.prepare_call = prepare_call
        self.turn = Turn()
        self.calls: dict[str, StreamedCall] = {}
        self.text_id: str | None = None
        self.reasoning_id: str | None = None
        self.reasoning_since = 0.0

    def add(self, event: Any) -> None:
        if isinstance(event, ReasoningDelta):
            if event.text:
                self.emit(ReasoningDeltaEvent(id=self.start_reasoning(), delta=event.text))
        elif isinstance(event, ReasoningFinished):
            self.start_reasoning()
            self.turn.reasoning.append(event.block)
            self.turn.reasoning_ms.append(self.reasoning_took())
            self.end_reasoning(self.turn.reasoning_ms[-1])
        elif isinstance(event, TextDelta):
            if not event.text:
                return
            self.end_reasoning()
            if self.text_id is None:
                self.text_id = f"txt_{uuid.uuid4().hex[:16]}"
                self.emit(TextStartEvent(id=self.text_id))
            self.turn.text += event.text
            self.emit(TextDeltaEvent(id=self.text_id, delta=event.text))
        elif isinstance(event, ToolCallStarted):
            self.start_call(event.id, event.name)
        elif isinstance(event, ToolCallArgsDelta):
            call = self.calls.get(event.id) or self.start_call(event.id, "", announce=False)
            call.parts.append(event.text)
            self.emit(ToolCallDeltaEvent(id=call.id, args_text_delta=event.text))
        elif isinstance(event, ToolCallFinished):
            call = self.calls.get(event.id) or self.start_call(event.id, event.name)  # announced only when complete
            call.name = shown_name(event.name) if event.name else call.name
            call.finish(event.arguments_text)
            self.end_call(call)
        elif isinstance(event, UsageReport):
            self.turn.usage = self.turn.usage + usage_of(event)
            self.turn.reports.append(event)
        elif isinstance(event, TurnFinished):
            self.turn.stop_reason = event.stop_reason

    def start_reasoning(self) -> str:
        """The id of the reasoning block streaming now (started, ending any text, if none is)."""
        if self.reasoning_id is None:
            self.end_text()
            self.reasoning_id = f"rsn_{uuid.uuid4().hex[:16]}"
            self.reasoning_since = time.monotonic()
            self.emit(ReasoningStartEvent(id=self.reasoning_id))
        return self.reasoning_id

    def reasoning_took(self) -> int:
        """Milliseconds since the reasoning block streaming now started."""
        return round((time.monotonic() - self.reasoning_since) * 1000)

    def end_reasoning(self, took: int | None = None) -> None:
        if self.reasoning_id is not None:
            self.emit(ReasoningEndEvent(id=self.reasoning_id, duration_ms=self.reasoning_took() if took is None else took))
            self.reasoning_id = None

    def start_call(self, call_id: str, name: str, *, announce: bool = True) -> StreamedCall:
        if announce:
            self.end_reasoning()
            self.end_text()
        # the one place the model's name for a tool enters: every reader (events, thread, spans,
        # exports, the model's history) gets it redacted, escaped and bounded
        call = self.calls[call_id] = StreamedCall(call_id, shown_name(name))
        self.turn.calls.append(call)
        if announce:
            self.emit(ToolCallStartEvent(id=call.id, tool_name=call.name, presentation=self.presentation_of(call.name)))
        return call

    def end_call(self, call: StreamedCall) -> None:
        if call.problem is None and self.prepare_call is not None:
            call.prepared = self.prepare_call(call)
        prepared = call.prepared
        presentation = prepared.presentation if prepared is not None and prepared.failed is None else None
        self.emit(ToolCallEndEvent(id=call.id, tool_name=call.name, arguments=call.arguments, presentation=presentation))

    def end_text(self) -> None:
        if self.text_id is not None:
            self.emit(TextEndEvent(id=self.text_id))
            self.text_id = None

    def done(self, completed: bool) -> Turn:
        turn = self.turn
        if turn.error is not None:
            turn.cut = "error"
        elif not completed:
            turn.cut = "aborted"  # the stream was stopped by the abort signal
        else:
            for call in turn.calls:
                if not call.finished:  # the turn ended: the text so far is all the arguments there are
                    call.finish()
                    self.end_call(call)
        return turn


async def _close_stream(stream: Any) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    with anyio.CancelScope(shield=True):
        try:
            await aclose()
        except Exception:
            log.debug("closing the model stream failed", exc_info=True)
