"""command_output: what a background command printed since the last read, and whether it ended.

The model reads the new output (its newest :data:`~workspace_tools.shell.jobs.READ_LIMIT` bytes,
saying how much came before), the job's state and, once it ended, its exit code; the application
gets the same as details. ``wait_s`` waits for new output (or the end) up to that many seconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool

if TYPE_CHECKING:
    from cogcli.contract.details import BackgroundJobDetails
    from cogcli.contract.context import ToolContext
    from workspace_tools.shell.jobs import Job, Jobs

#: the longest a read may wait for news
MAX_WAIT = 60


class CommandOutputParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(description="The job id run_command(background=true) answered with, e.g. job_1.", max_length=40)
    wait_s: float = Field(default=0, ge=0, le=MAX_WAIT,
                          description="Wait up to this many seconds for new output or the command's end (0: answer now).")


def job_state(job: Job) -> str:
    """``running (12 s)``, ``exited 0 after 3 s``, ``killed after 40 s``."""
    if job.running:
        return f"running ({job.duration:.0f} s)"
    if job.killed:
        return f"killed after {job.duration:.0f} s"
    return f"exited {job.exit_code} after {job.duration:.0f} s"


def job_details(job: Job, output: str, dropped: int, **more: Any) -> BackgroundJobDetails:
    """What the application reads of ``job`` after a read (``output``, ``dropped`` bytes before it):
    the same shape for starting, reading and killing it."""
    from cogcli.contract.details import BackgroundJobDetails

    return BackgroundJobDetails(job=job.id, command=job.command, running=job.running, exit_code=job.exit_code,
                                killed=job.killed, output=output, dropped=dropped, bytes_total=job.total,
                                privileges_removed=[r.as_dict() for r in job.removed], **more)


def command_output_tool(jobs: Jobs) -> Tool[CommandOutputParams]:
    """The tool reading ``jobs``' output."""

    async def execute(params: CommandOutputParams, context: ToolContext) -> Any:
        import anyio.to_thread

        from workspace_tools.sandbox.leftovers import removed_text

        job = jobs.get(params.id)
        if params.wait_s:
            await anyio.to_thread.run_sync(job.wait_for_news, params.wait_s, abandon_on_cancel=True)
        text, dropped = job.take_new()
        state = job_state(job)
        lines = [f"{job.id} {state}: {job.command}"]
        if dropped:
            lines.append(f"…[{dropped} earlier bytes not shown]")
        lines.append(text.rstrip("\n") if text else "(no new output)")
        lines += [line for line in (removed_text(job.removed),) if line]
        details = job_details(job, text, dropped)
        presentation = {"label": "Output", "icon": "terminal", "detail": f"{job.id} · {state}"}
        return tool_output("\n".join(lines), details=details, presentation=presentation)

    return tool(
        kind="read",
        name="command_output",
        description="Read what a background command (run_command with background=true) printed since the last read, "
        "and whether it is still running or its exit code.",
        parameters=CommandOutputParams,
        execute=execute,
        presentation=lambda params: {"label": "Output", "icon": "terminal", "detail": params.id},
        ordered_by="id",
        read_only=True,
    )
