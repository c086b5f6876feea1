"""``cog undo [THREAD_ID] [--to RUN]``: walk the workspace's runs back one by one, newest first
across threads (with a THREAD_ID, that thread's), or with ``--dry-run`` print the reverse diff;
``--list`` shows the runs it walks."""

from __future__ import annotations

import sys
from pathlib import Path

from cogcli.contract.errors import ConfigError
from cogcli.wire.exit_codes import EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE
from cogcli.shown.visible import say, visible


def _say(message: str) -> None:
    say(message)  # paths and names from the workspace: control characters escaped


def undo_command(root: Path, thread_id: str | None, *, to: str | None = None, dry_run: bool = False, code: bool = True, conversation: bool = False) -> int:
    """0 reverted (or, dry run, would revert), 1 refused (a file changed since the run; nothing
    written), 2 no such thread or run, or nothing to undo."""
    from cogcli.session import Session
    from cogcli.threads.undo import NothingToUndo, UndoRefused

    try:
        with Session(root) as session:
            plan = session.undo(thread_id, to=to, dry_run=dry_run, code=code, conversation=conversation)
    except NothingToUndo as exc:
        _say(exc.message)
        return EXIT_USAGE
    except UndoRefused as exc:
        _say(f"undo refused: {exc.message}")
        if "changed since the run" in exc.message:  # the fix docs/undo.md gives, said where it is needed
            several = " files changed since the run, so they " in exc.message
            _say(f"to undo it: put {'each file' if several else 'the file'} back as the run left it (the diff above), then cog undo again; "
                 f"or keep your {'changes' if several else 'change'} and leave the run as it is")
        return EXIT_TASK_FAILED
    except ConfigError as exc:
        _say(exc.message)
        return EXIT_USAGE
    for note in plan.notes:
        _say(f"note: {note}")
    if dry_run:
        diff = plan.reverse_diff()  # as it is for a pipe (git apply); escaped for a person's terminal
        sys.stdout.write(visible(diff) if sys.stdout.isatty() else diff)
        sys.stdout.flush()
        _say(f"dry run: {plan.summary(would=True)}; nothing was written")
        return EXIT_OK
    _say(plan.summary())
    return EXIT_OK


def list_command(root: Path, thread_id: str | None) -> int:
    """``cog undo --list``: the runs undo walks, newest first, numbered as ``--to`` takes them (0;
    2 for no such thread)."""
    from cogcli.session import Session
    from cogcli.threads.undo import NothingToUndo
    from cogcli.threads.workspace_runs import runs_table

    try:
        with Session(root) as session:
            runs, _ = session.runs(thread_id)
    except NothingToUndo as exc:
        if exc.message.startswith("no thread"):  # a thread named that does not exist; no run yet lists none
            _say(exc.message)
            return EXIT_USAGE
        runs = []
    except ConfigError as exc:
        _say(exc.message)
        return EXIT_USAGE
    sys.stdout.write("".join(visible(line, one_line=True) + "\n" for line in runs_table(runs, across=not thread_id)))
    return EXIT_OK
