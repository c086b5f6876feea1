"""What a session adds to the workspace tools and the system prompt: the agent's own tools
(``update_plan``; ``load_skill`` when there are skills), the list of skills, and plan mode's
section for a run in plan mode."""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogcli.settings.load import Settings
    from cogcli.gate.plan_mode import PlanMode
    from cogcli.project.skills import Skills
    from cogcli.contract.tool import Tool


def agent_tools(settings: Settings, on_note: Callable[[str], None] | None = None,
                known: Collection[str] = ()) -> tuple[list[Tool[Any]], Skills]:
    """The agent's own tools (``task``: subagents, :mod:`cogcli.loop.subagent`) and the skills they load (the person's and the workspace's).
    ``known``: the session's other tools, which a named agent's ``tools`` are checked against now."""
    from cogcli.agent_tools.update_plan import update_plan_tool
    from cogcli.agent_tools.load_skill import load_skill_tool
    from cogcli.agent_tools.delegate_task import TASK_TOOL, task_tool
    from cogcli.loop.subagent import Subagents
    from cogcli.project.named_agents import load_named_agents
    from cogcli.project.skills import load_skills

    skills = load_skills(settings.root)
    agents = load_named_agents(settings.root)
    for note in agents.notes:
        (on_note or (lambda _: None))(note)
    tools: list[Tool[Any]] = [update_plan_tool()]
    if skills.skills:
        tools.append(load_skill_tool(skills))
    subagents = Subagents(agents=agents, limit=settings.max_subagents, model_for=partial(_agent_model, settings))
    tools.append(task_tool(subagents, agents.prompt_lines()))
    mcp = bool(settings.mcp_servers or settings.remote_servers or settings.workspace_remote_servers)
    for warning in agents.tool_warnings({*known, *(t.name for t in tools)} - {TASK_TOOL}, mcp=mcp) if known else ():
        (on_note or (lambda _: None))(warning)
    return tools, skills


def _agent_model(settings: Settings, spec: str) -> Any:
    """A person's named agent's model (``provider:model``), made as the session's is."""
    import dataclasses

    from cogcli.session.factory import make_model

    return make_model(dataclasses.replace(settings, model=spec))


def run_instructions(prompt: str, project_section: str, skills: Skills | None, plan: PlanMode | None, tools: list[Tool[Any]]) -> str:
    """The system prompt, then the instruction files, the skills and (in plan mode) plan mode's rules."""
    parts = [prompt, project_section, skills.prompt_section() if skills is not None else "", plan.instructions(tools) if plan is not None else ""]
    return "\n\n".join(p for p in parts if p)
