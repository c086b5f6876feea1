"""The workspace's runs across its threads, in the order they started: what ``cog undo`` without a
thread walks back, newest first, and ``cog undo --list`` shows.

Each ``cog edit`` starts a thread of its own, so "the run before" is often in another thread. The
runs of every thread are put in one line by when they started (the order their inputs were written
to the store), numbered from 1 across the workspace; each keeps its thread and its number there
(what ``cog thread show`` heads it with). Walking them back is :func:`cogcli.threads.undo.plan_runs`
on that line, with every protection of a thread's undo: only the runs' signed journal records, each
file walked back from its bytes now, a file changed since (by the person, or a later run of any
thread not undone) refused with what differs.

    runs = workspace_runs(store.runs_written())      # oldest first
    plan = plan_runs(root, runs, runs[-1].thread_id, to="3")
"""

from __future__ import annotations

from collections.abc import Sequence

from cogcli.threads.store import StoredEntry, ThreadStore, UserEntry
from cogcli.threads.undo import NothingToUndo, RunRef, thread_runs


def workspace_runs(written: Sequence[tuple[str, StoredEntry]]) -> list[RunRef]:
    """The runs of every thread, oldest first, numbered across the workspace (``written``: the
    store's ``runs_written()``, each thread's ``user`` and ``undo`` entries in the order written)."""
    by_thread: dict[str, list[StoredEntry]] = {}
    for thread_id, stored in written:
        by_thread.setdefault(thread_id, []).append(stored)
    # each thread's runs numbered as the thread numbers them (its entries in their order there)
    own = {t: iter(thread_runs(sorted(entries, key=lambda s: s.seq))) for t, entries in by_thread.items()}
    seen: dict[str, str | None] = {}
    runs: list[RunRef] = []
    for thread_id, stored in written:
        entry = stored.entry
        if not isinstance(entry, UserEntry):
            continue
        if entry.message_id is not None and seen.get(thread_id) == entry.message_id:
            continue  # a run's follow-up, as thread_runs skips it
        seen[thread_id] = entry.message_id
        run = next(own[thread_id], None)
        if run is None:
            continue
        runs.append(RunRef(len(runs) + 1, run.message_id, run.instruction, run.code_undone, run.rewound, thread_id=thread_id, in_thread=run.number))
    return runs


def runs_table(runs: Sequence[RunRef], *, across: bool) -> list[str]:
    """``cog undo --list``: the runs newest first — the number ``--to`` takes, what was undone, the
    instruction, and (``across``) the thread and the run's number there."""
    if not runs:
        return ["no runs here yet"]
    head = "the runs of this workspace, newest first" if across else "the runs of this thread, newest first"
    lines = [f"{head} (cog undo walks back the newest not undone; --to N back to before run N):"]
    for r in reversed(runs):
        marks = [m for m, on in (("files undone", r.code_undone), ("conversation rewound", r.rewound)) if on]
        where = f"  {r.thread_id} run {r.in_thread}" if across else ""
        lines.append(f"  {r.number:>3}{where}  {r.title}" + (f"  [{', '.join(marks)}]" if marks else ""))
    return lines


def runs_of(store: ThreadStore, thread_id: str | None) -> tuple[list[RunRef], str]:
    """The runs ``cog undo`` walks, oldest first, and their thread: those of thread ``thread_id``
    (its id or a unique prefix), or without one the workspace's across its threads (the thread of
    the newest). Raises :class:`NothingToUndo` for no such thread, or no run."""
    if thread_id:
        found = store.resolve_id(thread_id)
        if found is None:
            raise NothingToUndo(f"no thread {thread_id!r} (list them with `cog thread list`)")
        runs = thread_runs(store.entries(found, kinds=("user", "undo")))  # what runs are made of, not the calls
        if not runs:
            raise NothingToUndo(f"nothing to undo: thread {found} has no run")
        return runs, found
    runs = workspace_runs(store.runs_written())
    if not runs:
        raise NothingToUndo("nothing to undo: no run in this workspace yet")
    return runs, str(runs[-1].thread_id)
