"""task: hand a piece of work to a subagent — a child run with its own context window in the same
session (same workspace, sandbox, secret rules, hooks and approvals). The parent's model reads only
the child's final answer; the details (:class:`cogcli.contract.details.SubagentDetails`) carry the
child's thread, the files it changed, its tests and what it spent; its current step streams as this
call's progress. The child run itself is :mod:`cogcli.loop.subagent`'s (handed in as ``delegate``:
a tool never reaches into the loop)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.context import ToolContext
from cogcli.contract.tool import Tool, tool

#: the tool's name: never given to a subagent (no recursion)
TASK_TOOL = "task"


class TaskParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    description: str = Field(min_length=1, max_length=80, description="A few words naming the work (shown to the person).")
    prompt: str = Field(min_length=1, max_length=50_000, description="Everything the subagent needs to know: it sees nothing of this conversation.")
    tools: list[str] | None = Field(
        default=None, max_length=100, description="Only these of your tools (omit: all of yours but task). Never more than yours."
    )
    agent: str | None = Field(default=None, max_length=64, description="A named agent to run as (listed in this tool's description).")


#: ``(params, context) -> tool_output(...)``: runs the child (:class:`cogcli.loop.subagent.Subagents`)
Delegate = Callable[[TaskParams, ToolContext], Awaitable[Any]]


def task_tool(delegate: Delegate, agents_listed: str = "") -> Tool[TaskParams]:
    """The ``task`` tool running its children with ``delegate``; ``agents_listed``: the named agents, one a line."""
    description = (
        "Delegate a self-contained piece of work to a subagent with its own context window (same workspace and "
        "permissions; its calls are approved like yours). It sees only `prompt`, so say everything it needs; you read "
        "only its final answer. Several task calls in one turn run at once. Use it for independent work that would "
        "fill your context (a search across the codebase, a fix in one module with its tests)."
    )
    if agents_listed:
        description += "\nNamed agents (`agent`):\n" + agents_listed

    async def execute(params: TaskParams, context: ToolContext) -> Any:
        return await delegate(params, context)

    return tool(
        name=TASK_TOOL,
        description=description,
        parameters=TaskParams,
        execute=execute,
        presentation=lambda p: {"label": "Task", "icon": "bot", "detail": p.description + (f" · {p.agent}" if p.agent else "")},
        kind="other",
        # the call itself changes nothing: each of the subagent's calls passes the gate on its own
        # (plan mode, hooks, allow list, the person's approval), so the task is not asked about twice
        read_only=True,
        ordered_by=None,
    )
