"""A session's background commands (``run_command(background=true)``) as the front ends show
them to the person: ``/jobs`` in chat and ACP, Studio's list, the chat status line.

The jobs themselves live in the session's tools (:class:`workspace_tools.shell.jobs.Jobs`, shared
by ``run_command``, ``command_output`` and ``kill_command``); this reads them without taking any
output the model has not read yet, and kills or keeps one on the person's word (``/jobs keep ID``:
it outlives the session, see :mod:`workspace_tools.shell.kept`; the model has no way to keep one).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class JobRow(BaseModel):
    """One background command as a front end lists it (Studio's JSON: camelCase)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    id: str
    command: str
    running: bool
    #: its exit code once it ended (negative: ended by that signal)
    exit_code: int | None = None
    #: ended by ``kill_command``, ``/jobs kill`` or the session's end
    killed: bool = False
    #: seconds since it started, and how long it ran (until now while it runs)
    age_s: float
    duration_s: float
    #: bytes it printed in all
    bytes_total: int = 0
    #: kept past the session's end by the person: its pid and log (``cog jobs`` lists it later)
    kept_pid: int | None = None
    kept_log: str | None = None

    def state(self) -> str:
        """``running``, ``exited 0``, ``killed``."""
        if self.running:
            return "running, kept" if self.kept_pid else "running"
        return "killed" if self.killed else f"exited {self.exit_code}"


def session_jobs(session: Any) -> Any:
    """The session's :class:`~workspace_tools.shell.jobs.Jobs` (None before :meth:`Session.prepare`,
    or with no ``run_command``). Keep it to list the jobs after the session closed (all killed then)."""
    from workspace_tools.shell.jobs import jobs_of

    return jobs_of(session.run_tools())


def job_rows(session: Any) -> list[JobRow]:
    """The session's background commands, oldest first (none before its first run)."""
    return rows_of(session_jobs(session))


def rows_of(jobs: Any) -> list[JobRow]:
    """The rows of a :class:`~workspace_tools.shell.jobs.Jobs` (none for None), oldest first."""
    if jobs is None:
        return []
    now = time.monotonic()
    return [
        JobRow(id=j.id, command=j.command, running=j.running, exit_code=j.exit_code, killed=j.killed,
               age_s=round(now - j.started, 1), duration_s=round(j.duration, 1), bytes_total=j.total,
               kept_pid=j.kept.pid if j.kept is not None else None, kept_log=j.kept.log if j.kept is not None else None)
        for j in jobs.listing()
    ]


def running_jobs(session: Any) -> int:
    """How many of the session's background commands run now (cheap: the chat's status line asks at each redraw)."""
    jobs = session_jobs(session)
    return 0 if jobs is None else sum(job.running for job in jobs.listing())


def kill_job(session: Any, job_id: str) -> JobRow:
    """End the background command ``job_id`` (its whole process group); raises
    :class:`~cogcli.contract.errors.ToolCallError` naming the known ids when there is no such job."""
    from cogcli.contract.errors import ErrorCode, ToolCallError

    jobs = session_jobs(session)
    if jobs is None:
        raise ToolCallError("no background command in this session yet", code=ErrorCode.INVALID_ARGUMENTS)
    jobs.get(job_id).kill()
    return next(row for row in job_rows(session) if row.id == job_id)


def keep_job(session: Any, job_id: str) -> JobRow:
    """Keep the background command ``job_id`` past the session's end (the person's word); raises
    :class:`~cogcli.contract.errors.ToolCallError` when there is no such job or it ended."""
    from cogcli.contract.errors import ErrorCode, ToolCallError

    jobs = session_jobs(session)
    if jobs is None:
        raise ToolCallError("no background command in this session yet", code=ErrorCode.INVALID_ARGUMENTS)
    jobs.get(job_id).keep(jobs.workspace)
    return next(row for row in job_rows(session) if row.id == job_id)


def jobs_text(rows: list[JobRow], earlier: list[Any] | None = None) -> str:
    """The rows as a small table for a terminal (``/jobs``), the command last (made visible); then
    ``earlier``: the jobs earlier sessions kept in this workspace (:func:`earlier_kept`)."""
    from cogcli.shown.visible import visible
    from workspace_tools.files.image import human_bytes

    kept_part = ["Kept by earlier sessions in this workspace (/jobs kill PID ends one):", *kept_lines(earlier)] if earlier else []
    if not rows:
        return "\n".join(["No background commands in this session (the model starts one with run_command background=true).", *kept_part])
    cells = [(r.id, r.state(), f"{r.age_s:.0f} s ago", human_bytes(r.bytes_total), visible(r.command, one_line=True)) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(4)) + "  " + c[4] for c in cells]
    running = sum(r.running for r in rows)
    lines.append(f"{running} running; /jobs kill ID ends one. All are killed when the session ends but those kept "
                 "with /jobs keep ID (then `cog jobs` lists them; what they change after the session is beyond undo).")
    return "\n".join([*lines, *kept_part])


def jobs_reply(session: Any, argument: str) -> str:
    """What ``/jobs ARGUMENT`` answers (chat and ACP): the list; ``kill ID`` ends one, ``keep ID`` keeps one."""
    from cogcli.contract.errors import CogError
    from cogcli.shown.visible import visible

    words = argument.split()
    if not words:
        return jobs_text(job_rows(session), earlier_kept(session))
    if words[0] == "kill" and len(words) == 2 and words[1].isdigit():
        return kill_kept_reply(session, words[1])
    if words[0] == "kill" and len(words) == 2:
        try:
            row = kill_job(session, words[1])
        except CogError as exc:
            return visible(exc.message, one_line=True)
        return f"{row.id} {row.state()}: {visible(row.command, one_line=True)}"
    if words[0] == "keep" and len(words) == 2:
        try:
            row = keep_job(session, words[1])
        except CogError as exc:
            return visible(exc.message, one_line=True)
        return (f"{row.id} kept (pid {row.kept_pid}): it runs on after this session, its output in {visible(row.kept_log or '')}; "
                f"`cog jobs` lists it, `cog jobs kill {row.kept_pid}` ends it. What it changes after the session is beyond undo.")
    return (f"unknown /jobs argument {visible(argument, one_line=True)!r}: /jobs lists them, /jobs kill ID ends one, "
            "/jobs keep ID keeps one past the session's end, /jobs kill PID ends one kept earlier in this workspace")


def kept_text(records: list[Any]) -> str:
    """``cog jobs``: the kept background commands (:class:`workspace_tools.shell.kept.KeptJob`), each
    with its pid, state, command, log and how to reach a server it runs; the ended ones are forgotten
    once listed (their logs stay)."""
    if not records:
        return "No kept background commands (chat's /jobs keep ID or cog edit --keep-jobs keeps them past a session)."
    lines = kept_lines(records, workspace=True)
    lines.append("cog jobs kill PID ends one (its whole process group). What they change is beyond cog undo.")
    return "\n".join(lines)


def kept_lines(records: list[Any], *, workspace: bool = False) -> list[str]:
    """Each kept job's lines: pid, state, command; its log (and ``workspace``, its workspace); how to
    reach a server it runs. An ended one is forgotten once listed (its log stays)."""
    from cogcli.shown.visible import visible
    from workspace_tools.shell.kept import forget

    lines = []
    for record in records:
        state = "running" if record.running else "ended"
        lines.append(f"{record.id}  {state}  {visible(record.command, one_line=True)}")
        where = f"workspace {visible(record.workspace)} · " if workspace else ""
        lines.append(f"    {where}log {visible(record.log)}")
        if record.running and record.net_pid is not None:
            lines.append(f"    its loopback is the session's own: {record.reach()}")
        if not record.running:
            forget(record)
    return lines


def earlier_kept(session: Any) -> list[Any]:
    """The kept jobs (:class:`workspace_tools.shell.kept.KeptJob`) whose workspace is this session's,
    but those this session kept itself (its own rows say so): what a later chat's ``/jobs`` adds."""
    from workspace_tools.shell.kept import kept_jobs

    jobs = session_jobs(session)
    root = getattr(jobs, "workspace", None) or getattr(session, "root", None)
    if root is None:
        return []
    own = {job.kept.id for job in jobs.listing() if job.kept is not None} if jobs is not None else set()
    here = Path(root).resolve()
    return [r for r in kept_jobs() if r.id not in own and r.workspace and Path(r.workspace).resolve() == here]


def kill_kept_reply(session: Any, pid: str) -> str:
    """``/jobs kill PID``: end a job kept in this workspace — this session's own (as ``/jobs kill ID``)
    or an earlier session's, with ``cog jobs kill``'s checks (a recorded pid whose start time matches)."""
    from cogcli.shown.visible import visible
    from workspace_tools.shell.kept import kill_kept

    jobs = session_jobs(session)
    own = next((j.id for j in (jobs.listing() if jobs is not None else []) if j.kept is not None and j.kept.id == pid), None)
    if own is not None:
        row = kill_job(session, own)
        return f"{row.id} (pid {pid}) {row.state()}: {visible(row.command, one_line=True)}"
    if pid not in {r.id for r in earlier_kept(session)}:
        return (f"no job kept in this workspace with pid {pid}: /jobs lists them (cog jobs lists every kept job, "
                "cog jobs kill PID ends one kept elsewhere)")
    try:
        record = kill_kept(pid)
    except (LookupError, ProcessLookupError) as exc:
        return visible(str(exc), one_line=True)
    return f"killed {record.id}: {visible(record.command, one_line=True)} (its log stays at {visible(record.log)})"
