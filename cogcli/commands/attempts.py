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
        from cogcli.worktrees.best_of import tagged

        self.write(tagged(attempt, event) + b"\n")

    def line(self, attempt: int, line: bytes) -> None:
        """An event already on the wire (a Ray attempt's), as :meth:`event` shows it."""
        if self.jsonl:
            from cogcli.worktrees.best_of import tag_line

            self.write(tag_line(attempt, line) + b"\n")
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
        from cogcli.worktrees.pick import said

        say(said(row))


def run_attempts_command(opts: Any, settings: Any, images: Any = ()) -> int:
    """Run the attempts, print the table, apply the winner (:func:`cogcli.worktrees.best_of.best_of`);
    0 when the winner was applied and its tests pass, 1 otherwise (no attempt changed anything, the
    apply was refused), 2 usage, 130 interrupted."""
    import anyio

    from cogcli.commands.approve import make_approver
    from cogcli.commands.common import abort_on_signals
    from cogcli.contract.context import AbortSignal
    from cogcli.contract.errors import ConfigError
    from cogcli.worktrees.attempts import MAX_ATTEMPTS
    from cogcli.worktrees.best_of import best_of, one_at_a_time
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
        from cogcli.worktrees.best_of import settle

        out = AttemptsOutput(opts.format)
        ran = run_on_ray(opts, settings, out, images)
        if isinstance(ran, int):
            return ran
        done, interrupted = ran
        return _ended(out, settle(opts.root, done, opts.instruction, model=settings.model, interrupted=interrupted))
    try:
        approve = make_approver(settings.approval)
    except ConfigError as exc:
        say(exc.message)
        return EXIT_USAGE
    # a question on the terminal is headed by the attempt it comes from
    heading = (lambda attempt: say(f"attempt {attempt} asks:")) if getattr(approve, "asks_on_terminal", False) else None
    approve_for = one_at_a_time(approve, before=heading)
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

    async def go() -> Any:
        abort = AbortSignal()
        async with abort_on_signals(abort):
            return await best_of(opts.root, opts.instruction, opts.flags, opts.attempts, model=settings.model, on_event=out.event,
                                 on_done=out.done, approve_for=approve_for, signal=abort, images=images, output_schema=opts.output_schema)

    try:
        outcome = anyio.run(go)
    except (WorktreeError, ValueError) as exc:
        say(getattr(exc, "message", None) or str(exc))
        return EXIT_USAGE
    return _ended(out, outcome)


def _ended(out: AttemptsOutput, outcome: Any) -> int:
    """The table (or the ``attempts`` line), how it ended, the exit code; local and Ray attempts."""
    from cogcli.worktrees.pick import table

    if out.jsonl:
        out.write(json.dumps(outcome.line(), ensure_ascii=False).encode() + b"\n")
    else:
        sys.stdout.write("".join(visible(line, one_line=True) + "\n" for line in table(outcome.done.rows, outcome.winner)))
        sys.stdout.flush()
    say(outcome.said())
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if outcome.passing() else EXIT_TASK_FAILED
