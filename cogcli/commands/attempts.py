"""``cog edit --attempts N "…"``: best-of-N (docs/worktrees.md). N attempts in worktrees side by
side (:mod:`cogcli.worktrees.attempts`), the comparison table, the winner applied to the work tree
as an undoable run (:mod:`cogcli.worktrees.apply`); the other attempts stay as branches.

With ``--json`` every event of every attempt is a line tagged ``"attempt": K``; a last line of
type ``attempts`` holds the rows, the winner and what was applied. Approvals follow the person's
setting, asked one at a time (each question names its attempt's tool call as usual).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from cogcli.shown.visible import say, visible
from cogcli.wire.exit_codes import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TASK_FAILED,
    EXIT_USAGE,
)


def _serialized(approve: Any) -> Any:
    """For each attempt, ``approve`` asked by one attempt at a time (a terminal holds one
    question), a question on the terminal headed by the attempt it comes from."""
    if approve is None:
        return None
    import anyio

    lock = anyio.Lock()
    here = getattr(approve, "asks_on_terminal", False)

    def for_attempt(attempt: int) -> Any:
        async def ask(approvals: Any) -> Any:
            async with lock:
                if here:
                    say(f"attempt {attempt} asks:")
                return await approve(approvals)

        return ask

    return for_attempt


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


class AttemptsOutput:
    """Where the attempts' events go: tagged JSON lines, or one line per attempt as it ends."""

    def __init__(self, fmt: str) -> None:
        self.jsonl = fmt == "jsonl"

    def event(self, attempt: int, event: Any) -> None:
        if not self.jsonl:  # a line per finished call: what each attempt is doing
            if getattr(event, "type", None) == "tool-result":
                from cogcli.gate.approval import describe

                failed = " (failed)" if getattr(event, "error", None) else ""
                say(f"attempt {attempt}: {describe(event.tool_name, event.presentation)}{failed}")
            return
        from cogcli.render.jsonl import event_bytes

        line = event_bytes(event)
        self.write(b'{"attempt":%d,' % attempt + line[1:] + b"\n")

    def line(self, attempt: int, line: bytes) -> None:
        """An event already on the wire (a Ray attempt's), as :meth:`event` shows it."""
        if self.jsonl:
            self.write(b'{"attempt":%d,' % attempt + line[1:] + b"\n")
            return
        event = json.loads(line)
        if event.get("type") == "tool-result":
            shown = event.get("presentation") or {}
            label = " · ".join(part for part in (shown.get("label"), shown.get("detail")) if part) or event.get("toolName")
            say(f"attempt {attempt}: {label}{' (failed)' if event.get('error') else ''}")

    def write(self, data: bytes) -> None:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            pass

    def done(self, row: Any) -> None:
        if self.jsonl:
            return
        tests = "tests not run" if row.passed is None else f"{row.passed} passed, {(row.failed or 0) + (row.errors or 0)} failed"
        what = row.error or f"{_files(row.files)} (+{row.added} -{row.removed}), {tests}"
        say(f"attempt {row.attempt} ({row.branch}): {row.status}: {what}")


def run_attempts_command(opts: Any, settings: Any, images: Any = ()) -> int:
    """Run the attempts, print the table, apply the winner; 0 when the winner was applied and its
    tests pass, 1 otherwise (no attempt changed anything, the apply was refused), 2 usage, 130 interrupted."""
    import anyio

    from cogcli.commands.approve import make_approver
    from cogcli.commands.common import abort_on_signals
    from cogcli.contract.context import AbortSignal
    from cogcli.contract.errors import ConfigError
    from cogcli.worktrees.attempts import MAX_ATTEMPTS, run_attempts
    from cogcli.worktrees.git_ops import dirty
    from cogcli.worktrees.place import WorktreeError

    outside = not 2 <= opts.attempts <= MAX_ATTEMPTS
    if settings.model is None or outside or opts.worktree is not None or opts.commit or opts.thread or opts.last or opts.plan:
        why = (f"--attempts {opts.attempts} is one attempt, not best-of-N: give --attempts 2 to {MAX_ATTEMPTS} "
               "(or leave --attempts out for a plain run)" if opts.attempts == 1 else
               f"--attempts takes 2 to {MAX_ATTEMPTS}" if outside else
               "no model: give --model (or set COG_MODEL)" if settings.model is None else
               "--attempts makes its own worktrees and threads: it goes without --worktree, --commit, --thread, --last and --plan")
        say(why)
        return EXIT_USAGE
    if opts.ray is not None:  # the attempts as Ray tasks, then the same ending
        from cogcli.commands.ray_attempts.driver import run_on_ray

        out = AttemptsOutput(opts.format)
        ran = run_on_ray(opts, settings, out, images)
        return ran if isinstance(ran, int) else finish(opts, settings, out, *ran)
    try:
        approve_for = _serialized(make_approver(settings.approval))
    except ConfigError as exc:
        say(exc.message)
        return EXIT_USAGE
    try:
        if dirty(opts.root):
            say("note: the attempts start from the last commit; your uncommitted changes are not in them")
        from cogcli.worktrees.include import environment_notes

        for note in environment_notes(opts.root, "each attempt's worktree"):
            say(note)
    except WorktreeError as exc:
        say(exc.message)
        return EXIT_USAGE
    out = AttemptsOutput(opts.format)

    async def go() -> tuple[Any, list[int]]:
        abort = AbortSignal()
        async with abort_on_signals(abort) as received:
            done = await run_attempts(opts.root, opts.instruction, opts.flags, opts.attempts, on_event=out.event,
                                      on_done=out.done, approve_for=approve_for, signal=abort, images=images, output_schema=opts.output_schema)
        return done, received

    try:
        done, received = anyio.run(go)
    except (WorktreeError, ValueError) as exc:
        say(getattr(exc, "message", None) or str(exc))
        return EXIT_USAGE
    return finish(opts, settings, out, done, bool(received))


def finish(opts: Any, settings: Any, out: AttemptsOutput, done: Any, received: bool) -> int:
    """The winner applied, the table (or the ``attempts`` line), the exit code; for local and Ray attempts."""
    from cogcli.worktrees.apply import apply_winner
    from cogcli.worktrees.pick import table
    from cogcli.worktrees.place import WorktreeError

    winner = done.winner
    applied = None
    problem = None
    if winner is not None and not received:
        try:
            applied = apply_winner(opts.root, done.base, winner, opts.instruction, model=settings.model)
        except WorktreeError as exc:
            problem = exc.message
    if out.jsonl:
        line = {"type": "attempts", "base": done.base, "winner": winner.attempt if winner else None,
                "attempts": [r.model_dump(mode="json") for r in done.rows],
                "applied": None if applied is None else {"threadId": applied.thread_id, "messageId": applied.message_id, "files": applied.files},
                "error": problem}
        out.write(json.dumps(line, ensure_ascii=False).encode() + b"\n")
    else:
        sys.stdout.write("".join(visible(line, one_line=True) + "\n" for line in table(done.rows, winner)))
        sys.stdout.flush()
    if received:
        say("interrupted: nothing was applied; the attempts stay as branches (cog worktree list)")
        return EXIT_INTERRUPTED
    if winner is None:
        say("no attempt changed anything; nothing was applied (cog worktree remove NAME for each)")
        return EXIT_TASK_FAILED
    if applied is None:
        say(f"attempt {winner.attempt} won but was not applied: {problem}")
        return EXIT_TASK_FAILED
    say(f"applied attempt {winner.attempt} ({_files(len(applied.files))}; cog undo takes it back); "
        f"every attempt stays as a branch until cog worktree remove NAME (cog worktree list)")
    passing = winner.passed is not None and not (winner.failed or winner.errors)
    return EXIT_OK if passing else EXIT_TASK_FAILED
