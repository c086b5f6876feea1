"""Background commands the person kept past their session's end: one record each in the person's
state folder (``$XDG_STATE_HOME/cog/jobs/PID.json``, 0600, beside the command's log ``PID.log``),
listed and killed by ``cog jobs`` / ``cog jobs kill PID``.

A record's id is the keeper's PID (:mod:`workspace_tools.shell.keeper`: the leader of the command's
process group). It also holds the process's start time (``/proc/PID/stat``), so a PID the system
gave to another process since is never taken for the job: that record reads as ended and
``kill`` refuses. Only the person's own folder is read; nothing in a workspace names a record.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from pydantic import BaseModel

from workspace_tools.files.journal_key import state_home

#: seconds between SIGTERM and SIGKILL for a kept job's group
TERM_GRACE = 2.0


class KeptJob(BaseModel):
    """One kept background command."""

    #: the keeper's PID (its process group), what ``cog jobs kill`` takes
    id: str
    pid: int
    #: the process's start time in clock ticks since boot (``/proc/PID/stat`` field 22)
    start_ticks: int
    command: str
    log: str
    workspace: str
    #: the session's id for it (``job_1``) and when it started (Unix time)
    job: str
    started: float
    #: a process inside its network (the loopback it serves on), for ``nsenter``; None: the host's network
    net_pid: int | None = None

    @property
    def running(self) -> bool:
        return start_ticks(self.pid) == self.start_ticks

    def reach(self) -> str:
        """How the person reaches a server it runs: the session's private loopback is entered with nsenter."""
        if self.net_pid is None:
            return "the host's network"
        ns = f"/proc/{self.net_pid}/ns"
        return " ".join(["nsenter", f"--user={ns}/user", f"--net={ns}/net", "--preserve-credentials", "COMMAND"])


def jobs_folder(workspace: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/cog/jobs`` (never inside ``workspace``), made 0700."""
    folder = state_home(workspace) / "cog" / "jobs"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` (None: no such process, or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def first_child(pid: int) -> int | None:
    """A child of ``pid`` (the keeper's: the sandbox, inside the session's network), or None."""
    try:
        words = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(words[0]) if words else None


def save(record: KeptJob, workspace: Path | None = None) -> Path:
    path = jobs_folder(workspace) / f"{record.id}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(record.model_dump_json())
    return path


def kept_jobs() -> list[KeptJob]:
    """Every record, oldest first (an unreadable one left out)."""
    records = []
    for path in sorted(jobs_folder().glob("*.json")):
        try:
            records.append(KeptJob.model_validate(json.loads(path.read_text())))
        except (OSError, ValueError):
            continue
    return sorted(records, key=lambda r: r.started)


def forget(record: KeptJob) -> None:
    """Remove a record (its log stays)."""
    (jobs_folder() / f"{record.id}.json").unlink(missing_ok=True)


def kill_kept(job_id: str) -> KeptJob:
    """End the kept job ``job_id`` (its whole process group: SIGTERM, then SIGKILL) and forget it.
    Raises LookupError naming the known ids when there is none, ProcessLookupError when it ended already."""
    record = next((r for r in kept_jobs() if r.id == job_id), None)
    if record is None:
        known = ", ".join(r.id for r in kept_jobs()) or "none"
        raise LookupError(f"no kept job {job_id!r} (kept: {known}); cog jobs lists them")
    if not record.running:
        forget(record)
        raise ProcessLookupError(f"kept job {job_id} had ended already; its log stays at {record.log}")
    _signal_group(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while record.running and time.monotonic() < deadline:
        time.sleep(0.05)
    if record.running:
        _signal_group(record.pid, signal.SIGKILL)
    forget(record)
    return record


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
