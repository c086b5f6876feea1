"""Background commands: started by ``run_command(…, background=true)``, read and killed by id.

A :class:`Jobs` belongs to one session (made with the workspace tools). Each job is a process
group started in the sandbox, its output (stdout and stderr, merged) drained by a thread into a
bounded buffer: the newest :data:`BUFFER` bytes stay, older ones are counted as dropped, so a
chatty server never grows memory. ``command_output`` reads what came since the last read;
``kill_command`` ends the group (SIGTERM, then SIGKILL). :meth:`Jobs.close` kills every job still
running — the session calls it when it closes, and an ``atexit`` hook calls it if the process ends
first — and stops the session's shared network (:mod:`workspace_tools.sandbox.shared_net`).

Each job runs under a keeper (:mod:`workspace_tools.shell.keeper`) that ends it when cog goes,
however cog goes, unless the person kept it (:meth:`Job.keep`: chat's ``/jobs keep ID``, or
``keep_all`` from ``cog edit --keep-jobs``): a kept job outlives the session, its output in a
bounded log in the person's state folder, recorded for ``cog jobs`` (:mod:`workspace_tools.shell.kept`).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.host.processes import kill_group
from workspace_tools.sandbox.shared_net import SharedNetwork

log = logging.getLogger("cogcli")

#: the most output a job keeps (its newest bytes)
BUFFER = 256 * 1024
#: the most one read returns (the newest of what came since the last read)
READ_LIMIT = 16 * 1024
#: at most this many jobs run at once in a session
MAX_RUNNING = 8
#: seconds between SIGTERM and SIGKILL
TERM_GRACE = 2.0
#: after the keeper exits, how long its last output may take to be read before the job counts as ended
DRAIN_WAIT = 2.0


@dataclass
class Job:
    """One background command."""

    id: str
    command: str
    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    started_ns: int = field(default_factory=time.time_ns)
    sandboxed: bool = True
    #: it runs in the session's shared loopback network (:mod:`workspace_tools.sandbox.shared_net`)
    shared_network: bool = False
    exit_code: int | None = None
    ended: float | None = None
    killed: bool = False
    #: the person kept it past the session's end: its record (:class:`workspace_tools.shell.kept.KeptJob`)
    kept: Any = None
    #: where its output goes once kept (decided when it starts)
    log_path: str = ""
    #: bytes received in all, and the offset the model has read up to
    total: int = 0
    read_to: int = 0
    #: run once when the job has ended (the setuid sweep of :mod:`workspace_tools.sandbox.leftovers`),
    #: what it returns kept in ``removed``
    sweep: Callable[[], list[Any]] | None = None
    removed: list[Any] = field(default_factory=list)
    _swept: bool = False
    _buffer: bytearray = field(default_factory=bytearray)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    @property
    def duration(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def _feed(self, chunk: bytes) -> None:
        with self._changed:
            self._buffer += chunk
            self.total += len(chunk)
            if len(self._buffer) > BUFFER:
                del self._buffer[: len(self._buffer) - BUFFER]
            self._changed.notify_all()

    def _finish(self, code: int) -> None:
        with self._changed:
            if self.exit_code is not None:
                return
            self.exit_code = code
            self.ended = time.monotonic()
        self._after_end()
        with self._changed:
            self._changed.notify_all()

    def _after_end(self) -> None:
        with self._changed:
            if self._swept or self.sweep is None:
                return
            self._swept = True
        self.removed = self.sweep()

    def wait_for_news(self, wait_s: float) -> None:
        """Block (in a worker thread) until output beyond what was read comes, the job ends, or ``wait_s`` passes."""
        deadline = time.monotonic() + wait_s
        with self._changed:
            while self.total == self.read_to and self.running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)

    def take_new(self) -> tuple[str, int]:
        """(the output since the last read, at most :data:`READ_LIMIT` bytes of its end; how many bytes of it were dropped)."""
        with self._changed:
            start = self.total - len(self._buffer)  # offset of the buffer's first byte
            begin = max(self.read_to, start, self.total - READ_LIMIT)
            dropped = begin - self.read_to
            text = bytes(self._buffer[begin - start :]).decode("utf-8", "replace")
            self.read_to = self.total
        return text, dropped

    def kill(self) -> None:
        """End the job's whole process group; wait until it has ended."""
        if not self.running:
            return
        self.killed = True
        kill_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(TERM_GRACE)
        except subprocess.TimeoutExpired:
            kill_group(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._finish(self.process.returncode)  # whichever of this and the waiter thread comes first
        if self.kept is not None:
            from workspace_tools.shell.kept import forget

            forget(self.kept)

    def keep(self, workspace: Path | None = None) -> Any:
        """Keep the job past the session's end (the person's word, never the model's): its keeper
        writes its output to :attr:`log_path` from now on and no longer ends it with cog. Returns its
        record (:class:`workspace_tools.shell.kept.KeptJob`); a job that ended cannot be kept."""
        from workspace_tools.shell import kept

        if self.kept is not None:
            return self.kept
        if not self.running or self.process.stdin is None:
            raise ToolCallError(f"{self.id} has ended; only a running background command can be kept",
                                code=ErrorCode.INVALID_ARGUMENTS)
        ticks = kept.start_ticks(self.process.pid)
        if ticks is None:
            raise ToolCallError(f"{self.id} has ended; only a running background command can be kept",
                                code=ErrorCode.INVALID_ARGUMENTS)
        self.process.stdin.write(b"keep\n")
        self.process.stdin.flush()
        record = kept.KeptJob(id=str(self.process.pid), pid=self.process.pid, start_ticks=ticks, command=self.command,
                              log=self.log_path, workspace=str(workspace or ""), job=self.id, started=self.started_ns / 1e9,
                              net_pid=kept.first_child(self.process.pid) if self.shared_network else None)
        kept.save(record)
        self.kept = record
        return record


class Jobs:
    """A session's background commands."""

    def __init__(self, *, keep_all: bool = False, workspace: Path | None = None) -> None:
        #: the person's ``--keep-jobs``: every job still running when the session closes is kept
        self.keep_all = keep_all
        self.workspace = workspace
        self._jobs: dict[str, Job] = {}
        self._count = 0
        self._lock = threading.Lock()
        self.network = SharedNetwork()
        _LIVE.add(self)

    def start(self, command: str, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], sandboxed: bool,
              sweep: Callable[[int], list[Any]] | None = None, shared_network: bool = False) -> Job:
        """Start ``argv`` (the sandbox prefix, then ``bash -c command``) as a new job; ``sweep(since_ns)`` runs once it ended."""
        with self._lock:
            running = [j.id for j in self._jobs.values() if j.running]
            if len(running) >= MAX_RUNNING:
                raise ToolCallError(
                    f"{len(running)} background commands are running already ({', '.join(running)}), the most a session may "
                    "have; end one with kill_command first",
                    code=ErrorCode.TOOL_ERROR,
                )
            self._count += 1
            job_id = f"job_{self._count}"
        since = time.time_ns()
        from workspace_tools.host.programs import trusted_python
        from workspace_tools.shell.keeper import keeper_argv
        from workspace_tools.shell.kept import jobs_folder

        python = trusted_python()
        if not python:
            raise ToolCallError("cannot start a background command: no Python outside the workspace to keep it",
                                code=ErrorCode.TOOL_ERROR)
        log_path = str(jobs_folder(self.workspace) / f"{job_id}-{since}.log")
        try:  # the keeper's stdin is the lifeline (see keeper.py), never written but to keep the job
            process = subprocess.Popen(keeper_argv(python, log_path, argv), cwd=cwd, env=dict(env), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            raise ToolCallError(f"cannot start the command: {exc.strerror}", code=ErrorCode.TOOL_ERROR) from None
        job = Job(id=job_id, command=command, process=process, sandboxed=sandboxed, started_ns=since, log_path=log_path,
                  shared_network=shared_network)
        if sweep is not None:
            job.sweep = lambda: sweep(job.started_ns)
        drain = threading.Thread(target=_drain, args=(job,), name=f"cog-{job_id}-out", daemon=True)
        drain.start()
        threading.Thread(target=_reap, args=(job, drain), name=f"cog-{job_id}-wait", daemon=True).start()
        with self._lock:
            self._jobs[job_id] = job
        return job

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
            known = ", ".join(self._jobs) or "none"
        if job is None:
            raise ToolCallError(f"no background command {job_id!r} in this session (known: {known})",
                                code=ErrorCode.INVALID_ARGUMENTS)
        return job

    def listing(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def close(self) -> None:
        """Kill every job still running but the kept ones (all with :attr:`keep_all`), then the shared
        network (a kept job's processes hold their network on). Each kept job is said (its PID, command,
        log) and what it changed so far recorded for undo: what it does from now on is beyond undo's reach."""
        for job in self.listing():
            if self.keep_all and job.running and job.kept is None:
                try:
                    job.keep(self.workspace)
                except ToolCallError:
                    pass
            if job.kept is None or not job.running:
                job.kill()
                continue
            job._after_end()  # what it changed until now, in the journal of the run going on
            if job.process.stdin is not None and not job.process.stdin.closed:
                job.process.stdin.close()
            log.warning("kept %s running after the session (pid %s): %s — its output goes to %s; `cog jobs` lists it, "
                        "`cog jobs kill %s` ends it. What it changes from now on is beyond cog undo.",
                        job.id, job.kept.pid, job.command, job.kept.log, job.kept.id)
        self.network.close()
        _LIVE.discard(self)


def _drain(job: Job) -> None:
    stream = job.process.stdout
    assert stream is not None
    fd = stream.fileno()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        job._feed(chunk)
    stream.close()


def _reap(job: Job, drain: threading.Thread) -> None:
    code = job.process.wait()
    drain.join(DRAIN_WAIT)  # ended means all it printed is in (the keeper's stdout closes as it exits)
    job._finish(code)


#: every open Jobs, killed at exit when the session did not close them (a crash, Ctrl-C)
_LIVE: weakref.WeakSet[Jobs] = weakref.WeakSet()


@atexit.register
def _kill_all_at_exit() -> None:
    for jobs in list(_LIVE):
        jobs.close()


def jobs_of(tools: Iterable[Any]) -> Jobs | None:
    """The :class:`Jobs` a session's tools share (``run_command``'s ``close`` is that Jobs'
    :meth:`Jobs.close`), for a front end listing them; None when no tool keeps background commands."""
    for tool in tools:
        owner = getattr(getattr(tool, "close", None), "__self__", None)
        if isinstance(owner, Jobs):
            return owner
    return None
