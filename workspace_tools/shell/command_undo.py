"""What a command changed in the workspace, recorded for ``cog undo``: a snapshot before it, the
journal after it.

Before a command (``run_command``, ``run_tests``) runs in a run, :meth:`CommandUndo.before` keeps
the workspace's files in the private snapshot store (:mod:`workspace_tools.shell.snapshot_store`),
from the before/after scan's first scan (:mod:`workspace_tools.shell.tree_changes`). After it,
:meth:`CommandUndo.after` writes one journal record for each file the scan found created,
modified or deleted: the bytes before (from the snapshot), the bytes and the mode after, and
``by`` (the command) — signed like every record (:mod:`workspace_tools.files.journal`), so undo
walks them back with the tool writes of the run, newest first, and refuses a file changed since.
A file the snapshot could not keep (too large, a link, unreadable) gets a record that says so:
undo names it, never touches it.

A command is recorded after it ends — also when it did not end by itself: the call cancelled, the
run aborted (Ctrl-C), a timeout. :meth:`CommandUndo.finish` runs in the caller's ``finally``,
shielded from the cancellation, as the setuid sweep does (:func:`workspace_tools.sandbox.leftovers.strip_after`).
Only a command killed together with cog (``kill -9``) leaves no record. What a command does outside the workspace — the network, a database, another folder —
is never in a snapshot, and the result says so (:data:`OUTSIDE`).
"""

from __future__ import annotations

import dataclasses
import logging
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace_tools.shell.snapshot_store import (
    SnapshotStore,
    StoreUnusable,
    Taken,
    read_workspace_file,
)

if TYPE_CHECKING:
    from cogcli.contract.tool import Tool
    from workspace_tools.files.journal import Journal
    from workspace_tools.shell.tree_changes import Snapshot, TreeChanges

log = logging.getLogger("cogcli")

#: what no snapshot covers, said wherever undo is offered
OUTSIDE = "what it did outside the workspace (the network, a database, other folders) is not undone"
#: the most of a command's text a record keeps
BY_CHARS = 200
#: files named as not restorable in a result (the rest counted)
NOTES = 10
#: the most folders with no file in them a command made that are recorded (``mkdir -p build/x``)
FOLDERS = 100
#: a file larger than this (before or after the command) gets no line counts: counting costs its size
COUNT_BYTES = 1_000_000
#: the most bytes (before and after) whose lines one command's record counts; the files past it are not counted
COUNT_TOTAL = 4_000_000


@dataclass
class Recorded:
    """What :meth:`CommandUndo.after` recorded: how many changes, and what cannot be put back."""

    count: int = 0
    notes: list[str] = field(default_factory=list)
    #: lines (added, removed) per text file it changed, as a tool write's diff counts them; why not for the others
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    uncounted: dict[str, str] = field(default_factory=dict)

    def line_fields(self, path: str) -> dict[str, int | str]:
        """What ``changed_files`` says of ``path``'s lines: ``added`` and ``removed``, or
        ``lines_not_counted`` and why (nothing when it was not recorded: no run)."""
        if path in self.lines:
            added, removed = self.lines[path]
            return {"added": added, "removed": removed}
        return {"lines_not_counted": self.uncounted[path]} if path in self.uncounted else {}

    def text(self) -> str:
        """The line the model (and the person) read under the changed files."""
        if not self.count and not self.notes:
            return ""
        lines = []
        if self.count:
            lines.append(f"cog undo can put back the files it changed; {OUTSIDE}.")
        lines += self.notes
        return "\n".join(lines)


class CommandUndo:
    """The snapshots of one session's commands, recorded in its journal (none without a run)."""

    def __init__(self, root: Path, journal: Journal | None, *, folder: Path | None = None, max_file: int | None = None,
                 ignored: bool = False) -> None:
        from workspace_tools.shell import snapshot_store

        self.root = Path(root).resolve()
        self.journal = journal
        self.store = SnapshotStore(self.root, folder=folder, max_file=max_file or snapshot_store.MAX_FILE, ignored=ignored)
        #: files git ignores are kept and recorded too (the person's ``undo_ignored``)
        self.ignored = ignored

    @property
    def active(self) -> bool:
        """A run is journaling (a direct ``cog tool run_command`` belongs to no run: no snapshot)."""
        return self.journal is not None and self.journal.active

    def before(self, scan: Snapshot) -> Taken | str:
        """The snapshot before a command, from its first scan; a string says why there is none."""
        if not self.active:
            return "no run records it"
        if not scan.complete:
            return "the workspace is too large to scan whole"
        try:
            return self.store.take(scan)
        except (StoreUnusable, OSError) as exc:
            log.warning("no snapshot before the command: %s", exc)
            return str(exc)

    def after(self, taken: Taken | str, changes: TreeChanges, before: Snapshot, after: Snapshot, by: str) -> Recorded:
        """Record each change the scans found (``changes``), from ``taken``, as made by ``by``."""
        from cogcli.contract.errors import ToolCallError

        done = Recorded()
        if self.ignored:  # the changes among files git ignores too
            from workspace_tools.shell.tree_changes import compare

            changes = compare(before, after, self.root, ignored_too=True)
        paths = [*changes.created, *changes.modified, *changes.deleted]
        empty = after.dirs - before.dirs
        if empty:  # the folders it made that hold no file: recorded on their own (those above a file, with it)
            new = [p for p in after.files if p not in before.files]  # only a new file can be in a new folder
            holding = {p[:i] for p in new for i, c in enumerate(p) if c == "/"}
            empty = set(sorted(empty - holding)[:FOLDERS])
        if not (paths or empty) or self.journal is None or not self.active:
            return done
        if isinstance(taken, str):
            done.notes.append(f"cog undo cannot put back what it changed: {taken}")
            return done
        by = by if len(by) <= BY_CHARS else by[: BY_CHARS - 1] + "…"
        budget = COUNT_TOTAL  # bytes whose lines may still be counted
        for folder in sorted(empty):
            try:
                self.journal.record(folder, before=None, after=None, mode=None, by=by, durable=False, folder=True)
            except ToolCallError as exc:
                done.notes.append(f"cog undo cannot remove the folder {folder}: {exc.message}")
        for path in sorted(paths):
            old, new = before.files.get(path), after.files.get(path)
            why, data_before = None, None
            if old is not None:
                kept = taken.kept(path)
                if kept is None or kept.sha is None:
                    why = kept.why if kept is not None else "not in the snapshot"
                else:
                    data_before = self.store.read(kept.sha)
                    why = None if data_before is not None else "its copy in the snapshot store is missing or damaged"
            data_after = None
            made: list[str] = []  # the folders above a file it created that it made too
            if old is None and new is not None:
                parts = path.split("/")[:-1]
                made = [d for d in ("/".join(parts[: i + 1]) for i in range(len(parts))) if d not in before.dirs]
            if new is not None and why is None:
                why, data_after = self._after(path, new[0], new[3])
            try:
                self.journal.record(
                    path, before=data_before, after=data_after, mode=None if old is None else stat.S_IMODE(old[3]),
                    after_mode=None if new is None else stat.S_IMODE(new[3]), by=by, unrestorable=why, existed=old is not None,
                    durable=False, dirs=made,
                )
            except ToolCallError as exc:
                done.notes.append(f"cog undo cannot put back {path}: {exc.message}")
                continue
            if why is None:
                done.count += 1
                counted = line_stat(data_before, data_after, room=budget)
                if isinstance(counted, str):
                    done.uncounted[path] = counted
                else:
                    done.lines[path] = counted
                    budget -= len(data_before or b"") + len(data_after or b"")
            else:
                done.notes.append(f"cog undo cannot put back {path}: {why}")
                done.uncounted[path] = why
        self.journal.sync()
        if len(done.notes) > NOTES:  # what the model reads stays short; each record names its file
            done.notes[NOTES:] = [f"… and {len(done.notes) - NOTES} more files cog undo cannot put back"]
        return done

    async def finish(self, taken: Taken | str, before: Snapshot, tracked: Any, by: str) -> tuple[Snapshot, TreeChanges, Recorded]:
        """The scan after a command, what it changed, and :meth:`after` recorded — shielded: call it in
        a ``finally``, so a call cancelled (an abort, a timeout) still records what it changed."""
        import anyio
        import anyio.to_thread

        from workspace_tools.shell.tree_changes import compare, scan

        with anyio.CancelScope(shield=True):
            after = await anyio.to_thread.run_sync(lambda: scan(self.root, tracked=tracked))
            changes = await anyio.to_thread.run_sync(compare, before, after, self.root)
            recorded = await anyio.to_thread.run_sync(self.after, taken, changes, before, after, by)
        return after, changes, recorded

    def start(self, by: str) -> Callable[[], Recorded]:
        """Snapshot now, for a command that goes on in the background; the function returned
        records what it changed (call it once it ended)."""
        from workspace_tools.shell.tree_changes import compare, scan
        from workspace_tools.workspace.envdirs import tracked_folders

        tracked = tracked_folders(self.root)
        before = scan(self.root, tracked=tracked)
        taken = self.before(before)

        def record() -> Recorded:
            try:
                after = scan(self.root, tracked=tracked)
                return self.after(taken, compare(before, after, self.root), before, after, by)
            except Exception:
                log.warning("could not record what %s changed for cog undo", by, exc_info=True)
                return Recorded()

        return record

    def _after(self, path: str, size: int, mode: int) -> tuple[str | None, bytes | None]:
        if stat.S_ISLNK(mode):
            return "a link", None
        if not stat.S_ISREG(mode):
            return "not a regular file", None
        if size > self.store.max_file:
            return f"too large (over {self.store.max_file // (1024 * 1024)} MB)", None
        data = read_workspace_file(self.root, path)
        return (None, data) if data is not None else ("it could not be read after the command", None)


def line_stat(before: bytes | None, after: bytes | None, *, room: int = COUNT_TOTAL) -> tuple[int, int] | str:
    """(lines added, lines removed) from ``before`` to ``after`` (None: no file), or why they are
    not counted: a binary file, one over :data:`COUNT_BYTES`, or more bytes than ``room`` (what is
    left of :data:`COUNT_TOTAL` for the command's files counted before it)."""
    from workspace_tools.text.diffs import line_counts

    sides = [d for d in (before, after) if d is not None]
    if any(len(d) > COUNT_BYTES for d in sides):
        return f"over {COUNT_BYTES // 1_000_000} MB"
    if any(b"\0" in d for d in sides):
        return "binary"
    if sum(map(len, sides)) > room:
        return f"over {COUNT_TOTAL // 1_000_000} MB counted for this command"
    return line_counts(*(None if d is None else d.decode("utf-8", "replace") for d in (before, after)))


def with_command_undo(tool: Tool[Any], root: Path, journal: Journal | None, by: Callable[[Any], str], *, ignored: bool = False) -> Tool[Any]:
    """``tool`` (one that runs code in the workspace: ``run_tests``) whose calls in a run are
    snapshotted before and recorded after as run_command's are; ``by`` names what a call ran.
    Outside a run (no journal) the tool is returned as it is."""
    if journal is None:
        return tool
    undo = CommandUndo(root, journal, ignored=ignored)
    original = tool

    async def execute(params: Any, context: Any) -> Any:
        import anyio.to_thread

        from cogcli.contract.invoke import call_function
        from cogcli.contract.output import ToolOutputResult
        from workspace_tools.shell.tree_changes import scan
        from workspace_tools.workspace.envdirs import tracked_folders

        if not undo.active:
            return await call_function(original.execute, (params, context)[: original.arity], original.is_async)
        tracked = await anyio.to_thread.run_sync(tracked_folders, undo.root)
        before = await anyio.to_thread.run_sync(lambda: scan(undo.root, tracked=tracked))
        taken = await anyio.to_thread.run_sync(undo.before, before)
        try:
            result = await call_function(original.execute, (params, context)[: original.arity], original.is_async)
        finally:  # also when the call is cancelled (an abort, a timeout): what it changed so far is recorded
            recorded = (await undo.finish(taken, before, tracked, by(params)))[2]
        line = recorded.text()
        if not line or not isinstance(result, ToolOutputResult):
            return result
        content = result.content
        if isinstance(content, dict):
            content = {**content, "undo": line}
        elif isinstance(content, str):
            content = f"{content}\n{line}"
        details = result.details.model_dump() if hasattr(result.details, "model_dump") else result.details
        if isinstance(details, dict):
            details = {**details, "undo_recorded": recorded.count, "undo_notes": recorded.notes}
        return ToolOutputResult(content=content, details=details, presentation=result.presentation)

    return dataclasses.replace(tool, execute=execute)
