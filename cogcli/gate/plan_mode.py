"""Plan mode: the model may look but not touch, and ends with a plan the person can then run.

Enforced at the tool gate, never by the prompt alone (peers that only tell the model are bypassed):
before any hook or approval, each call of a turn whose tool does not declare ``read_only``
(:attr:`cogcli.contract.tool.Tool.read_only`) ends with ``errorCode: "PLAN_MODE"`` — the model reads why
and what to do instead — and nothing runs. A tool changes nothing only by its own declaration:
``read_file``, ``list_files``, ``search_text``, ``git_status``, ``git_diff``, ``load_skill``,
``update_plan``, and an MCP tool whose server marks it ``readOnlyHint`` (the hint cog already trusts
to run it unasked). ``run_tests`` (and any tool that runs code) is refused unless the person lets it
run in plan mode by name (:attr:`PlanMode.allow`: the setting ``plan_allow``, ``--plan-allow
run_tests``, ``COG_PLAN_ALLOW`` or the person's config.toml — never the workspace's files), since the
tests are code the model may have written.

The model is told it is in plan mode (:data:`PLAN_INSTRUCTIONS`, after the system prompt of that
run only), so a later run in the same thread (``/go``, ``cog edit --last "go"``) has its tools back.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogcli.contract.tool import Tool

#: what a person types to run the plan a plan-mode run ended with (``cog edit --last "go"``)
GO = "Go ahead: carry out the plan you made, step by step, then run the tests."

PLAN_INSTRUCTIONS = """\
# Plan mode

You are in plan mode: investigate and plan, change nothing. Only tools that change nothing run
({allowed}); any other call is refused by cog without running (error PLAN_MODE), so do not try
to edit, write or run anything. Read the code the task is about, then end your reply with the plan:
a numbered list of concrete steps (files and functions to change, what to change, how to check it).
{plan_tool}The person reads the plan and tells you when to carry it out."""


@dataclass(frozen=True)
class PlanMode:
    """A run in plan mode. ``allow``: tools the person lets run all the same (by name; e.g.
    ``run_tests``), though they do not declare ``read_only``."""

    allow: frozenset[str] = frozenset()

    @classmethod
    def of(cls, allow: Collection[str] = ()) -> PlanMode:
        return cls(frozenset(allow))

    def permits(self, tool: Tool[Any] | None) -> bool:
        """Whether a call of ``tool`` may run in plan mode (an unknown tool fails on its own)."""
        return tool is None or tool.read_only or tool.name in self.allow

    def refusal(self, tool_name: str) -> str:
        """What the model reads of a refused call."""
        return (
            f"{tool_name} was not run: cog is in plan mode, where only tools that change nothing run. "
            "Nothing was changed. Do not call it again in this run: finish your investigation with the "
            "read-only tools and end with a numbered plan; the person runs the plan when they approve it."
        )

    def instructions(self, tools: Sequence[Tool[Any]]) -> str:
        """The section that follows the system prompt in a plan-mode run."""
        allowed = [t.name for t in tools if self.permits(t)]
        plan_tool = "Also record the steps with update_plan, so the person's editor can show them.\n" if "update_plan" in allowed else ""
        return PLAN_INSTRUCTIONS.format(allowed=", ".join(allowed) or "none", plan_tool=plan_tool)


def plan_command(text: str) -> tuple[str, bool] | None:
    """``/plan INSTRUCTION`` → (the instruction, True: plan mode); ``/go [NOTE]`` → (carry out the
    plan, False); None for any other text. What ``cog edit`` makes of the chat's two commands."""
    from cogcli.project.custom_commands import parse_command_line

    parsed = parse_command_line(text.strip())
    if parsed is None or parsed[0] not in ("plan", "go"):
        return None
    name, argument = parsed
    if name == "plan":
        return argument, True
    return (f"{GO}\n\n{argument}" if argument else GO), False
