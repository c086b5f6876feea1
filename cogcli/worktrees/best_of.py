"""Best-of-N from start to end, for every front end: ``cog edit --attempts`` (the terminal and
``--json``), Studio (``POST /api/runs`` with ``attempts``) and ACP (``_meta.cog.attempts``) all go
through :func:`best_of` — the attempts run (:mod:`cogcli.worktrees.attempts`), picked
(:mod:`cogcli.worktrees.pick`), the winner applied as an undoable run (:mod:`cogcli.worktrees.apply`).

    outcome = await best_of(root, "Fix add", flags, 3, on_event=show, approve_for=one_at_a_time(ask))
    outcome.line()       # the ``attempts`` JSON line: rows, winner, what was applied, why not

A front end only says what it sees: each event arrives with its attempt's number (:func:`tagged`
makes the ``--json`` line of it), and approvals are asked one attempt at a time
(:func:`one_at_a_time`), each question knowing its attempt. The front ends beside this package
(``cogcli.acp``, ``cogcli.server``) get this module handed in by their commands (``cog acp``,
``cog serve``), as the import layers ask: everything they use is here (:func:`said`, :func:`table`,
:func:`base_commit` too).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogcli.worktrees.apply import Applied
from cogcli.worktrees.attempts import MAX_ATTEMPTS, Attempts
from cogcli.worktrees.pick import said, table

__all__ = ["MAX_ATTEMPTS", "Outcome", "base_commit", "best_of", "count_problem", "one_at_a_time", "said", "settle", "table", "tag_line", "tagged"]


def base_commit(root: Path) -> str:
    """The commit the attempts would start from; a :class:`~cogcli.worktrees.place.WorktreeError`
    (a :class:`~cogcli.contract.errors.CogError`) when there is none (no repository, no commit)."""
    from cogcli.worktrees.git_ops import head

    return head(root)


def count_problem(count: Any) -> str | None:
    """Why ``count`` is no number of attempts (None: it is one, 2 to :data:`MAX_ATTEMPTS`)."""
    if isinstance(count, bool) or not isinstance(count, int) or not 2 <= count <= MAX_ATTEMPTS:
        return f"attempts takes 2 to {MAX_ATTEMPTS} (best-of-N: that many attempts side by side), got {count!r}"
    return None


def one_at_a_time(approve: Any = None, *, per_attempt: Callable[[int], Any] | None = None,
                  before: Callable[[int], Awaitable[None] | None] | None = None) -> Callable[[int], Any] | None:
    """``approve_for(attempt)``: each attempt's approval hook — ``approve`` for all, or
    ``per_attempt(K)``'s own — asked one attempt at a time (a terminal, a page, an editor holds one
    question); ``before(attempt)`` runs first, in the turn (a heading naming whose question it is).
    None when neither is given (every call runs unasked)."""
    if approve is None and per_attempt is None:
        return None
    import anyio

    lock = anyio.Lock()

    def for_attempt(attempt: int) -> Any:
        hook = per_attempt(attempt) if per_attempt is not None else approve

        async def ask(approvals: Any) -> Any:
            async with lock:
                if before is not None:
                    said = before(attempt)
                    if said is not None:
                        await said
                return await hook(approvals)

        return ask

    return for_attempt


def tagged(attempt: int, event: Any) -> bytes:
    """The ``cog edit --json`` line of an attempt's event with ``"attempt": K`` first (no newline)."""
    from cogcli.render.jsonl import event_bytes

    return tag_line(attempt, event_bytes(event))


def tag_line(attempt: int, line: bytes) -> bytes:
    """An event's JSON line (already on the wire: a Ray attempt's) with ``"attempt": K`` first."""
    return b'{"attempt":%d,' % attempt + line[1:]


@dataclass
class Outcome:
    """A best-of-N run's end: the attempts, and the winner applied."""
    done: Attempts
    #: the winner as written into the work tree (None: nothing was applied)
    applied: Applied | None
    #: why the winner was not applied (None: it was, or there was no winner, or it was interrupted)
    problem: str | None
    interrupted: bool = False

    @property
    def winner(self) -> Any:
        return self.done.winner

    def passing(self) -> bool:
        """The winner was applied and its tests pass."""
        w = self.done.winner
        return self.applied is not None and w is not None and w.passed is not None and not (w.failed or w.errors)

    def line(self) -> dict[str, Any]:
        """The last ``--json`` line (type ``attempts``); Studio's last event and ACP's ``_meta`` too."""
        w = self.done.winner
        applied = self.applied
        return {"type": "attempts", "base": self.done.base, "winner": w.attempt if w else None,
                "attempts": [r.model_dump(mode="json") for r in self.done.rows],
                "applied": None if applied is None else {"threadId": applied.thread_id, "messageId": applied.message_id, "files": applied.files},
                "error": self.problem}

    def said(self) -> str:
        """One sentence on how it ended, as the terminal says it last."""
        w = self.done.winner
        if self.interrupted:
            return "interrupted: nothing was applied; the attempts stay as branches (cog worktree list)"
        if w is None:
            return "no attempt changed anything; nothing was applied (cog worktree remove NAME for each)"
        if self.applied is None:
            return f"attempt {w.attempt} won but was not applied: {self.problem}"
        n = len(self.applied.files)
        return (f"applied attempt {w.attempt} ({n} file{'' if n == 1 else 's'}; cog undo takes it back); "
                f"every attempt stays as a branch until cog worktree remove NAME (cog worktree list)")


async def best_of(
    root: Path,
    instruction: str,
    flags: Any,
    count: int,
    *,
    model: str | None = None,
    models: Sequence[str | None] | None = None,
    on_event: Callable[[int, Any], None] | None = None,
    on_done: Callable[[Any], None] | None = None,
    approve: Any = None,
    approve_for: Callable[[int], Any] | None = None,
    signal: Any = None,
    images: Sequence[Any] = (),
    output_schema: Path | None = None,
) -> Outcome:
    """Run ``count`` attempts, pick, and apply the winner into ``root`` (unless ``signal`` was
    aborted); ``model`` names the applied thread's model. Raises
    :class:`~cogcli.worktrees.place.WorktreeError` when the worktrees cannot be made."""
    import anyio

    from cogcli.worktrees.attempts import run_attempts

    done = await run_attempts(root, instruction, flags, count, models=models, on_event=on_event, on_done=on_done,
                              approve=approve, approve_for=approve_for, signal=signal, images=images, output_schema=output_schema)
    interrupted = bool(signal is not None and getattr(signal, "aborted", False))
    return await anyio.to_thread.run_sync(lambda: settle(root, done, instruction, model=model, interrupted=interrupted))


def settle(root: Path, done: Attempts, instruction: str, *, model: str | None = None, interrupted: bool = False) -> Outcome:
    """Attempts that ran (here, or on Ray: :mod:`cogcli.commands.ray_attempts`) picked and their
    winner applied into ``root`` unless ``interrupted``."""
    from cogcli.worktrees.apply import apply_winner
    from cogcli.worktrees.place import WorktreeError

    applied = problem = None
    winner = done.winner
    if winner is not None and not interrupted:
        try:
            applied = apply_winner(root, done.base, winner, instruction, model=model)
        except WorktreeError as exc:
            problem = exc.message
    return Outcome(done, applied, problem, interrupted)
