"""What undo keeps on disk, as ``cog thread list`` shows it: the runs' journals in ``.cog/journal/``
(each run's copies of the files it changed, the newest :data:`~workspace_tools.files.journal.KEEP_RUNS`
runs kept) and the workspace's command snapshot store in the person's state folder
(:mod:`workspace_tools.shell.snapshot_store`)."""

from __future__ import annotations

from pathlib import Path


def undo_disk_line(root: Path) -> str | None:
    """``undo keeps 1.2 MB: run journals 0.3 MB (.cog/journal), command snapshots 0.9 MB (…)``; None when it keeps nothing."""
    from workspace_tools.files.journal import JOURNAL_DIR
    from workspace_tools.shell.snapshot_store import (
        disk_use,
        folder_bytes,
        store_folder,
    )

    journals = folder_bytes(root.joinpath(*JOURNAL_DIR))
    snapshots = disk_use(root)
    if not journals and not snapshots:
        return None
    try:
        where = str(store_folder(root))
    except Exception:  # noqa: BLE001 - a state folder that cannot be named
        where = "the state folder"
    return (f"undo keeps {_size(journals + snapshots)}: run journals {_size(journals)} ({'/'.join(JOURNAL_DIR)}), "
            f"command snapshots {_size(snapshots)} ({where})")


def _size(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"
