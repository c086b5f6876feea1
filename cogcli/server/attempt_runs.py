"""Best-of-N in ``cog serve``: ``POST /api/runs`` with ``"attempts": N`` starts one served run that
is N attempts side by side (docs/worktrees.md), run, picked and applied by
:func:`cogcli.worktrees.best_of.best_of` (handed in by ``cog serve`` as ``create_app(attempts=…)``) —
exactly what ``cog edit --attempts N --json`` does.

Its event stream is that command's output: every attempt's event with ``"attempt": K`` added (each
attempt has its own ``start`` … ``finish`` and its own thread), then one last event of type
``attempts`` (the rows, the winner, what was applied: its ``threadId`` and ``messageId``, which
``POST /api/threads/{id}/undo`` walks back; the run's ``status`` — ``completed`` when the winner
was applied, ``aborted``, else ``error`` — and ``said``, the sentence the terminal ends with). The SSE ids are the run's own count, since each
attempt numbers its events from 0. A page holds many questions at once, so each attempt asks its
own (:class:`AttemptApprovers`); the run's ``pendingApprovals`` name their ``attempt``, and an
answer names it too when the same call id waits in two attempts (their models may repeat ids).
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


def check_attempts(kit: Any, count: Any, thread: str | None) -> None:
    """A 400 naming the problem when ``count`` is no number of attempts, or comes with a thread;
    ``kit``: :mod:`cogcli.worktrees.best_of`, handed in by ``cog serve`` (None: no attempts here)."""
    if kit is None:
        raise RunError(400, "INVALID_REQUEST", "this server runs no attempts (started without cog serve's best-of-N support)")
    problem = kit.count_problem(count)
    if problem is not None:
        raise RunError(400, "INVALID_REQUEST", f"{problem}; leave attempts out for one run")
    if thread:
        raise RunError(400, "INVALID_REQUEST", "attempts makes its own worktrees and threads: it goes without thread")


class AttemptApprovers:
    """The approvals of a run of attempts: a :class:`WebApprover` per attempt, answered by call id
    and, when that is not enough, the attempt."""

    def __init__(self, poke: Any) -> None:
        self.poke = poke
        self.each: dict[int, WebApprover] = {}

    def for_attempt(self, attempt: int) -> WebApprover:
        return self.each.setdefault(attempt, WebApprover(self.poke))

    def answer(self, call_id: str, approved: bool, reason: str | None, attempt: int | None = None) -> list[str]:
        if attempt is None:
            owners = [k for k, a in sorted(self.each.items()) if call_id in a.pending]
            if len(owners) > 1:
                named = " and ".join(map(str, owners))
                raise RunError(409, "WHICH_ATTEMPT", f"toolCallId {call_id!r} waits in attempts {named}: name the attempt (\"attempt\": K)")
            attempt = owners[0] if owners else None
        if attempt is None or attempt not in self.each:
            which = "" if attempt is None else f" in attempt {attempt}"
            raise RunError(409, "NO_SUCH_APPROVAL", f"no approval is pending for toolCallId {call_id!r}{which} (pending: {self.listed()})")
        self.each[attempt].answer(call_id, approved, reason)
        return self.waiting()

    def waiting(self) -> list[str]:
        return [c for _, a in sorted(self.each.items()) for c in a.waiting()]

    def listed(self) -> str:
        return ", ".join(f"{c} (attempt {k})" for k, a in sorted(self.each.items()) for c in a.waiting()) or "none"

    def pending_approvals(self) -> list[dict[str, Any]]:
        return [{**a.pending[c].to_wire(), "attempt": k} for k, a in sorted(self.each.items()) for c in a.waiting()]


def _add(run: ServedRun, data: bytes) -> None:
    run.events.append((len(run.events), data))
    run.poke()


async def start_attempts(registry: RunRegistry, text: str, *, model: str | None, approval: str, count: int) -> ServedRun:
    """Start ``count`` attempts of ``text`` on the registry's workspace as one served run; returns at
    once (its events say the rest). Raises :class:`RunError` when they cannot start."""
    from cogcli.settings.load import NO_MODEL_MESSAGE, load_settings

    if registry.task_group is None:
        raise RunError(503, "STOPPING", "the server is stopping; no new runs")
    flags = registry.flags.replace(model=model) if model else registry.flags

    def prepare() -> str | None:
        settings = load_settings(registry.root, flags)
        if settings.model is None:
            raise ConfigError(NO_MODEL_MESSAGE.replace("cog edit --model", 'POST /api/runs {"model": …} or cog serve --model'))
        try:
            registry.attempts_kit.base_commit(registry.root)  # no commit yet: nothing to start from
        except CogError as exc:
            raise ConfigError(f"{exc.message} (best-of-N needs a git repository with a commit)") from None
        return settings.model

    try:
        chosen = await anyio.to_thread.run_sync(prepare)
    except ConfigError as exc:
        raise RunError(400, "CONFIG", exc.message) from None
    run = ServedRun(id=f"run_{uuid.uuid4().hex[:16]}", input=text, model=chosen, approval=approval, attempts=count, status="running")
    if approval == "ask":
        run.approver = AttemptApprovers(run.poke)  # type: ignore[assignment]
    run.started.set()
    done = anyio.Event()
    registry._tasks_done[run.id] = done
    registry.runs[run.id] = run
    registry.task_group.start_soon(_execute, registry, run, flags, chosen, done)
    return run


async def _execute(registry: RunRegistry, run: ServedRun, flags: Any, model: str | None, done: anyio.Event) -> None:
    kit = registry.attempts_kit
    approvers = run.approver
    try:
        outcome = await kit.best_of(registry.root, run.input, flags, run.attempts or 2, model=model,
                                on_event=lambda k, event: _add(run, kit.tagged(k, event)),
                                approve_for=approvers.for_attempt if isinstance(approvers, AttemptApprovers) else None, signal=run.signal)
        run.outcome = outcome.line()
        run.status = "aborted" if outcome.interrupted else "completed" if outcome.applied is not None else "error"
        _add(run, json.dumps({**run.outcome, "status": run.status, "said": outcome.said()}, ensure_ascii=False).encode())
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
