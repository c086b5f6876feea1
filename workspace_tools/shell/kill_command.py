"""kill_command: end a background command and everything it started (SIGTERM, then SIGKILL)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool

if TYPE_CHECKING:
    from cogcli.contract.context import ToolContext
    from workspace_tools.shell.jobs import Jobs


class KillCommandParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(description="The job id run_command(background=true) answered with, e.g. job_1.", max_length=40)


def kill_command_tool(jobs: Jobs) -> Tool[KillCommandParams]:
    """The tool ending ``jobs``' commands."""

    async def execute(params: KillCommandParams, context: ToolContext) -> Any:
        import anyio.to_thread

        from workspace_tools.sandbox.leftovers import removed_text
        from workspace_tools.shell.command_output import job_details, job_state

        job = jobs.get(params.id)
        was_running = job.running
        await anyio.to_thread.run_sync(job.kill)
        text, dropped = job.take_new()
        state = job_state(job)
        head = f"{job.id} {state}" if was_running else f"{job.id} had already ended: {state}"
        lines = [head]
        if text.strip():
            lines.append(("…" if dropped else "") + text.rstrip("\n"))
        lines += [line for line in (removed_text(job.removed),) if line]
        details = job_details(job, text, dropped)
        presentation = {"label": "Stop", "icon": "terminal", "detail": f"{job.id} · {state}"}
        return tool_output("\n".join(lines), details=details, presentation=presentation)

    return tool(
        kind="execute",
        name="kill_command",
        description="End a background command (run_command with background=true) and everything it started.",
        parameters=KillCommandParams,
        execute=execute,
        presentation=lambda params: {"label": "Stop", "icon": "terminal", "detail": params.id},
        ordered_by="id",
    )
