"""Best-of-N in ``cog serve``: ``POST /api/runs`` with ``"attempts": N`` starts one served run that
is N attempts side by side (docs/worktrees.md), run, picked and applied by
:func:`cogcli.worktrees.best_of.best_of` — exactly what ``cog edit --attempts N --json`` does.

Its event stream is that command's output: every attempt's event with ``"attempt": K`` added (each
attempt has its own ``start`` … ``finish`` and its own thread), then one last event of type
``attempts`` (the rows, the winner, what was applied: its ``threadId`` and ``messageId``, which
``POST /api/threads/{id}/undo`` walks back). The SSE ids are the run's own count, since each
attempt numbers its events from 0. Approvals are asked one attempt at a time; while one is asked,
the run's summary names the attempt (``askingAttempt``), and an answer that names another
``attempt`` is refused (tool call ids repeat across attempts).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

import anyio

from cogcli.contract.errors import CogError, ConfigError
from cogcli.server.live_runs import RunError, ServedRun, WebApprover

if TYPE_CHECKING:
    from cogcli.server.live_runs import RunRegistry

log = logging.getLogger("cogcli")


def check_attempts(count: Any, thread: str | None) -> None:
    """A 400 naming the problem when ``count`` is no number of attempts, or comes with a thread."""
    from cogcli.worktrees.best_of import count_problem

    problem = count_problem(count)
    if problem is not None:
        raise RunError(400, "INVALID_REQUEST", f"{problem}; leave attempts out for one run")
    if thread:
        raise RunError(400, "INVALID_REQUEST", "attempts makes its own worktrees and threads: it goes without thread")


def _add(run: ServedRun, data: bytes) -> None:
    run.events.append((len(run.events), data))
    run.poke()


async def start_attempts(registry: RunRegistry, text: str, *, model: str | None, approval: str, count: int) -> ServedRun:
    """Start ``count`` attempts of ``text`` on the registry's workspace as one served run; returns at
    once (its events say the rest). Raises :class:`RunError` when they cannot start."""
    from cogcli.settings.load import NO_MODEL_MESSAGE, load_settings
    from cogcli.worktrees.git_ops import head
    from cogcli.worktrees.place import WorktreeError

    if registry.task_group is None:
        raise RunError(503, "STOPPING", "the server is stopping; no new runs")
    flags = registry.flags.replace(model=model) if model else registry.flags

    def prepare() -> str | None:
        settings = load_settings(registry.root, flags)
        if settings.model is None:
            raise ConfigError(NO_MODEL_MESSAGE.replace("cog edit --model", 'POST /api/runs {"model": …} or cog serve --model'))
        head(registry.root)  # no commit yet: the attempts have nothing to start from
        return settings.model

    try:
        chosen = await anyio.to_thread.run_sync(prepare)
    except (ConfigError, WorktreeError) as exc:
        raise RunError(400, "CONFIG", f"{exc.message} (best-of-N needs a git repository with a commit)" if isinstance(exc, WorktreeError) else exc.message) from None
    run = ServedRun(id=f"run_{uuid.uuid4().hex[:16]}", input=text, model=chosen, approval=approval, attempts=count, status="running")
    if approval == "ask":
        run.approver = WebApprover(run.poke)
    run.started.set()
    done = anyio.Event()
    registry._tasks_done[run.id] = done
    registry.runs[run.id] = run
    registry.task_group.start_soon(_execute, registry, run, flags, chosen, done)
    return run


async def _execute(registry: RunRegistry, run: ServedRun, flags: Any, model: str | None, done: anyio.Event) -> None:
    from cogcli.worktrees.best_of import best_of, one_at_a_time, tagged

    def asking(attempt: int) -> None:
        run.asking_attempt = attempt

    async def ask(approvals: Any) -> Any:
        assert run.approver is not None
        try:
            return await run.approver(approvals)
        finally:
            run.asking_attempt = None

    try:
        outcome = await best_of(registry.root, run.input, flags, run.attempts or 2, model=model,
                                on_event=lambda k, event: _add(run, tagged(k, event)),
                                approve_for=one_at_a_time(ask if run.approver is not None else None, before=asking), signal=run.signal)
        run.outcome = outcome.line()
        run.status = "aborted" if outcome.interrupted else "completed" if outcome.applied is not None else "error"
        _add(run, json.dumps({**run.outcome, "said": outcome.said()}, ensure_ascii=False).encode())
    except CogError as exc:  # the worktrees could not be made
        run.status = "error"
        _add(run, json.dumps({"type": "error", "code": "ATTEMPTS", "message": exc.message}).encode())
    except Exception as exc:
        log.error("run %s failed", run.id, exc_info=True)
        run.status = "error"
        _add(run, json.dumps({"type": "error", "code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}"}).encode())
    finally:
        run.finished = True
        run.ended_at = time.time()
        done.set()
        registry._tasks_done.pop(run.id, None)
        run.poke()
