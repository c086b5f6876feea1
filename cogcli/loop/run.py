"""One run of an agent: the loop, a step, and the end. :class:`cogcli.loop.runtime.Cogitator` starts it.

    while not done: stream a turn → prepare its calls → gate → execute → conclude each → record the step

Recoverable failures (bad arguments, unknown tools, tool errors) go back to the model as results;
terminating ones (abort, a model error, the step limit) end the run. Whatever ends it, every call
is concluded once (:mod:`cogcli.loop.conclude`), the thread keeps every completed step, and exactly one
``finish`` event is sent, made — like the ``run_end`` entry and ``RunResult`` — from one :class:`RunEnd`.
"""

from __future__ import annotations

import inspect
import logging
import time
import uuid
from contextvars import ContextVar
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from cogcli.gate.approval import Approve
from cogcli.contract.prepare import PreparedCall, prepare
from cogcli.loop.execute import run_calls
from cogcli.compaction import ContextBudget, describer, model_summary
from cogcli.loop.conclude import Conclude, Slots, ToolResultCallback
from cogcli.contract.context import AbortSignal, ToolUpdate, cancel_on_abort
from cogcli.threads.entries import AssistantEntry, Entry, ToolResultEntry, UserEntry, kept_reasoning
from cogcli.contract.errors import ContextLengthError, ErrorCode, ModelError
from cogcli.wire.emitter import EventEmitter
from cogcli.wire.events import AnswerRejectedEvent, BudgetSpent, ErrorEvent, RunStatus, StartEvent, ToolCallEndEvent, ToolUpdateEvent, Usage
from cogcli.threads.history import build_history
from cogcli.threads.store import ThreadStore
from cogcli.models.base import PROMPT_CACHE_KEY, Message, Reasoning, ToolCallRequest, ToolSpec, UsageReport
from cogcli.threads.run_end import RunEnd
from cogcli.gate.pipeline import Gate, GateStep, GateTurn
from cogcli.gate.plan_mode import PlanMode
from cogcli.contract.output import ImagePart
from cogcli.contract.result import ToolResult
from cogcli.secrets.redactor import redact_value
from cogcli.contract.tool import Tool
from cogcli.loop.turn import StreamedCall, Turn, stream_turn, usage_of

if TYPE_CHECKING:
    from cogcli.loop.agent import Agent
    from cogcli.hooks.engine import HookSet

log = logging.getLogger("cogcli")

ToolUpdateCallback = Callable[[ToolUpdate], Any]
#: the run whose calls are executing here: what a subagent (:mod:`cogcli.loop.subagent`) is a child of
CURRENT_RUN: ContextVar[Run | None] = ContextVar("cog_current_run", default=None)
#: may return new arguments for a call (sync or async); None keeps the streamed ones
AfterModel = Callable[[ToolCallRequest], "dict[str, Any] | None | Awaitable[dict[str, Any] | None]"]


@dataclass(kw_only=True)
class Hooks:
    """What the caller of a run plugs in (see :meth:`cogcli.loop.runtime.Cogitator.run`)."""

    on_tool_result: ToolResultCallback | None = None
    on_tool_update: ToolUpdateCallback | None = None
    after_model: AfterModel | None = None
    approve: Approve | None = None
    #: plan mode (:mod:`cogcli.gate.plan_mode`): calls of tools that are not read-only are refused first
    plan: PlanMode | None = None
    #: the session's hook commands (:mod:`cogcli.hooks`), run at each event of the run
    commands: HookSet | None = None
    #: the caller's own steps of the gate (:mod:`cogcli.gate.pipeline`), after plan mode and the
    #: PreToolUse hooks, before the allow list and the person's approval
    gate_steps: Sequence[GateStep] = ()
    #: the run this one is a subagent of (:mod:`cogcli.loop.subagent`): its usage counts there too,
    #: its budget is the whole tree's, and its hooks fire SubagentStart/SubagentStop instead of the prompt's and Stop
    parent: Run | None = None


class Run:
    def __init__(
        self, agent: Agent, tools: dict[str, Tool[Any]], store: ThreadStore, thread_id: str,
        emitter: EventEmitter, signal: AbortSignal, hooks: Hooks,
    ) -> None:
        self.agent, self.tools, self.store, self.thread_id = agent, tools, store, thread_id
        self.emitter, self.signal, self.hooks = emitter, signal, hooks
        self.parent = hooks.parent
        session_id = thread_id if self.parent is None else self.parent.thread_id  # a subagent's hooks: the parent's session, as Claude Code's
        self.commands = hooks.commands.bind(emitter.emit, session_id, permission_mode="default" if hooks.approve else "bypassPermissions", signal=signal) if hooks.commands else None
        if self.commands is not None and self.parent is not None:
            self.commands.agent = {"agent_id": thread_id, "agent_type": agent.name}
        after = None  # PostToolUse hooks run where every call ends, on its redacted result
        if self.commands is not None:
            from cogcli.hooks.calls import post_tool_use

            after = partial(post_tool_use, self.commands)
        self.conclude = Conclude(emitter, hooks.on_tool_result, after=after)
        self.message_id = f"msg_{uuid.uuid4().hex[:20]}"
        self.specs = [ToolSpec(**t.spec()) for t in tools.values()]
        self.history: list[Message] = []
        self.results: list[ToolResult] = []
        #: every call that ended in this run and its subagents, in the order they ended: what its end counts (files, tests)
        self.ended: list[ToolResult] = []
        self.usage = Usage()
        self.steps = 0
        self.output = ""
        self.error: str | None = None
        self.error_code: str | None = None
        #: the final answer parsed against the agent's output schema; the budget the run went past
        self.structured: Any = None
        self.spent: BudgetSpent | None = None
        self.answers = 0
        #: the last turn that asked for approval had a call refused
        self.denied_open = False
        #: what the history costs against the model's context window; compacts it when needed
        self.context = ContextBudget(window=agent.context_window, specs=self.specs, describe=describer(self.tools))
        if self.commands is not None:
            from cogcli.hooks.lifecycle import pre_compact

            self.context.before_compact = pre_compact(self.commands)
        #: what every call passes before it runs: plan mode, PreToolUse hooks, the caller's steps, the allow list, the person
        self.gate = Gate.of(
            tools=tools, emit=emitter.emit, signal=signal, thread_id=thread_id,
            plan=hooks.plan, hooks=self.commands, approve=hooks.approve, extra=hooks.gate_steps,
        )

    async def execute(self, input: str, images: Sequence[ImagePart] = ()) -> tuple[RunEnd, str]:
        """Run to the end; returns how it ended and the model's last text. ``images``: what the
        person attached to ``input``, seen with it."""
        started = time.perf_counter()
        status = RunStatus.ERROR
        self.emitter.emit(
            StartEvent(
                message_id=self.message_id,
                thread_id=self.thread_id,
                instructions=[f.info() for f in self.agent.instruction_files] or None,
                context_window=self.agent.context_window,
                model=getattr(self.agent.model, "name", None),
            )
        )
        cache_key = PROMPT_CACHE_KEY.set(self.thread_id)  # a provider's prompt cache per thread
        current = CURRENT_RUN.set(self)
        try:
            status = await self._loop(input, list(images))
        except ModelError as exc:
            status = self._fail(exc.message, exc.code)
        except anyio.get_cancelled_exc_class():
            status = RunStatus.ABORTED
            raise
        except Exception as exc:
            log.error("the run failed", exc_info=True)
            status = self._fail(f"{type(exc).__name__}: {exc}", None)
        finally:
            PROMPT_CACHE_KEY.reset(cache_key)
            CURRENT_RUN.reset(current)
            end = self._end(status, (time.perf_counter() - started) * 1000)
        return end, self.output

    async def _loop(self, input: str, images: list[ImagePart]) -> RunStatus:
        entries = self.store.history_entries(self.thread_id)  # what the model reads: no call's metadata
        instructions = self.agent.instructions
        if self.agent.output_schema is not None:  # what the final answer must be, from the first request on
            instructions = f"{instructions}\n\n{self.agent.output_schema.instructions()}"
        self.history = build_history(instructions, entries)
        prompt = input
        if self.commands is not None and self.parent is not None:  # a subagent: SubagentStart's context added
            from cogcli.hooks.lifecycle import subagent_start

            prompt = await subagent_start(self.commands, input)
        elif self.commands is not None:  # SessionStart and UserPromptSubmit hooks: context added, or the prompt blocked
            from cogcli.hooks.lifecycle import PromptBlocked, before_prompt

            try:
                prompt = await before_prompt(self.commands, input, new_thread=not entries)
            except PromptBlocked as blocked:
                self._fail(f"a UserPromptSubmit hook blocked the prompt: {blocked.reason}", "HOOK_BLOCKED")
                return RunStatus.DENIED
        self.store.append(self.thread_id, [UserEntry(content=input, message_id=self.message_id, images=images or None)], status="running")
        self.history.append(Message(role="user", content=prompt, images=images))
        stop_hook_active = False
        while True:
            if self.signal.aborted:
                return RunStatus.ABORTED
            if self.commands is not None and self.commands.stop_reason is not None:  # a hook's "continue": false
                self._fail(f"a hook stopped the run: {self.commands.stop_reason}", "HOOK_STOPPED")
                return RunStatus.DENIED
            if self.steps >= self.agent.max_steps:
                return RunStatus.DENIED if self.denied_open else RunStatus.MAX_STEPS
            if self.agent.budget is not None and (spent := self.agent.budget.spent(self.spending())) is not None:
                return self._spent(spent)  # a subagent (or a sibling) took the run past it: no further request
            self.steps += 1
            turn = await self._stream_turn()
            if turn.cut is not None:
                return await self._cut(turn)
            if self.agent.budget is not None and (spent := self.agent.budget.spent(self.spending())) is not None:
                return await self._over_budget(turn, spent)
            calls = await self._step(turn)
            if self.denied_open and getattr(self.hooks.approve, "final", False):
                return RunStatus.DENIED  # nobody can ever approve in this run: asking the model again only costs
            if not calls:
                if turn.at_output_limit:
                    log.warning("the model's last reply was cut at its output limit (stop reason %s)", turn.stop_reason)
                self.output = turn.text
                if self.agent.output_schema is not None and not self._answer_fits(turn.text):
                    if self.error is not None:
                        return RunStatus.ERROR
                    continue
                if self.commands is not None and self.steps < self.agent.max_steps:  # Stop hooks may send the model back
                    from cogcli.hooks.lifecycle import at_stop

                    event = "Stop" if self.parent is None else "SubagentStop"
                    again = await at_stop(self.commands, turn.text, active=stop_hook_active, event=event)
                    if again is not None:
                        stop_hook_active = True
                        self.history.append(Message(role="user", content=again))
                        continue
                return RunStatus.DENIED if self.denied_open else RunStatus.COMPLETED
            if self.signal.aborted:
                return RunStatus.ABORTED

    async def _over_budget(self, turn: Turn, spent: BudgetSpent) -> RunStatus:
        """The response that took the run past its budget: its calls end unrun, its text is kept."""
        from cogcli.loop.budgets import spent_message

        await self._close_calls(turn, Slots(len(turn.calls)), ErrorCode.BUDGET_EXCEEDED, spent_message(spent))
        return self._spent(spent)

    def _spent(self, spent: BudgetSpent) -> RunStatus:
        from cogcli.loop.budgets import spent_message

        self.spent = spent
        self.error, self.error_code = spent_message(spent), ErrorCode.BUDGET_EXCEEDED
        self.emitter.emit(ErrorEvent(message=self.error, code=self.error_code))
        return RunStatus.BUDGET_EXCEEDED

    def spending(self) -> Usage:
        """What the budget counts: the whole run's usage, its subagents' included (a subagent: its top run's)."""
        return self.usage if self.parent is None else self.parent.spending()

    def _count(self, usage: Usage) -> None:
        """A model response's usage: this run's, and every run above it (a subagent's usage is its parent's too)."""
        self.usage = self.usage + usage
        if self.parent is not None:
            self.parent._count(usage)

    def _answer_fits(self, text: str) -> bool:
        """Whether the final answer ``text`` is valid against the output schema. When it is not,
        it goes back to the model (a user message naming the problem) while tries are left, else
        the run fails with ``OUTPUT_SCHEMA_INVALID``."""
        from cogcli.loop.output_schema import OUTPUT_SCHEMA_INVALID

        schema = self.agent.output_schema
        verdict = schema.check(text)
        self.answers += 1
        if verdict.ok:
            self.structured = verdict.value
            return True
        left = schema.tries - self.answers
        if left <= 0:
            self._fail(schema.failure(verdict.problem), OUTPUT_SCHEMA_INVALID)
            return False
        log.info("the final answer is not valid against the output schema (%s); asking again", verdict.problem)
        self.emitter.emit(AnswerRejectedEvent(problem=verdict.problem, tries_left=left))  # said where the answer is drawn
        retry = schema.retry_message(verdict.problem, left)
        self.store.append(self.thread_id, [UserEntry(content=retry, message_id=self.message_id)])
        self.history.append(Message(role="user", content=retry))
        return False

    async def _stream_turn(self) -> Turn:
        """One model turn on a history that fits the context window (compacted first when the
        request would pass its limit); a context-length error compacts once more and retries once."""
        self.history = await self.context.before_request(self.history, summarize=self._summarize, emit=self.emitter.emit)
        turn = await self._one_turn()
        error = turn.error
        if isinstance(error, ContextLengthError) and not turn.text and not turn.calls and not self.signal.aborted:
            log.info("%s; compacting the history and trying once more", error.message)
            self.history = await self.context.after_overflow(
                self.history, limit=error.limit, tokens=error.tokens, summarize=self._summarize, emit=self.emitter.emit
            )
            turn = await self._one_turn()
        return turn

    async def _one_turn(self) -> Turn:
        turn = await stream_turn(
            self.agent.model, self.history, self.specs, emit=self.emitter.emit, signal=self.signal,
            presentation_of=self._static_presentation, prepare_call=self._prepare_streamed,
        )
        self._count(turn.usage)
        for report in turn.reports:
            self.context.observe(report)
        return turn

    def _prepare_streamed(self, call: StreamedCall) -> PreparedCall:
        """A call prepared as soon as its arguments are complete (its presentation goes with
        ``tool-call-end``); :meth:`_prepare` runs it as it is unless middleware changes them."""
        return prepare(call.name, None, call_id=call.id, tools=self.tools, parsed=(call.arguments, call.problem))

    async def _summarize(self, messages: list[Message]) -> str:
        """The model's summary of the oldest turns (compaction's second stage); its usage counts."""
        text: str | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_on_abort, self.signal, tg.cancel_scope)
            text = await model_summary(self.agent.model, messages, on_usage=self._add_usage)
            tg.cancel_scope.cancel()
        if text is None:
            raise ModelError("the run was aborted while the model summarized")
        return text

    def _add_usage(self, report: UsageReport) -> None:
        self._count(usage_of(report))

    async def _step(self, turn: Turn) -> list[PreparedCall]:
        """One turn's calls: prepare → gate → execute (each concluded as it ends) → record. The step
        is recorded even when the caller cancels the run (every open call then ends ABORTED)."""
        slots = Slots(len(turn.calls))
        try:
            calls = await self._prepare(turn)
        except Exception as exc:
            await self._close_calls(turn, slots, ErrorCode.TOOL_ERROR, f"after_model failed ({type(exc).__name__}: {exc})")
            raise
        try:
            gated = GateTurn(calls, partial(self.conclude, slots), slots.open)
            await self.gate(gated)  # a call a step refused is concluded there, unrun
            if gated.refused is not None:
                self.denied_open = gated.refused
            await run_calls(calls, slots, conclude=self.conclude, on_update=self._on_update, signal=self.signal)
        finally:  # also when the caller cancels the run: the step is kept, every call has a result
            for i in slots.open():
                await self.conclude(slots, i, calls[i].outcome(ErrorCode.ABORTED, f"{calls[i].name} was cancelled before it finished"))
            self.results += slots.done()
            self.ended += slots.done()
            self._record(turn.text, [c.request() for c in turn.calls], slots.done(), turn.usage, turn.reasoning, turn.reasoning_ms)
        return calls

    async def _prepare(self, turn: Turn) -> list[PreparedCall]:
        """Each call prepared once, with the arguments it runs with: as streamed, or what
        ``after_model`` returned (a ``tool-update`` with ``arguments`` says so). A call whose
        arguments the output limit cut is never run, nor shown to ``after_model``: it ends
        ``OUTPUT_CUT``, telling the model to send it again shorter."""
        calls: list[PreparedCall] = []
        cut = set(turn.cut_calls())
        for i, call in enumerate(turn.calls):
            if i in cut:
                calls.append(self._output_cut(call))
                continue
            changed = None
            if self.hooks.after_model is not None:
                changed = self.hooks.after_model(call.request().model_copy(deep=True))
                if inspect.isawaitable(changed):
                    changed = await changed
            if changed is None:
                calls.append(call.prepared or self._prepare_streamed(call))
            else:
                self.emitter.emit(ToolUpdateEvent(tool_call_id=call.id, tool_name=call.name, arguments=changed))
                calls.append(prepare(call.name, changed, call_id=call.id, tools=self.tools))
        return calls

    def _output_cut(self, call: StreamedCall) -> PreparedCall:
        unrun = PreparedCall(call.id, call.name, call.arguments, self.tools.get(call.name), presentation=self._static_presentation(call.name))
        why = (
            f"your reply was cut at the output limit while writing the arguments of {call.name}; {call.name} was not run: "
            "send the call again with shorter arguments (e.g. split a long edit or file into several calls)"
        )
        return replace(unrun, failed=unrun.outcome(ErrorCode.OUTPUT_CUT, why))

    async def _cut(self, turn: Turn) -> RunStatus:
        """The model's stream failed or was aborted: the turn's calls end without running."""
        if turn.error is not None:
            await self._close_calls(turn, Slots(len(turn.calls)), turn.error.code, "the model's stream failed")
            raise turn.error
        await self._close_calls(turn, Slots(len(turn.calls)), ErrorCode.ABORTED, "the run was aborted")
        return RunStatus.ABORTED

    async def _close_calls(self, turn: Turn, slots: Slots, code: str, why: str) -> None:
        """A turn whose calls never ran (the stream stopped, or middleware failed). Each started
        call still gets its ``tool-call-end`` and is concluded saying so; memory keeps the text and
        the calls whose arguments had all arrived."""
        for i, call in enumerate(turn.calls):
            if not call.finished:
                self.emitter.emit(ToolCallEndEvent(id=call.id, tool_name=call.name, arguments=call.text))
            unrun = PreparedCall(call.id, call.name, call.request().arguments, presentation=self._static_presentation(call.name))
            await self.conclude(slots, i, unrun.outcome(code, f"{call.name} was not run: {why}"))
        self.results += slots.done()
        self.ended += slots.done()
        finished = [i for i, call in enumerate(turn.calls) if call.finished]
        if turn.text or finished:
            kept = [r for i in finished if (r := slots.results[i]) is not None]
            self._record(turn.text, [turn.calls[i].request() for i in finished], kept, turn.usage, turn.reasoning, turn.reasoning_ms)

    def _static_presentation(self, name: str) -> Any:
        tool = self.tools.get(name)  # a per-arguments presentation comes with the tool-result
        return None if tool is None else tool.static_presentation()

    def _on_update(self, update: ToolUpdate) -> None:
        self.emitter.emit(ToolUpdateEvent.of(update))
        if self.hooks.on_tool_update is not None:
            returned = self.hooks.on_tool_update(update)  # ToolContext logs a callback that raises
            if returned is not None and inspect.isawaitable(returned):
                log.warning("on_tool_update must be a plain function; a coroutine it returned was not awaited")
                getattr(returned, "close", lambda: None)()

    def _record(
        self, text: str, calls: list[ToolCallRequest], results: list[ToolResult], usage: Usage | None = None,
        reasoning: list[Reasoning] | None = None, reasoning_ms: list[int] | None = None,
    ) -> None:
        """The turn and what the model read of each call: into the history and, in one
        transaction, into the thread."""
        limit = self.agent.max_result_length
        reasoning = list(reasoning or [])
        self.history.append(Message(role="assistant", content=text, tool_calls=calls, reasoning=reasoning))
        # the thread keeps what the model wrote with credentials redacted, as it keeps results;
        # its reasoning as it came (a block redaction changes is kept marked altered: never sent back)
        entry = redact_value(AssistantEntry(content=text, tool_calls=calls, usage=usage if usage is not None and usage.counted else None))[0]
        entry.reasoning = kept_reasoning(reasoning, reasoning_ms)
        entries: list[Entry] = [entry]
        for result in results:
            entry = ToolResultEntry.of(result, limit)
            if self.agent.nearby_instructions is not None and result.error is None:
                # a subdirectory's own AGENTS.md, told once when a call first touches it
                read = entry.tool_results[0]
                read.content = self.agent.nearby_instructions.annotate(result.arguments, read.content)
            read = entry.tool_results[0]
            self.history.append(Message(role="tool", tool_call_id=result.call_id, name=result.name, content=read.content, images=list(read.images or [])))
            entries.append(entry)
        self.store.append(self.thread_id, entries)

    def _fail(self, message: str, code: str | None) -> RunStatus:
        self.error, self.error_code = message, code
        self.emitter.emit(ErrorEvent(message=message, code=code))
        return RunStatus.ERROR

    def _end(self, status: RunStatus, duration_ms: float) -> RunEnd:
        end = RunEnd.of(
            status, self.ended, self.tools, steps=self.steps, usage=self.usage, duration_ms=duration_ms,
            error=self.error, error_code=self.error_code,
            peak_context_tokens=self.context.peak or None, context_window=self.context.window,
            compactions=self.context.compactions or None, output=self.structured, budget=self.spent,
        )
        self.emitter.emit(end.finish_event(self.message_id, self.thread_id))
        try:
            self.store.append(self.thread_id, [end.entry(self.message_id)], status=status)
        except Exception:
            log.error("could not record the end of the run in thread %s", self.thread_id, exc_info=True)
        return end
