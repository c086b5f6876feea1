"""``cog edit --attempts N --ray``, the part that runs here: the checks, the repository bundled
(:mod:`cogcli.worktrees.ship`), each attempt's worktree and branch made as the local path makes
them, the attempts started as Ray tasks and gathered with :mod:`cogcli.batch.cluster`'s
machinery, each returned patch committed on its branch. The pick, the table and the apply are the
local path's (:func:`cogcli.worktrees.best_of.settle`, called by the command)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cogcli.commands.ray_attempts.node import NodeAttempt, attempt_on_node
from cogcli.settings.options import SettingFlags
from cogcli.worktrees.attempts import Attempts
from cogcli.worktrees.pick import AttemptRow

log = logging.getLogger("cogcli")

#: how often Ray runs an attempt again when its worker process or node died
MAX_RETRIES = 1


def node_approval(mode: str | None) -> str:
    """How a node answers approvals for the person's ``--approval`` setting (None: the default
    here); raises :class:`~cogcli.contract.errors.ConfigError` for one that would ask someone."""
    from cogcli.commands.approve import default_mode
    from cogcli.contract.errors import ConfigError

    mode = mode or default_mode()
    if mode in ("auto", "refuse"):
        return mode
    how = "the default on a terminal" if mode == "ask" else f"--approval {mode}"
    raise ConfigError(f"--ray runs the attempts on Ray workers, where nobody can answer an approval ({how} asks): "
                      "pass --yes to let every call run (writes and tests stay in each attempt's own checkout, in "
                      "the sandbox), or drop --ray to run the attempts here and be asked")


def ray_missing() -> str | None:
    """What to install when Ray is not importable here, else None (Ray itself is not imported)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return "--ray needs Ray: pip install 'cogcli[ray]' (on every node of the cluster too)"
    return None


def run_ray_attempts(
    root: Path,
    instruction: str,
    flags: SettingFlags,
    count: int,
    *,
    address: str | None,
    approval: str,
    output_schema: dict[str, Any] | None = None,
    images: Sequence[Any] = (),
    on_line: Callable[[int, bytes], None] | None = None,
    on_done: Callable[[AttemptRow], None] | None = None,
) -> tuple[Attempts, bool]:
    """Run ``count`` attempts on Ray (see the module): (the attempts as the local path returns
    them, True when Ctrl-C stopped them). Each attempt's event lines reach ``on_line`` when it
    ends. Raises :class:`~cogcli.worktrees.place.WorktreeError` or
    :class:`~cogcli.contract.errors.ConfigError` (Ray cannot start) before any attempt runs."""
    from cogcli.batch.cluster import gather, runtime_env_vars, split_secrets, start_ray
    from cogcli.contract.errors import ConfigError
    from cogcli.worktrees.attempts import make_places
    from cogcli.worktrees.git_ops import remove
    from cogcli.worktrees.pick import pick
    from cogcli.worktrees.place import WorktreeError
    from cogcli.worktrees.ship import bundle, snapshot, work_tree_top

    root = Path(root).resolve()
    base = snapshot(root)
    data = bundle(root, base)
    places = make_places(root, count, base)
    rows = [AttemptRow(attempt=i + 1, name=p.name, branch=p.branch, path=str(p.path)) for i, p in enumerate(places)]
    inside = root.relative_to(work_tree_top(root)).as_posix()  # the workspace's folder in the snapshot
    env_vars, secrets = split_secrets(runtime_env_vars(()))
    try:
        ray = start_ray(address, count, env_vars)
    except ConfigError:
        for place in places:  # nothing ran: no branch left behind
            try:
                remove(root, place.name, force=True)
            except WorktreeError as exc:
                log.warning("could not remove the worktree %s: %s", place.name, exc.message)
        raise
    # SIGTERM stops the attempts as Ctrl-C does; set after ray.init, which puts a handler of its own there
    main = threading.current_thread() is threading.main_thread()  # (a handler is set there only)
    before = signal.signal(signal.SIGTERM, _terminated) if main else None
    try:
        data_ref, secrets_ref = ray.put(data), ray.put(secrets)  # once each, in the object store (never a log)
        remote = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(attempt_on_node)
        refs = {}
        for row, place in zip(rows, places):
            job = NodeAttempt(row.attempt, row.name, row.branch, base, inside, instruction, flags, approval,
                              output_schema, tuple(images))
            refs[remote.remote(job, data_ref, secrets_ref)] = (row, place)

        def ready(ref: Any, job: tuple[AttemptRow, Any], stopping: bool) -> None:
            row, place = job
            _collect(ray, ref, row, place, base, instruction, stopping, on_line)
            if on_done is not None:
                on_done(row)

        interrupted = gather(ray, refs, ready)
    finally:
        if main:
            signal.signal(signal.SIGTERM, before)
        ray.shutdown()
    return Attempts(base, rows, pick(rows), places), interrupted


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _collect(ray: Any, ref: Any, row: AttemptRow, place: Any, base: str, instruction: str, stopping: bool,
             on_line: Callable[[int, bytes], None] | None) -> None:
    """One finished task into ``row``: its fields, its events, its patch committed on its branch."""
    try:
        got = ray.get(ref)
    except Exception as exc:  # cancelled by Ctrl-C, or its worker died more often than Ray retries it
        cancelled = stopping or isinstance(exc, ray.exceptions.TaskCancelledError)
        row.status = "aborted" if cancelled else "error"
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        row.error = "stopped before it finished" if cancelled else f"the Ray task failed: {type(exc).__name__}: {why[:500]}"
        return
    merge_row(row, got["row"])
    if on_line is not None:
        for line in got["events"]:
            on_line(row.attempt, line)
    take_patch(row, place, base, got["patch"], instruction, got.get("host"))


def merge_row(row: AttemptRow, theirs: dict[str, Any]) -> None:
    """A node's row into the local one: what it measured, never where it ran (its name, branch and
    path are the local worktree's; its commit is made here from the patch)."""
    kept = {"attempt", "name", "branch", "path", "commit", "files", "added", "removed"}
    for key, value in AttemptRow.model_validate(theirs).model_dump().items():
        if key not in kept:
            setattr(row, key, value)


def take_patch(row: AttemptRow, place: Any, base: str, patch: bytes, instruction: str, host: str | None = None) -> None:
    """``patch`` committed on the attempt's branch; the row's commit and counts from that commit."""
    from cogcli.worktrees.git_ops import diff_stats
    from cogcli.worktrees.place import WorktreeError
    from cogcli.worktrees.ship import land

    where = f" on {host}" if host else ""
    message = f"{' '.join(instruction.split())[:72]}\n\nAttempt {row.attempt} by cog on Ray{where} (thread {row.thread_id})."
    try:
        row.commit = land(place, patch, message)
    except WorktreeError as exc:
        row.commit = None
        row.error = row.error or f"its change could not be committed here: {exc.message}"
        return
    if row.commit is not None:
        row.files, row.added, row.removed = diff_stats(place.path, base, row.commit)


def run_on_ray(opts: Any, settings: Any, out: Any, images: Sequence[Any] = ()) -> int | tuple[Attempts, bool]:
    """``cog edit --attempts N --ray``: the checks, then the attempts on Ray, their events and
    rows shown through ``out`` (the command's output); (the attempts, interrupted), or the exit
    code 2 without Ray, for an approval that would ask, or when Ray cannot start."""
    from cogcli.contract.errors import ConfigError
    from cogcli.shown.visible import say
    from cogcli.wire.exit_codes import EXIT_USAGE
    from cogcli.worktrees.git_ops import dirty
    from cogcli.worktrees.include import environments_left_out
    from cogcli.worktrees.place import WorktreeError, main_top
    from cogcli.worktrees.ship import SNAPSHOT_MESSAGE

    missing = ray_missing()
    if missing is not None:
        say(missing)
        return EXIT_USAGE
    try:
        approval = node_approval(settings.approval)
        schema = None
        if opts.output_schema is not None:  # read here: a node has not the file
            from cogcli.loop.output_schema import OutputSchema

            schema = OutputSchema.load(opts.output_schema.expanduser()).schema
        if dirty(opts.root):
            say("note: the attempts start from your work tree as it is: your uncommitted changes are in them "
                f"(as a commit \"{SNAPSHOT_MESSAGE}\" on each attempt's branch)")
        for name in environments_left_out(main_top(opts.root)):
            say(f"note: git ignores {name}/, so each attempt's checkout on Ray starts without it and its tests "
                "run without the project's environment (.worktreeinclude files are not sent to Ray)")
    except (ConfigError, WorktreeError) as exc:
        say(exc.message)
        return EXIT_USAGE
    try:
        return run_ray_attempts(
            opts.root, opts.instruction, opts.flags, opts.attempts, address=None if opts.ray == "local" else opts.ray,
            approval=approval, output_schema=schema, images=images, on_line=out.line, on_done=out.done)
    except (ConfigError, WorktreeError) as exc:
        say(exc.message)
        return EXIT_USAGE
