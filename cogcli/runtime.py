"""The run loop: a model turn, then its tool calls, then the next turn — until the model answers
without calling a tool, the step limit is reached, the run is aborted or the model fails.

    cog = Cogitator(default_store(root))
    result = await cog.run(agent, input="Fix the failing test", on_event=renderer.handle)

One step:

1. stream a model turn from the thread's history, emitting ``text-*`` and ``tool-call-*`` events
   as they arrive;
2. let ``after_model`` rewrite a call's arguments (a ``tool-update`` with ``arguments`` says so);
3. run the turn's calls concurrently, each through :func:`cogcli.invoke.invoke_tool` (the one
   place a call is validated, run and split), forwarding progress as ``tool-update`` events;
4. give the model each result's ``model_text`` in call order, and write the step to memory.

Recoverable failures (bad arguments, unknown tools, tool errors) go back to the model as results;
terminating ones (abort, a model error, the step limit) end the run. Whatever ends it, exactly one
``finish`` event is emitted and the thread keeps every completed step.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from cogcli.context import AbortSignal, ToolUpdate
from cogcli.diffstat import diff_stats
from cogcli.compaction import ContextBudget, model_summary  # i17
from cogcli.errors import ConfigError, ContextLengthError, ErrorCode, ModelError
from cogcli.approvals import Approve, Decision, Decisions, approval_for, decision_of, denied_message
from cogcli.events import (
    ApprovalRequiredEvent,
    BaseEvent,
    ErrorEvent,
    EventEmitter,
    FileChange,
    FinishEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
    Usage,
)
from cogcli.history import build_history
from cogcli.invoke import ToolResult, invoke_tool
from cogcli.memory import (
    AssistantEntry,
    Entry,
    ModelToolResult,
    RunEndEntry,
    ThreadStore,
    ToolResultEntry,
    ToolResultMetadata,
    UserEntry,
)
from cogcli.models.base import (
    Message,
    Model,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallRequest,
    ToolCallStarted,
    ToolSpec,
    UsageReport,
)
from cogcli.secrets import redact_result
from cogcli.tools import Tool, tool_index

log = logging.getLogger("cogcli")

EventCallback = Callable[[BaseEvent], Any]
ToolResultCallback = Callable[[ToolResult], Any]
ToolUpdateCallback = Callable[[ToolUpdate], Any]
#: may return new arguments for a call (sync or async); None keeps the streamed ones
AfterModel = Callable[[ToolCallRequest], "dict[str, Any] | None | Awaitable[dict[str, Any] | None]"]


@dataclass(kw_only=True)
class Agent:
    name: str
    instructions: str
    model: Model
    tools: list[Tool[Any]] = field(default_factory=list)
    max_steps: int = 30
    #: characters of a result's content a model reads; the rest is cut with a visible marker
    max_result_length: int = 20_000
    #: i17: the instruction files (AGENTS.md, …) whose text ``instructions`` holds, named in the start event
    instruction_files: list[Any] = field(default_factory=list)
    #: i17: a :class:`cogcli.instructions.NearbyInstructions` telling the model once about a
    #: subdirectory's own AGENTS.md when a call first touches it (None: not at all)
    nearby_instructions: Any = None
    #: i17: the model's context window in tokens; None: unknown (compaction waits for a context-length error)
    context_window: int | None = None


class RunResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    output: str = ""
    #: completed | max_steps | aborted | error | denied (it ended with a side-effecting call refused)
    status: str
    thread_id: str
    steps: int = 0
    tool_calls: list[ToolResult] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    error_code: str | None = None
    duration_ms: float = 0.0
    files_changed: list[FileChange] = Field(default_factory=list)
    tests: dict[str, int] | None = None


class Cogitator:
    """Runs agents and keeps their threads in ``store`` (an in-memory store when None)."""

    def __init__(self, store: ThreadStore | None = None) -> None:
        self.store = store if store is not None else ThreadStore(":memory:")

    async def run(
        self,
        agent: Agent,
        *,
        input: str,
        thread_id: str | None = None,
        on_event: EventCallback | None = None,
        on_tool_result: ToolResultCallback | None = None,
        on_tool_update: ToolUpdateCallback | None = None,
        after_model: AfterModel | None = None,
        signal: AbortSignal | None = None,
        approve: Approve | None = None,
    ) -> RunResult:
        """Run ``agent`` on ``input`` in a new thread, or continuing the thread ``thread_id`` (its
        whole id or a unique prefix; to start a thread under an id of your own, make it first with
        ``store.create_thread(id)``).

        Raises :class:`ConfigError` before the run starts (no event sent) for a thread id that
        names no thread or several, or two tools with one name; everything after that ends in a
        :class:`RunResult` and exactly one ``finish`` event.

        With ``approve``, calls of tools that declare ``side_effects`` wait for it: one
        ``approval-required`` event per turn lists them, ``await approve(approvals)`` returns a
        decision per call id (see :mod:`cogcli.approvals`), and a refused call ends with error code
        ``DENIED`` without running. A run that ends while a refusal is the last word on its side
        effects (nothing approved since) ends with status ``denied``. Without ``approve`` every
        call runs."""
        try:
            tools = tool_index(agent.tools)
        except ValueError as exc:
            raise ConfigError(f"agent {agent.name!r}: {exc}") from None
        if thread_id:
            thread = self.store.resolve_id(thread_id)
            if thread is None:
                raise ConfigError(f"no thread {thread_id!r} to continue (list them with `cog thread list`)")
        else:
            thread = self.store.create_thread(title=input, model=getattr(agent.model, "name", None)).id
        run = _Run(
            agent=agent,
            tools=tools,
            store=self.store,
            thread_id=thread,
            emitter=EventEmitter(on_event),
            signal=signal or AbortSignal(),
            on_tool_result=on_tool_result,
            on_tool_update=on_tool_update,
            after_model=after_model,
            approve=approve,
        )
        return await run.execute(input)


# --- one run ------------------------------------------------------------------------------


@dataclass
class _Call:
    """A tool call while its turn streams."""

    id: str
    name: str
    #: the argument text in the fragments it arrived in, joined when read (no copy per fragment:
    #: a megabyte of arguments in 5-character fragments must not take quadratic time)
    parts: list[str] = field(default_factory=list)
    finished: bool = False

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    @text.setter
    def text(self, value: str) -> None:
        self.parts = [value]

    def request(self) -> ToolCallRequest:
        return ToolCallRequest(id=self.id, name=self.name, arguments=parse_arguments(self.text))


@dataclass
class _Turn:
    text: str = ""
    calls: list[_Call] = field(default_factory=list)
    #: set when the turn did not complete: "aborted" or "error"
    cut: str | None = None
    error: ModelError | None = None


class _Run:
    def __init__(
        self,
        *,
        agent: Agent,
        tools: dict[str, Tool[Any]],
        store: ThreadStore,
        thread_id: str,
        emitter: EventEmitter,
        signal: AbortSignal,
        on_tool_result: ToolResultCallback | None,
        on_tool_update: ToolUpdateCallback | None,
        after_model: AfterModel | None,
        approve: Approve | None = None,
    ) -> None:
        self.agent = agent
        self.tools = tools
        self.store = store
        self.thread_id = thread_id
        self.emitter = emitter
        self.signal = signal
        self.on_tool_result = on_tool_result
        self.on_tool_update = on_tool_update
        self.after_model = after_model
        self.approve = approve
        #: the last turn that asked for approval had a call refused
        self.denied_open = False
        self.message_id = f"msg_{uuid.uuid4().hex[:20]}"
        self.specs = [ToolSpec(**t.spec()) for t in tools.values()]
        self.history: list[Message] = []
        self.results: list[ToolResult] = []
        self.usage = Usage()
        self.steps = 0
        self.output = ""
        self.error: str | None = None
        self.error_code: str | None = None
        self.context = ContextBudget(window=agent.context_window, specs=self.specs)  # i17

    async def execute(self, input: str) -> RunResult:
        started = time.perf_counter()
        status = "error"
        self.emitter.emit(
            StartEvent(
                message_id=self.message_id,
                thread_id=self.thread_id,
                instructions=[f.info() for f in self.agent.instruction_files] or None,  # i17
                context_window=self.agent.context_window,  # i17
            )
        )
        try:
            status = await self._loop(input)
        except ModelError as exc:
            status = self._fail(exc.message, exc.code)
        except anyio.get_cancelled_exc_class():
            status = "aborted"
            raise
        except Exception as exc:
            log.error("the run failed", exc_info=True)
            status = self._fail(f"{type(exc).__name__}: {exc}", None)
        finally:
            result = self._finish(status, (time.perf_counter() - started) * 1000)
        return result

    async def _loop(self, input: str) -> str:
        self.history = build_history(self.agent.instructions, self.store.entries(self.thread_id))
        self.store.append(self.thread_id, [UserEntry(content=input, message_id=self.message_id)], status="running")
        self.history.append(Message(role="user", content=input))
        while True:
            if self.signal.aborted:
                return "aborted"
            if self.steps >= self.agent.max_steps:
                return "denied" if self.denied_open else "max_steps"
            self.steps += 1
            turn = await self._model_turn()  # i17: was self._stream_turn()
            if turn.error is not None:
                self._close_cut_turn(turn, turn.error.code, "the model's stream failed")
                raise turn.error
            if turn.cut is not None:
                self._close_cut_turn(turn, ErrorCode.ABORTED, "the run was aborted")
                return "aborted"
            calls = [c.request() for c in turn.calls]
            try:
                run_with = await self._apply_after_model(calls, turn)
            except Exception as exc:
                self._close_cut_turn(turn, ErrorCode.TOOL_ERROR, f"after_model failed ({type(exc).__name__}: {exc})")
                raise
            results: list[ToolResult | None] = [None] * len(calls)
            try:
                await self._ask_approval(calls, run_with, results)
                await self._run_calls(calls, run_with, results)
            finally:  # also when the caller cancels the run: the step is kept, every call has a result
                self._record_step(turn.text, calls, self._settle(calls, results))
            if not calls:
                self.output = turn.text
                return "denied" if self.denied_open else "completed"
            if self.signal.aborted:
                return "aborted"

    # --- 1. a model turn ----------------------------------------------------------------

    async def _model_turn(self) -> _Turn:
        """i17: one model turn on a history that fits the context window (compacted first when the
        request would pass 80% of it); a context-length error compacts once more and retries once."""
        self.history = await self.context.before_request(self.history, summarize=self._summarize, emit=self.emitter.emit)
        turn = await self._stream_turn()
        error = turn.error
        if isinstance(error, ContextLengthError) and not turn.text and not turn.calls and not self.signal.aborted:
            log.info("%s; compacting the history and trying once more", error.message)
            self.history = await self.context.after_overflow(
                self.history, limit=error.limit, tokens=error.tokens, summarize=self._summarize, emit=self.emitter.emit
            )
            turn = await self._stream_turn()
        return turn

    async def _summarize(self, messages: list[Message]) -> str:
        """i17: the model's summary of the oldest turns (compaction's second stage); its usage counts."""
        text: str | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_on_abort, self.signal, tg.cancel_scope)
            text = await model_summary(self.agent.model, messages, on_usage=self._add_usage)
            tg.cancel_scope.cancel()
        if text is None:
            raise ModelError("the run was aborted while the model summarized")
        return text

    def _add_usage(self, event: UsageReport) -> None:
        self.usage = self.usage + Usage(
            input_tokens=event.input_tokens,
            output_tokens=event.output_tokens,
            total_tokens=event.input_tokens + event.output_tokens,
            cached_input_tokens=event.cached_input_tokens or None,
        )

    async def _stream_turn(self) -> _Turn:
        turn = _Turn()
        calls: dict[str, _Call] = {}
        text_id: str | None = None

        def end_text() -> None:
            nonlocal text_id
            if text_id is not None:
                self.emitter.emit(TextEndEvent(id=text_id))
                text_id = None

        stream = self.agent.model.stream(list(self.history), self.specs)
        error: ModelError | None = None
        completed = False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_cancel_on_abort, self.signal, tg.cancel_scope)
                try:
                    async for event in stream:
                        if isinstance(event, TextDelta):
                            if not event.text:
                                continue
                            if text_id is None:
                                text_id = f"txt_{uuid.uuid4().hex[:16]}"
                                self.emitter.emit(TextStartEvent(id=text_id))
                            turn.text += event.text
                            self.emitter.emit(TextDeltaEvent(id=text_id, delta=event.text))
                        elif isinstance(event, ToolCallStarted):
                            end_text()
                            call = calls[event.id] = _Call(event.id, event.name)
                            turn.calls.append(call)
                            self.emitter.emit(
                                ToolCallStartEvent(id=call.id, tool_name=call.name, presentation=self._static_presentation(call.name))
                            )
                        elif isinstance(event, ToolCallArgsDelta):
                            call = calls.get(event.id) or _missing_call(calls, turn, event.id, "")
                            call.parts.append(event.text)
                            self.emitter.emit(ToolCallDeltaEvent(id=call.id, args_text_delta=event.text))
                        elif isinstance(event, ToolCallFinished):
                            call = calls.get(event.id)
                            if call is None:  # a client that announces calls only when complete
                                end_text()
                                call = _missing_call(calls, turn, event.id, event.name)
                                self.emitter.emit(
                                    ToolCallStartEvent(id=call.id, tool_name=call.name, presentation=self._static_presentation(call.name))
                                )
                            call.name = event.name or call.name
                            call.text = event.arguments_text
                            call.finished = True
                            self.emitter.emit(
                                ToolCallEndEvent(id=call.id, tool_name=call.name, arguments=parse_arguments(call.text))
                            )
                        elif isinstance(event, UsageReport):
                            self._add_usage(event)
                            self.context.observe(event)  # i17
                    completed = True
                except ModelError as exc:
                    error = exc
                except Exception as exc:  # a client bug: report it like a failed stream
                    log.error("model %s failed", getattr(self.agent.model, "name", "?"), exc_info=True)
                    error = ModelError(f"{type(exc).__name__}: {exc}")
                tg.cancel_scope.cancel()
        finally:
            end_text()
            await _close_stream(stream)
        if error is not None:
            turn.cut, turn.error = "error", error
        elif not completed:
            turn.cut = "aborted"  # the stream was stopped by the abort signal
        else:
            for call in turn.calls:
                if not call.finished:  # the turn ended: the text so far is all the arguments there are
                    call.finished = True
                    self.emitter.emit(ToolCallEndEvent(id=call.id, tool_name=call.name, arguments=parse_arguments(call.text)))
        return turn

    def _static_presentation(self, name: str) -> Any:
        tool = self.tools.get(name)  # a per-arguments presentation comes with the tool-result
        return None if tool is None else tool.static_presentation()

    def _close_cut_turn(self, turn: _Turn, code: str, why: str) -> None:
        """A turn whose calls never ran (the stream stopped, or middleware failed). Each started
        call still gets its ``tool-call-end`` and a ``tool-result`` saying so; memory keeps the
        text and the calls whose arguments had all arrived."""
        kept: list[ToolCallRequest] = []
        results: list[ToolResult] = []
        for call in turn.calls:
            if not call.finished:
                self.emitter.emit(ToolCallEndEvent(id=call.id, tool_name=call.name, arguments=call.text))
            request = call.request()
            result = ToolResult(
                call_id=call.id,
                name=call.name,
                arguments=request.arguments,
                presentation=self._static_presentation(call.name),
                error=f"{call.name} was not run: {why}",
                error_code=code,
            )
            self._emit_result(result)
            self.results.append(result)
            if call.finished:
                kept.append(request)
                results.append(result)
        if turn.text or kept:
            self._record_step(turn.text, kept, results)

    # --- 2. middleware ------------------------------------------------------------------

    async def _apply_after_model(self, calls: list[ToolCallRequest], turn: _Turn) -> list[Any]:
        """The arguments each call runs with: the streamed text, or what ``after_model`` returned."""
        run_with: list[Any] = [c.text for c in turn.calls]
        if self.after_model is None:
            return run_with
        for i, call in enumerate(calls):
            changed = self.after_model(call.model_copy(deep=True))
            if inspect.isawaitable(changed):
                changed = await changed
            if changed is not None:
                run_with[i] = changed
                self.emitter.emit(ToolUpdateEvent(tool_call_id=call.id, tool_name=call.name, arguments=changed))
        return run_with

    # --- 2b. approvals ------------------------------------------------------------------

    async def _ask_approval(self, calls: list[ToolCallRequest], run_with: list[Any], results: list[ToolResult | None]) -> None:
        """With ``approve``: the turn's calls with side effects are listed in one ``approval-required``
        event, and each refused call gets its DENIED result (and event) here, so it never runs."""
        if self.approve is None:
            return
        pending: list[tuple[int, Any, Any]] = []
        for i, call in enumerate(calls):
            arguments = parse_arguments(run_with[i]) if isinstance(run_with[i], str) else run_with[i]
            found = approval_for(self.tools.get(call.name), call.id, arguments)
            if found is not None:
                pending.append((i, *found))
        if not pending:
            return
        approvals = [approval for _, approval, _ in pending]
        self.emitter.emit(ApprovalRequiredEvent(thread_id=self.thread_id, approvals=approvals))
        decisions = await self._decisions(approvals)
        if decisions is None:  # aborted while waiting: invoke_tool ends each call ABORTED, unrun
            return
        refused = False
        for i, approval, presentation in pending:
            decision = decision_of(decisions, approval.tool_call_id)
            if decision.approved:
                continue
            refused = True
            result = ToolResult(
                call_id=approval.tool_call_id,
                name=approval.tool_name,
                arguments=approval.arguments,
                presentation=presentation,
                error=denied_message(approval.tool_name, decision),
                error_code=ErrorCode.DENIED,
            )
            results[i] = result
            self._emit_result(result)
            await self._notify_result(result)
        self.denied_open = refused

    async def _decisions(self, approvals: list[Any]) -> Decisions | None:
        """``approve``'s answer, or None when the run was aborted while it was pending. An
        approver that raises refuses every call it was asked about."""
        assert self.approve is not None
        decisions: Decisions | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_on_abort, self.signal, tg.cancel_scope)
            try:
                decisions = await self.approve([a.model_copy(deep=True) for a in approvals])
            except Exception as exc:
                log.error("approve failed; the calls it was asked about are refused", exc_info=True)
                why = f"asking for approval failed ({type(exc).__name__}: {exc})"
                decisions = {a.tool_call_id: Decision(False, why) for a in approvals}
            tg.cancel_scope.cancel()
        return None if self.signal.aborted else decisions

    # --- 3. the calls -------------------------------------------------------------------

    async def _run_calls(self, calls: list[ToolCallRequest], run_with: list[Any], results: list[ToolResult | None]) -> None:
        """Run the calls concurrently; ``results[i]`` is set (and its event sent) as call ``i`` ends.
        Calls naming the same ``path`` run one after another in call order: the second sees what
        the first did (two edits of one file in one turn)."""
        done = [anyio.Event() for _ in calls]
        after: list[anyio.Event | None] = [None] * len(calls)
        last: dict[str, int] = {}
        for i, arguments in enumerate(run_with):
            key = _path_of(arguments) if results[i] is None else None
            if key is not None:
                if key in last:
                    after[i] = done[last[key]]
                last[key] = i

        async def run_one(i: int) -> None:
            try:
                waits = after[i]
                if waits is not None:
                    await waits.wait()
                await run_call(i)
            finally:
                done[i].set()

        async def run_call(i: int) -> None:
            call = calls[i]
            result = await invoke_tool(
                call.name,
                run_with[i],
                tools=self.tools,
                call_id=call.id,
                on_update=self._on_update,
                signal=self.signal,
            )
            # the one place credentials are taken out of what a model reads, for every tool (MCP ones
            # too): the event, on_tool_result, the history and the thread all get the redacted result
            result = redact_result(result)
            results[i] = result
            self._emit_result(result)
            await self._notify_result(result)

        async with anyio.create_task_group() as tg:
            for i in range(len(calls)):
                if results[i] is None:  # not refused
                    tg.start_soon(run_one, i)

    def _settle(self, calls: list[ToolCallRequest], results: list[ToolResult | None]) -> list[ToolResult]:
        """The turn's results in call order; a call the caller's cancellation cut short gets an
        ABORTED result (and its event) here."""
        done: list[ToolResult] = []
        for call, result in zip(calls, results, strict=True):
            if result is None:
                result = ToolResult(
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    presentation=self._static_presentation(call.name),
                    error=f"{call.name} was cancelled before it finished",
                    error_code=ErrorCode.ABORTED,
                )
                self._emit_result(result)
            done.append(result)
        self.results.extend(done)
        return done

    def _on_update(self, update: ToolUpdate) -> None:
        self.emitter.emit(ToolUpdateEvent.of(update))
        if self.on_tool_update is not None:
            returned = self.on_tool_update(update)  # ToolContext logs a callback that raises
            if returned is not None and inspect.isawaitable(returned):
                log.warning("on_tool_update must be a plain function; a coroutine it returned was not awaited")
                getattr(returned, "close", lambda: None)()

    def _emit_result(self, result: ToolResult) -> None:
        self.emitter.emit(
            ToolResultEvent.of(result)
        )

    async def _notify_result(self, result: ToolResult) -> None:
        if self.on_tool_result is None:
            return
        try:
            returned = self.on_tool_result(result)
            if inspect.isawaitable(returned):
                await returned
        except Exception:
            log.warning("on_tool_result failed for %s; the run goes on", result.name, exc_info=True)

    # --- 4. memory and the end ----------------------------------------------------------

    def _record_step(self, text: str, calls: list[ToolCallRequest], results: list[ToolResult]) -> None:
        """The turn and what the model read of each call: into the history and, in one
        transaction, into the thread."""
        limit = self.agent.max_result_length
        self.history.append(Message(role="assistant", content=text, tool_calls=calls))
        entries: list[Entry] = [AssistantEntry(content=text, tool_calls=calls)]
        for result in results:
            read = result.model_text(limit)
            if self.agent.nearby_instructions is not None and result.error is None:  # i17
                read = self.agent.nearby_instructions.annotate(result.arguments, read)
            self.history.append(Message(role="tool", tool_call_id=result.call_id, name=result.name, content=read))
            entries.append(
                ToolResultEntry(
                    tool_results=[ModelToolResult(call_id=result.call_id, name=result.name, content=read)],
                    metadata=ToolResultMetadata(
                        details=result.details,
                        presentation=result.presentation,
                        content=result.result,
                        error=result.error,
                        error_code=result.error_code,
                        arguments=result.arguments,
                        duration_ms=result.duration_ms,
                        redacted=result.redacted or None,
                    ),
                )
            )
        self.store.append(self.thread_id, entries)

    def _fail(self, message: str, code: str | None) -> str:
        self.error, self.error_code = message, code
        self.emitter.emit(ErrorEvent(message=message, code=code))
        return "error"

    def _finish(self, status: str, duration_ms: float) -> RunResult:
        files = files_changed(self.results, self.agent.tools)
        tests = last_test_counts(self.results)
        self.emitter.emit(
            FinishEvent(
                message_id=self.message_id,
                thread_id=self.thread_id,
                status=status,
                usage=self.usage,
                steps=self.steps,
                duration_ms=duration_ms,
                files_changed=files,
                tests=tests,
                peak_context_tokens=self.context.peak or None,  # i17
                context_window=self.context.window,  # i17
                compactions=self.context.compactions or None,  # i17
            )
        )
        end = RunEndEntry(
            message_id=self.message_id,
            status=status,
            steps=self.steps,
            usage=self.usage,
            duration_ms=duration_ms,
            error=self.error,
            error_code=self.error_code,
            files_changed=files,
            tests=tests,
        )
        try:
            self.store.append(self.thread_id, [end], status=status)
        except Exception:
            log.error("could not record the end of the run in thread %s", self.thread_id, exc_info=True)
        return RunResult(
            output=self.output,
            status=status,
            thread_id=self.thread_id,
            steps=self.steps,
            tool_calls=list(self.results),
            usage=self.usage,
            error=self.error,
            error_code=self.error_code,
            duration_ms=duration_ms,
            files_changed=files,
            tests=tests,
        )


# --- helpers ------------------------------------------------------------------------------


def parse_arguments(text: str) -> Any:
    """A call's argument text as the model meant it: the object, or the raw text when it is not
    a JSON object (invoke_tool then tells the model what is wrong with it)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def _path_of(arguments: Any) -> str | None:
    """A call's ``path`` argument, normalised, if it has one: calls are ordered by it."""
    if isinstance(arguments, str):
        arguments = parse_arguments(arguments)
    path = arguments.get("path") if isinstance(arguments, dict) else None
    return os.path.normpath(path) if isinstance(path, str) and path else None


def _missing_call(calls: dict[str, _Call], turn: _Turn, call_id: str, name: str) -> _Call:
    call = calls[call_id] = _Call(call_id, name)
    turn.calls.append(call)
    return call


async def _cancel_on_abort(signal: AbortSignal, scope: anyio.CancelScope) -> None:
    await signal.wait()
    scope.cancel()


async def _close_stream(stream: Any) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    with anyio.CancelScope(shield=True):
        try:
            await aclose()
        except Exception:
            log.debug("closing the model stream failed", exc_info=True)


def files_changed(results: list[ToolResult], tools: Sequence[Tool[Any]] = ()) -> list[FileChange]:
    """Lines added and removed per path, summed over the successful calls that changed files: those
    whose details carry a diff, from tools that declare "writes files" (a tool that only shows a
    diff, like git_diff, changed nothing). Tools not in ``tools`` (MCP tools) count when they carry a diff."""
    writes = {t.name for t in tools if "writes files" in t.side_effects}
    known = {t.name for t in tools}
    totals: dict[str, FileChange] = {}
    for r in results:
        if r.error is not None or not isinstance(r.details, dict) or (r.name in known and r.name not in writes):
            continue
        diff = r.details.get("diff")
        if not isinstance(diff, str):
            continue
        for stat in diff_stats(diff):
            path = stat.path or (r.arguments.get("path") if isinstance(r.arguments, dict) else None)
            if not isinstance(path, str):
                continue
            change = totals.setdefault(path, FileChange(path=path))
            change.added += stat.added
            change.removed += stat.removed
    return list(totals.values())


def last_test_counts(results: list[ToolResult]) -> dict[str, int] | None:
    """The counts of the last ``run_tests`` result's details (``passed``, ``failed``, …)."""
    for r in reversed(results):
        if r.name != "run_tests":
            continue
        details = r.details if isinstance(r.details, dict) else {}
        for key in ("counts", "summary"):
            if isinstance(details.get(key), dict):
                details = details[key]
                break
        counts = {k: v for k, v in details.items() if k in ("passed", "failed", "errors", "skipped") and _is_int(v)}
        return counts or None
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
