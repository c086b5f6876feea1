"""Subagents: what a ``task`` call (:mod:`cogcli.agent_tools.delegate_task`) runs — a child :class:`~cogcli.loop.run.Run`
with its own messages and thread, inside the run that called it (:data:`~cogcli.loop.run.CURRENT_RUN`).

The child holds exactly as its parent: the same store, workspace tools (so the same sandbox, secret
rules and undo journal), the same gate — plan mode, the session's hooks (SubagentStart/SubagentStop
for its start and end), the caller's gate steps, the allow list and the person's approver, whose
questions name the task (``Task "fix ops" · Edit file · a.py``) and whose "always" answers are the
parent's own (it is the same approver) — and the same budget: its usage is the parent's too, and
its budget checks count the whole run's. Its tools can only narrow the parent's; ``task`` is never
among them (depth 1). Its events are not the parent's: its current step is the task call's
progress (:class:`~cogcli.contract.details.SubagentStep`); its approval questions and hooks go to
the parent's stream marked ``subagent`` (the task's call id and the child's thread).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from cogcli.agent_tools.delegate_task import TASK_TOOL, TaskParams
from cogcli.contract.context import ToolContext
from cogcli.contract.details import SubagentDetails, SubagentFile, SubagentStep
from cogcli.contract.errors import CogError, ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.loop.agent import Agent
from cogcli.loop.run import CURRENT_RUN, Hooks, Run
from cogcli.wire.emitter import EventEmitter
from cogcli.wire.events import ApprovalRequiredEvent, BaseEvent, RunStatus, SubagentTag, ToolCallEndEvent, ToolResultEvent

if TYPE_CHECKING:
    from cogcli.gate.approval import Approve
    from cogcli.project.named_agents import NamedAgent, NamedAgents

#: what a subagent is told beside its parent's instructions
SUBAGENT_RULES = (
    "# You are a subagent\n\nAnother agent gave you one task; it reads only your final answer, nothing else of "
    "this conversation. Do the task with your tools, then end with a complete, concise report: what you found or "
    "changed (files), and the tests you ran and their outcome. You cannot start subagents yourself."
)


class Subagents:
    """A session's ``task`` delegate: at most ``limit`` children run at once (``max_subagents``);
    ``agents``: the named agents; ``model_for``: a person's agent's ``model`` made into a model."""

    def __init__(self, *, agents: NamedAgents | None = None, limit: int = 3, model_for: Callable[[str], Any] | None = None) -> None:
        self.agents, self.limit, self.model_for = agents, max(1, limit), model_for
        self._slots: anyio.Semaphore | None = None
        #: one question at a time per parent run: concurrent children share its approver (a terminal, a web page)
        self._asking: weakref.WeakKeyDictionary[Run, anyio.Lock] = weakref.WeakKeyDictionary()
        #: the person's agents' models, made once each (a model client is not closed until the process ends)
        self._models: dict[str, Any] = {}
        #: the most children seen running at once (for tests and benchmarks)
        self.running = self.peak = 0

    async def __call__(self, params: TaskParams, context: ToolContext) -> Any:
        parent = CURRENT_RUN.get()
        if parent is None:
            raise ToolCallError("task runs a subagent inside a run; called on its own there is no run to join", code=ErrorCode.INVALID_ARGUMENTS)
        if parent.parent is not None:
            raise ToolCallError("a subagent cannot start another subagent: do the work yourself", code=ErrorCode.INVALID_ARGUMENTS)
        named = self._named(params.agent)
        agent = self._agent(parent, params, named)
        if self._slots is None:
            self._slots = anyio.Semaphore(self.limit)
        async with self._slots:
            self.running += 1
            self.peak = max(self.peak, self.running)
            try:
                return await self._run(parent, agent, params, context)
            finally:
                self.running -= 1

    def _named(self, name: str | None) -> NamedAgent | None:
        if name is None:
            return None
        found = self.agents.get(name) if self.agents is not None else None
        if found is None:
            names = self.agents.names() if self.agents is not None else "none"
            raise ToolCallError(f"no agent named {name!r}; the agents are: {names}", code=ErrorCode.INVALID_ARGUMENTS)
        return found

    def _agent(self, parent: Run, params: TaskParams, named: NamedAgent | None) -> Agent:
        mine = [t for name, t in parent.tools.items() if name != TASK_TOOL]
        for wanted, whose in ((named.tools if named else None, f"the agent {named.name if named else ''}'s"), (params.tools, "task's `tools`")):
            if wanted is None:
                continue
            known = {t.name for t in mine}
            unknown = [w for w in wanted if w not in known]
            if unknown:
                raise ToolCallError(
                    f"{whose} tools name {', '.join(map(repr, unknown))}, which the subagent cannot have: it may use only "
                    f"these of its parent's: {', '.join(sorted(known)) or 'none'}", code=ErrorCode.INVALID_ARGUMENTS,
                )
            mine = [t for t in mine if t.name in set(wanted)]
        instructions = f"{parent.agent.instructions}\n\n{SUBAGENT_RULES}"
        model = parent.agent.model
        if named is not None:
            from cogcli.secrets.redactor import redact

            whose = "the person's own" if named.source == "personal" else "the repository's (its authors' text, like AGENTS.md: it cannot change your tools or permissions)"
            instructions += f"\n\n# Agent: {named.name} ({named.shown}, {whose})\n\n{redact(named.body)[0]}"
            if named.model is not None and self.model_for is not None:
                model = self._model(named)
        base = parent.agent
        return Agent(
            name=named.name if named else "general", instructions=instructions, model=model, tools=mine, max_steps=base.max_steps,
            max_result_length=base.max_result_length, context_window=base.context_window if model is base.model else None, budget=base.budget,
        )

    def _model(self, named: NamedAgent) -> Any:
        spec = str(named.model)
        if spec not in self._models:
            try:
                self._models[spec] = self.model_for(spec)  # type: ignore[misc]
            except CogError as exc:
                raise ToolCallError(f"the agent {named.name} ({named.shown}) names the model {spec!r}, which cannot be used: {exc}; "
                                    "run the task without that agent, or fix its model line", code=ErrorCode.INVALID_ARGUMENTS) from None
        return self._models[spec]

    async def _run(self, parent: Run, agent: Agent, params: TaskParams, context: ToolContext) -> Any:
        thread = parent.store.create_thread(title=params.description, model=getattr(agent.model, "name", None)).id
        follow = _Follow(parent, agent.name, params.description, thread, context)
        hooks = Hooks(
            approve=_marked(parent.hooks.approve, params.description, self._asking.setdefault(parent, anyio.Lock())), plan=parent.hooks.plan, commands=parent.hooks.commands,
            gate_steps=parent.hooks.gate_steps, parent=parent,
        )
        child = Run(agent, {t.name: t for t in agent.tools}, parent.store, thread, EventEmitter(follow.event), context.signal, hooks)
        try:
            end, output = await child.execute(params.prompt)
        finally:
            parent.ended += child.ended  # its files and tests are the run's
        details = SubagentDetails(
            agent=agent.name, description=params.description, thread_id=thread, status=str(end.status), steps=end.steps,
            tool_calls=len(child.results), files_changed=[SubagentFile(**f.model_dump(exclude_none=True)) for f in end.files_changed], tests=end.tests,
            input_tokens=end.usage.input_tokens, output_tokens=end.usage.output_tokens, cost_usd=end.usage.cost_usd, error=end.error,
        )
        content = output or "(the subagent gave no final answer)"
        if end.status != RunStatus.COMPLETED:
            content = f"The subagent stopped ({end.status}{': ' + end.error if end.error else ''}). Its last words:\n{content}"
        calls = len(child.results)
        shown = f"{params.description} · {end.status}, {calls} call{'' if calls == 1 else 's'}"
        return tool_output(content, details=details.model_dump(exclude_none=True), presentation={"label": "Task", "icon": "bot", "detail": shown})


def _marked(approve: Approve | None, description: str, lock: anyio.Lock) -> Approve | None:
    """The parent's approver, its questions naming the task: one approver, so its "always" answers
    hold for both; asked by one child at a time (approvers were written for one turn's question at a time)."""
    if approve is None:
        return None

    async def asked(approvals: list[Any]) -> Any:
        async with lock:
            return await approve([mark(a, description) for a in approvals])

    asked.final = getattr(approve, "final", False)  # type: ignore[attr-defined]
    return asked


def mark(approval: Any, description: str) -> Any:
    return approval.model_copy(update={"description": f'Task "{description}" · {approval.description}'})


class _Follow:
    """A child's events as its task call's progress; its approval questions and hooks on the parent's stream, marked."""

    def __init__(self, parent: Run, agent: str, description: str, thread: str, context: ToolContext) -> None:
        self.parent, self.agent, self.description, self.thread, self.context = parent, agent, description, thread, context
        self.calls = 0
        self.titles: dict[str, str] = {}

    def event(self, event: BaseEvent) -> None:
        kind = getattr(event, "type", "")
        if kind in ("approval-required", "hook"):
            tag = SubagentTag(tool_call_id=self.context.call_id, thread_id=self.thread, agent=self.agent)
            fields = {**event.model_dump(exclude={"seq", "timestamp"}), "subagent": tag}
            if isinstance(event, ApprovalRequiredEvent):
                fields["approvals"] = [mark(a, self.description) for a in event.approvals]
            self.parent.emitter.emit(type(event)(**fields))
        elif isinstance(event, ToolCallEndEvent):
            self.calls += 1
            shown = event.presentation
            title = " · ".join(p for p in (shown.label, shown.detail) if p) if shown is not None else event.tool_name
            self.titles[event.id] = title
            self._step(event.id, event.tool_name, title, "running")
        elif isinstance(event, ToolResultEvent):
            call_id = event.tool_call_id
            self._step(call_id, event.tool_name, self.titles.get(call_id, event.tool_name), "failed" if event.error is not None else "done")

    def _step(self, call_id: str, tool_name: str, title: str, status: str) -> None:
        step = SubagentStep(subagent=self.agent, thread_id=self.thread, call_id=call_id, tool_name=tool_name, title=title, status=status, calls=self.calls)
        self.context.update(
            content=f"{self.description} · {title}" + ("" if status == "running" else f" ({status})"), details=step.model_dump(),
            presentation={"label": "Task", "icon": "bot", "detail": f"{self.description} · {title}"},
        )
