"""``cog undo [THREAD_ID]``: put back the files the last run of a thread changed (by default the
thread of the last run in this workspace), or with ``--dry-run`` print the reverse diff."""

from __future__ import annotations

import sys
from pathlib import Path

from cogcli.errors import ConfigError
from cogcli.exit_codes import EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE
from cogcli.shown import say, visible


def _say(message: str) -> None:
    say(message)  # paths and names from the workspace: control characters escaped


def undo_command(root: Path, thread_id: str | None, *, dry_run: bool = False) -> int:
    """0 reverted (or, dry run, would revert), 1 refused (a file changed since the run; nothing
    written), 2 no such thread or nothing to undo."""
    from cogcli.session import Session
    from cogcli.undo import NothingToUndo, UndoRefused

    try:
        with Session(root) as session:
            plan = session.undo(thread_id, dry_run=dry_run)
    except NothingToUndo as exc:
        _say(exc.message)
        return EXIT_USAGE
    except UndoRefused as exc:
        _say(f"undo refused: {exc.message}")
        return EXIT_TASK_FAILED
    except ConfigError as exc:
        _say(exc.message)
        return EXIT_USAGE
    if dry_run:
        diff = plan.reverse_diff()  # as it is for a pipe (git apply); escaped for a person's terminal
        sys.stdout.write(visible(diff) if sys.stdout.isatty() else diff)
        sys.stdout.flush()
        _say(f"dry run: undoing thread {plan.thread_id} would revert {_files(plan)}; nothing was written")
        return EXIT_OK
    _say(f"reverted {_files(plan)} (thread {plan.thread_id})")
    return EXIT_OK


def _files(plan: object) -> str:
    files = getattr(plan, "files")
    names = ", ".join(f"{f.path} (deleted)" if f.deletes else f"{f.path} (restored)" if f.current is None else f.path for f in files)
    return f"{len(files)} file{'s' if len(files) != 1 else ''}: {names}"
