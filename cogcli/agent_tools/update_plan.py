"""update_plan: the model records the steps it means to take and how far it is; clients draw them
(an ACP editor's plan, a row of the run). It changes nothing: plan mode runs it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool

MAX_STEPS = 50


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str = Field(min_length=1, max_length=500, description="One concrete step, in a sentence.")
    status: Literal["pending", "in_progress", "completed"] = Field(default="pending", description="How far the step is.")


class UpdatePlanParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    steps: list[PlanStep] = Field(min_length=1, max_length=MAX_STEPS, description="The whole plan, in order (each call replaces the last).")


class PlanDetails(BaseModel):
    """``update_plan``'s details: the plan as it now stands."""

    steps: list[PlanStep]


def plan_steps(details: Any) -> list[PlanStep] | None:
    """The steps of an ``update_plan`` result's details (None: they are not a plan)."""
    if not isinstance(details, dict) or not isinstance(details.get("steps"), list):
        return None
    try:
        return PlanDetails.model_validate(details).steps
    except ValueError:
        return None


def update_plan_tool() -> Tool[UpdatePlanParams]:
    def execute(params: UpdatePlanParams) -> Any:
        done = sum(s.status == "completed" for s in params.steps)
        marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
        text = "\n".join(f"{marks[s.status]} {i}. {s.step}" for i, s in enumerate(params.steps, start=1))
        shown = f"{len(params.steps)} step{'s' if len(params.steps) != 1 else ''}" + (f", {done} done" if done else "")
        return tool_output(
            f"Plan recorded ({shown}):\n{text}",
            details=PlanDetails(steps=params.steps).model_dump(),
            presentation={"label": "Plan", "icon": "list-checks", "detail": shown},
        )

    return tool(
        name="update_plan",
        description=(
            "Record your plan: the steps you will take, each pending, in_progress or completed. Send the whole "
            "plan each time (it replaces the last); update it as steps are done. Changes nothing in the workspace."
        ),
        parameters=UpdatePlanParams,
        execute=execute,
        presentation={"label": "Plan", "icon": "list-checks"},
        kind="think",
        read_only=True,
        ordered_by=None,
    )
