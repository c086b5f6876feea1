"""The runs ``cog serve`` has in flight, and for a while after: each run's wire events (the bytes
``cog edit --json`` would write), its approvals and its abort signal.

A run starts exactly as ``cog edit`` starts one, through a :class:`cogcli.session.Session` (the
same settings, model, tools, sandbox, secret rules, undo journal and instructions), and runs in
the server's task group, so it outlives the request that started it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from cogcli.gate.approval import Decision, Decisions
from cogcli.contract.context import AbortSignal
from cogcli.contract.errors import CogError, ConfigError
from cogcli.wire.events import Approval, BaseEvent
from cogcli.settings.options import SettingFlags
from cogcli.render.jsonl import event_bytes

if TYPE_CHECKING:
    from cogcli.session import Session

log = logging.getLogger("cogcli")

#: seconds a finished run's events stay in memory (its thread keeps it for good)
RETAIN_SECONDS = 15 * 60
#: finished runs kept at most, the oldest dropped first
RETAIN_RUNS = 100
#: seconds a stopping server waits for aborted runs to write their finish
STOP_TIMEOUT = 30.0


class RunError(Exception):
    """A request about runs that cannot be done; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class WebApprover:
    """The run's ``approve`` hook: waits until each pending call is answered over HTTP."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.pending: dict[str, Approval] = {}
        self.answers: dict[str, Decision] = {}
        self._answered = anyio.Event()
        self._on_change = on_change

    async def __call__(self, approvals: list[Approval]) -> Decisions:
        self.pending = {a.tool_call_id: a for a in approvals}
        self.answers = {}
        try:
            while len(self.answers) < len(self.pending):
                self._answered = anyio.Event()
                await self._answered.wait()
            return dict(self.answers)
        finally:
            self.pending, self.answers = {}, {}
            self._on_change()

    def answer(self, call_id: str, approved: bool, reason: str | None) -> list[str]:
        """Record one answer; the call ids still waiting. Raises :class:`RunError` (409) when
        ``call_id`` is not waiting for one."""
        if call_id not in self.pending:
            waiting = ", ".join(self.waiting()) or "none"
            raise RunError(409, "NO_SUCH_APPROVAL", f"no approval is pending for toolCallId {call_id!r} (pending: {waiting})")
        if call_id in self.answers:
            raise RunError(409, "ALREADY_ANSWERED", f"toolCallId {call_id!r} was already answered")
        self.answers[call_id] = Decision(approved, (reason or None) if not approved else None)
        self._answered.set()
        self._on_change()
        return self.waiting()

    def waiting(self) -> list[str]:
        return [c for c in self.pending if c not in self.answers]


@dataclass(eq=False)
class ServedRun:
    """One run: its events as ``(seq, json bytes)`` in order, and how it stands."""

    id: str
    input: str
    model: str | None
    approval: str
    started_at: float = field(default_factory=time.time)
    thread_id: str | None = None
    #: the thread (id or prefix) the request asked to continue, known before ``start``
    continues: str | None = None
    events: list[tuple[int, bytes]] = field(default_factory=list)
    finished: bool = False
    status: str = "starting"
    ended_at: float | None = None
    signal: AbortSignal = field(default_factory=AbortSignal)
    approver: WebApprover | None = None
    #: set (and replaced) whenever something changes: a new event, an answered approval
    changed: anyio.Event = field(default_factory=anyio.Event)
    started: anyio.Event = field(default_factory=anyio.Event)
    #: why the run could not start (nothing ran; no event was sent)
    start_error: str | None = None
    #: the session's background commands (:class:`workspace_tools.shell.jobs.Jobs`), kept after
    #: it closed so ``GET /api/runs/{id}/jobs`` still lists them (killed) once the run ended
    jobs: Any = None
    #: best-of-N (:mod:`cogcli.server.attempt_runs`): how many attempts, and the ``attempts``
    #: line once they ended (None for a run of one)
    attempts: int | None = None
    outcome: dict[str, Any] | None = None

    # the run's on_event
    def handle(self, event: BaseEvent) -> None:
        kind = getattr(event, "type", None)
        self.events.append((event.seq if event.seq is not None else len(self.events), event_bytes(event)))
        if kind == "start":
            self.thread_id = getattr(event, "thread_id", None)
            self.status = "running"
            self.started.set()
        elif kind == "finish":
            self.finished = True
            self.status = getattr(event, "status", "completed")
            self.ended_at = time.time()
        self.poke()

    def poke(self) -> None:
        changed, self.changed = self.changed, anyio.Event()
        changed.set()

    def index_after(self, seq: int) -> int:
        """The index of the first event after ``seq`` (seqs run 0, 1, 2, … so it is ``seq + 1``)."""
        index = min(max(seq + 1, 0), len(self.events))
        while index > 0 and self.events[index - 1][0] > seq:
            index -= 1
        return index

    def pending_approvals(self) -> list[dict[str, Any]]:
        if self.approver is None:
            return []
        if self.attempts:  # each with its attempt (cogcli.server.attempt_runs.AttemptApprovers)
            return self.approver.pending_approvals()  # type: ignore[attr-defined, no-any-return]
        return [self.approver.pending[c].to_wire() for c in self.approver.waiting()]

    def summary(self) -> dict[str, Any]:
        return {
            "runId": self.id,
            "threadId": self.thread_id,
            "input": self.input,
            "model": self.model,
            "approval": self.approval,
            "status": self.status,
            "finished": self.finished,
            "events": len(self.events),
            "startedAt": _iso(self.started_at),
            "endedAt": _iso(self.ended_at) if self.ended_at else None,
            "pendingApprovals": self.pending_approvals(),
            **({"attempts": self.attempts, "outcome": self.outcome} if self.attempts else {}),
        }


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _same_thread(run: ServedRun, thread: str) -> bool:
    """Whether ``run`` is on the thread ``thread`` names (a whole id or a prefix, as cog takes them)."""
    known = run.thread_id or run.continues or ""
    return bool(known) and (known.startswith(thread) or thread.startswith(known))


class RunRegistry:
    """Starts runs in ``task_group`` (set by the app's lifespan) and keeps them by id."""

    def __init__(self, root: Path, *, flags: SettingFlags | None = None) -> None:
        self.root = root
        #: the settings of every run (``cog serve``'s flags); a run's own ``model`` over theirs
        self.flags = flags or SettingFlags()
        self.runs: dict[str, ServedRun] = {}
        self.task_group: anyio.abc.TaskGroup | None = None
        #: best-of-N (:mod:`cogcli.worktrees.best_of`, handed in by ``cog serve``); None: no attempts
        self.attempts_kit: Any = None
        self._tasks_done: dict[str, anyio.Event] = {}

    def get(self, run_id: str) -> ServedRun:
        self._sweep()
        run = self.runs.get(run_id)
        if run is None:
            raise RunError(
                404, "NO_SUCH_RUN", f"no run {run_id!r} here (finished runs are kept {RETAIN_SECONDS // 60} minutes; their threads are under /api/threads)"
            )
        return run

    def list(self) -> list[ServedRun]:
        self._sweep()
        return sorted(self.runs.values(), key=lambda r: r.started_at, reverse=True)

    def busy(self, thread: str) -> ServedRun | None:
        """The run in flight on ``thread`` (an id or its prefix), if any."""
        return next((r for r in self.runs.values() if not r.finished and _same_thread(r, thread)), None)

    async def start(self, text: str, *, model: str | None, thread: str | None, approval: str) -> ServedRun:
        """Build the run as ``cog edit`` does, start it, and return once its ``start`` event is out
        (so its thread id is known). Raises :class:`RunError` when it cannot start."""
        from cogcli.settings.load import NO_MODEL_MESSAGE, load_settings
        from cogcli.session import Session

        if self.task_group is None:
            raise RunError(503, "STOPPING", "the server is stopping; no new runs")
        if thread:
            busy = self.busy(thread)
            if busy is not None:
                raise RunError(409, "THREAD_BUSY", f"thread {busy.thread_id or thread} has a run in flight ({busy.id}); wait for its finish or abort it")

        def prepare() -> Session:
            settings = load_settings(self.root, self.flags.replace(model=model) if model else self.flags)
            if settings.model is None:  # named as a client of the server names one
                raise ConfigError(NO_MODEL_MESSAGE.replace("cog edit --model", 'POST /api/runs {"model": …} or cog serve --model'))
            return Session.open(settings, interactive=False)  # never a prompt here

        try:
            session = await anyio.to_thread.run_sync(prepare)
        except ConfigError as exc:
            raise RunError(400, "CONFIG", exc.message) from None

        run = ServedRun(id=f"run_{uuid.uuid4().hex[:16]}", input=text, model=session.settings.model, approval=approval, continues=thread)
        if approval == "ask":
            run.approver = WebApprover(run.poke)
        from cogcli.session.background import session_jobs

        run.jobs = session_jobs(session)
        done = anyio.Event()
        self._tasks_done[run.id] = done
        self.runs[run.id] = run
        self.task_group.start_soon(self._execute, run, session, thread, done)
        with anyio.CancelScope(shield=True):  # the run goes on if the client goes away
            while not (run.started.is_set() or run.start_error is not None or done.is_set()):
                await run.changed.wait()
        if run.start_error is not None or not run.started.is_set():
            self.runs.pop(run.id, None)
            raise RunError(400, "CONFIG", run.start_error or "the run ended before it started")
        return run

    async def _execute(self, run: ServedRun, session: Session, thread: str | None, done: anyio.Event) -> None:
        try:
            async with session:
                await session.run(run.input, thread=thread, approve=run.approver, on_event=run.handle, signal=run.signal)
        except CogError as exc:  # before the run started: an unknown thread, an MCP server that fails, the store
            run.start_error = exc.message
            run.finished, run.status = True, "error"
        except Exception as exc:
            log.error("run %s failed", run.id, exc_info=True)
            if not run.started.is_set():
                run.start_error = f"{type(exc).__name__}: {exc}"
            run.finished = True
        finally:
            session.close()
            if not run.finished:  # cancelled before its finish (a forced quit): no more events come
                run.finished, run.status = True, "aborted"
            run.ended_at = run.ended_at or time.time()
            done.set()
            self._tasks_done.pop(run.id, None)
            run.poke()

    def abort_all(self, reason: str = "the server is stopping") -> None:
        for run in self.runs.values():
            if not run.finished:
                run.signal.abort(reason)

    async def stop(self) -> None:
        """Abort every run and wait (up to :data:`STOP_TIMEOUT`) until each has written its finish."""
        self.abort_all()
        with anyio.move_on_after(STOP_TIMEOUT):
            for done in list(self._tasks_done.values()):
                await done.wait()

    def _sweep(self) -> None:
        now = time.time()
        ended = sorted((r for r in self.runs.values() if r.finished and r.ended_at), key=lambda r: r.ended_at or 0)
        for i, run in enumerate(ended):
            if now - (run.ended_at or now) > RETAIN_SECONDS or i < len(ended) - RETAIN_RUNS:
                self.runs.pop(run.id, None)
