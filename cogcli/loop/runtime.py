"""The public entry points of a run: :class:`Agent`, :class:`Cogitator`, :class:`RunResult`.

    cog = Cogitator(default_store(root))
    result = await cog.run(agent, input="Fix the failing test", on_event=renderer.handle)

The run itself lives in :mod:`cogcli.loop.run` (the loop), :mod:`cogcli.loop.turn` (a model turn),
:mod:`cogcli.loop.execute` (a turn's calls), :mod:`cogcli.loop.conclude` (how each call ends) and
:mod:`cogcli.threads.run_end` (how the run ended); ARCHITECTURE.md follows one call through them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.loop.agent import Agent
from cogcli.gate.approval import Approve
from cogcli.loop.conclude import ToolResultCallback
from cogcli.contract.context import AbortSignal, UpdateCallback
from cogcli.contract.errors import ConfigError
from cogcli.wire.emitter import EventEmitter
from cogcli.wire.events import BaseEvent, BudgetSpent, FileChange, RunStatus, Usage
from cogcli.contract.invoke import invoke_tool
from cogcli.threads.store import ThreadStore
from cogcli.threads.run_end import RunEnd, files_changed
from cogcli.gate.plan_mode import PlanMode
from cogcli.contract.output import ImagePart
from cogcli.contract.result import ToolResult
from cogcli.loop.run import AfterModel, Hooks, Run, ToolUpdateCallback
from cogcli.contract.tool import Tool, tool_index

if TYPE_CHECKING:
    from cogcli.gate.pipeline import GateStep
    from cogcli.hooks.engine import HookSet

EventCallback = Callable[[BaseEvent], Any]

__all__ = ["Agent", "AfterModel", "Cogitator", "EventCallback", "RunResult", "ToolResultCallback", "ToolUpdateCallback", "files_changed"]


class RunResult(BaseModel):
    """What ``Cogitator.run`` returns: the run's :class:`~cogcli.threads.run_end.RunEnd`, its last text
    and every call's result."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    output: str = ""
    status: RunStatus
    thread_id: str
    steps: int = 0
    tool_calls: list[ToolResult] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    error_code: str | None = None
    duration_ms: float = 0.0
    files_changed: list[FileChange] = Field(default_factory=list)
    tests: dict[str, int] | None = None
    #: why the run's last test run did not finish, if it did not
    tests_error: str | None = None
    #: the final answer parsed as JSON and valid against the agent's output schema (else None)
    structured_output: Any = None
    #: the budget the run went past (status ``budget_exceeded``)
    budget: BudgetSpent | None = None
    #: the largest request of the run in input tokens, the model's window, how often the history was compacted
    peak_context_tokens: int | None = None
    context_window: int | None = None
    compactions: int | None = None

    @classmethod
    def of(cls, end: RunEnd, *, output: str, thread_id: str, tool_calls: list[ToolResult]) -> RunResult:
        """Every field of how the run ended (:class:`cogcli.threads.entries.RunEndFields`; its ``output``,
        the structured answer, is ``structured_output`` here, beside the text): none is dropped."""
        fields = dict(end)
        structured = fields.pop("output", None)
        dropped = set(fields) - set(cls.model_fields)
        if dropped:  # a field added to RunEndFields must be added here too (tests/test_runtime.py checks it)
            raise TypeError(f"RunResult lacks {', '.join(sorted(dropped))} of how the run ended")
        return cls(output=output, thread_id=thread_id, tool_calls=tool_calls, structured_output=structured, **fields)


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
        plan: PlanMode | None = None,
        hooks: HookSet | None = None,
        gate_steps: Sequence[GateStep] = (),
        images: Sequence[ImagePart] = (),
    ) -> RunResult:
        """Run ``agent`` on ``input`` (with the ``images`` attached to it) in a new thread, or continuing the thread ``thread_id`` (its
        whole id or a unique prefix; to start a thread under an id of your own, make it first with
        ``store.create_thread(id)``).

        Raises :class:`ConfigError` before the run starts (no event sent) for a thread id that
        names no thread or several, or two tools with one name; everything after that ends in a
        :class:`RunResult` and exactly one ``finish`` event. ``on_tool_result`` is called exactly
        once for every call, whatever its outcome (ran, failed, refused, aborted, cut off).

        With ``approve``, calls of tools that declare ``side_effects`` wait for it: one
        ``approval-required`` event per turn lists them, ``await approve(approvals)`` returns a
        decision per call id (see :mod:`cogcli.gate.approval`), and a refused call ends with error code
        ``DENIED`` without running. A run that ends while a refusal is the last word on its side
        effects (nothing approved since) ends with status ``denied``. Without ``approve`` every
        call runs.

        ``hooks``: hook commands run at the run's events (:mod:`cogcli.hooks`; a
        :class:`~cogcli.session.Session` passes the person's and the approved workspace's).

        With ``plan`` (:class:`cogcli.gate.plan_mode.PlanMode`), a call of a tool that does not declare
        ``read_only`` ends with error code ``PLAN_MODE`` before anything else sees it.

        ``gate_steps``: steps of your own that every call passes before it runs
        (:class:`cogcli.gate.pipeline.GateStep`: each may refuse, change or approve the turn's open
        calls), after plan mode and the PreToolUse hooks, before the allow list and the person."""
        try:
            tools = tool_index(agent.tools)
        except ValueError as exc:
            raise ConfigError(f"agent {agent.name!r}: {exc}") from None
        if thread_id:
            thread = self.store.require_id(thread_id, to=" to continue")
        else:
            thread = self.store.create_thread(title=input, model=getattr(agent.model, "name", None)).id
        plugged = Hooks(on_tool_result=on_tool_result, on_tool_update=on_tool_update, after_model=after_model, approve=approve, commands=hooks, plan=plan, gate_steps=gate_steps)
        run = Run(agent, tools, self.store, thread, EventEmitter(on_event), signal or AbortSignal(), plugged)
        end, output = await run.execute(input, images)
        return RunResult.of(end, output=output, thread_id=thread, tool_calls=list(run.results))

    async def invoke_tool(
        self,
        tool: Tool[Any] | str,
        args: Mapping[str, Any] | str | None = None,
        *,
        on_update: UpdateCallback | None = None,
        tools: list[Tool[Any]] | Mapping[str, Tool[Any]] | None = None,
        call_id: str | None = None,
        timeout: float | None = None,
        signal: AbortSignal | None = None,
    ) -> ToolResult:
        """Call one tool outside a run, exactly as a run calls it (:func:`cogcli.contract.invoke.invoke_tool`):
        validated, run under its timeout, split, and redacted; ``on_update`` gets its progress."""
        return await invoke_tool(tool, args, tools=tools, call_id=call_id, on_update=on_update, timeout=timeout, signal=signal)
