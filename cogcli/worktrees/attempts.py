"""Best-of-N: N attempts at one instruction side by side, each in its own worktree, then picked
by the project's tests.

    done = await run_attempts(root, "Fix the failing test", flags, 3, on_event=show)
    done.winner          # the AttemptRow picked (cogcli.worktrees.pick), or None

Each attempt is a worktree ``try-XXXXXX-K`` on the branch ``cog/try-XXXXXX-K``, made from the
current commit, with ``.worktreeinclude``'s files (:mod:`cogcli.worktrees.include`), and a
:class:`~cogcli.session.Session` of its own there (its own thread and undo journal, the settings
``cog edit`` would load there; ``models`` may give each attempt its own model). The runs go
concurrently in one event loop (anyio); each event reaches ``on_event`` with its attempt's number.
When a run ends, the files it changed are committed on its branch, and the project's tests run in
its worktree through the session's own ``run_tests`` (the runner found as ``run_tests`` finds it,
in the test sandbox); then the rows are compared (:func:`cogcli.worktrees.pick.pick`). Nothing
here touches the person's work tree: applying the winner is :mod:`cogcli.worktrees.apply`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from cogcli.worktrees.git_ops import commit, create, diff_stats, head
from cogcli.worktrees.pick import AttemptRow, pick
from cogcli.worktrees.place import Place, WorktreeError, main_top, new_name

log = logging.getLogger("cogcli")

#: the most attempts one command runs
MAX_ATTEMPTS = 8


@dataclass
class Attempts:
    """The attempts of a best-of-N run, each with its row."""
    #: the commit every attempt started from
    base: str
    rows: list[AttemptRow]
    winner: AttemptRow | None
    places: list[Place]


def make_places(root: Path, count: int, base: str) -> list[Place]:
    """The attempts' worktrees, ``try-XXXXXX-1`` … ``-N``, all from ``base`` (all or none)."""
    from cogcli.worktrees.git_ops import remove

    prefix = new_name("try")
    made: list[Place] = []
    said: set[str] = set()
    try:
        for i in range(1, count + 1):
            made.append(create(root, f"{prefix}-{i}", base=base, said=said))
    except BaseException:  # none left half made: those already made are removed
        for place in made:
            try:
                remove(root, place.name, force=True)
            except WorktreeError as exc:
                log.warning("could not remove the worktree %s: %s", place.name, exc.message)
        raise
    return made


async def run_attempts(
    root: Path,
    instruction: str,
    flags: Any,
    count: int,
    *,
    models: Sequence[str | None] | None = None,
    on_event: Callable[[int, Any], None] | None = None,
    on_done: Callable[[AttemptRow], None] | None = None,
    approve: Any = None,
    approve_for: Callable[[int], Any] | None = None,
    signal: Any = None,
    output_schema: Path | None = None,
    images: Sequence[Any] = (),
) -> Attempts:
    """Run ``count`` attempts of ``instruction`` (see the module). ``approve``: every run's
    approval hook (None: approve every call), or ``approve_for(attempt)`` making each attempt's; raises
    :class:`~cogcli.worktrees.place.WorktreeError` when the worktrees cannot be made."""
    if not 1 <= count <= MAX_ATTEMPTS:
        raise ValueError(f"--attempts takes 1 to {MAX_ATTEMPTS}, got {count}")
    root = Path(root).resolve()
    base = head(root)
    places = make_places(root, count, base)
    inside = root.relative_to(main_top(root))
    rows = [AttemptRow(attempt=i + 1, name=p.name, branch=p.branch, path=str(p.path)) for i, p in enumerate(places)]

    async def one(row: AttemptRow, place: Place) -> None:
        model = models[row.attempt - 1] if models and row.attempt <= len(models) else None
        try:
            await run_one(row, place.path, place.path / inside, instruction, flags.replace(model=model) if model else flags,
                           base, on_event, approve_for(row.attempt) if approve_for else approve, signal, output_schema, images)
        except Exception as exc:  # one attempt failing never ends the others
            log.debug("attempt %d failed", row.attempt, exc_info=True)
            row.error = row.error or getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        if on_done is not None:
            on_done(row)

    async with anyio.create_task_group() as tg:
        for row, place in zip(rows, places):
            tg.start_soon(one, row, place)
    return Attempts(base, rows, pick(rows), places)


async def run_one(row: AttemptRow, top: Path, root: Path, instruction: str, flags: Any, base: str,
                  on_event: Callable[[int, Any], None] | None, approve: Any, signal: Any, output_schema: Any,
                  images: Sequence[Any] = ()) -> None:
    """One attempt in the checkout ``top`` (at ``base``; the workspace ``root`` in it): the run, its
    change committed there, the picking test run; ``row`` filled in. Also what a Ray attempt runs
    on its node (:mod:`cogcli.commands.attempts_ray`)."""
    from cogcli.contract.details_readers import read_test_report
    from cogcli.contract.errors import CogError
    from cogcli.session import Session, make_tools
    from cogcli.settings.load import load_settings

    def note(text: str) -> None:
        log.info("attempt %d: %s", row.attempt, text)

    settings = load_settings(root, flags, output_schema=output_schema)
    session = Session.open(settings, cwd=root, interactive=False, make_tools=make_tools, on_note=note)
    forward = (lambda event: on_event(row.attempt, event)) if on_event is not None else None
    async with session:
        try:
            result = await session.run(instruction, approve=approve, on_event=forward, signal=signal, images=images)
        except CogError as exc:
            row.error = exc.message
            return
        row.status, row.thread_id = str(result.status), result.thread_id
        row.tokens = result.usage.input_tokens + result.usage.output_tokens
        row.cost_usd = getattr(result.usage, "cost_usd", None)
        row.error = result.error
        prefix = root.relative_to(top)
        paths = [(prefix / f.path).as_posix() for f in result.files_changed]
        message = f"{' '.join(instruction.split())[:72]}\n\nAttempt {row.attempt} by cog (thread {result.thread_id})."
        row.commit = await anyio.to_thread.run_sync(commit, top, message, paths)
        if row.commit is not None:
            row.files, row.added, row.removed = await anyio.to_thread.run_sync(diff_stats, top, base, row.commit)
        if signal is not None and getattr(signal, "aborted", False):
            return
        tests = await session.invoke_tool("run_tests", {}, signal=signal)
    details = tests.details.model_dump(mode="json") if hasattr(tests.details, "model_dump") else tests.details
    report = read_test_report(details) if tests.error is None else None
    if report is None:
        row.tests_error = tests.error or "no test report"
        return
    row.passed, row.failed, row.errors = report.passed, report.failed, report.errors
