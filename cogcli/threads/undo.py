"""Undo runs: walk a thread back run by run — the files each run changed, its conversation, or both.

A run records every change in its write-ahead journal (:mod:`workspace_tools.files.journal`) before
making it — and what its commands, test runs and hooks changed after them, from a snapshot taken
before (:mod:`workspace_tools.shell.command_undo`: such a change also carries the mode it left, and
puts back the mode before) — each record signed with the person's key outside the workspace, so undo works after a
kill or a full disk and acts only on records cog itself wrote: a record planted in ``.cog/journal/``
does not verify and is set aside (named in :attr:`UndoPlan.notes`), never acted on.

:func:`plan_undo` picks the runs (the newest run that changed files and is not undone yet, or with
``to`` every run from the newest back to that one) and walks each file back from its bytes now,
the newest change first: bytes equal to what a change wrote become what it found; bytes equal to
what it found mean it never landed; anything else is a change made since (by the person, or a run
not undone), and the undo is refused naming the file and showing what differs — nothing is
written, nothing overwritten. A file a run created is deleted, one it deleted (or moved away) is
made again with its mode. :func:`apply_undo` then writes every file atomically; if a write
fails, those already written are put back.

    plan = plan_undo(workspace, thread, to="2")       # run 2 and every later one
    print(plan.reverse_diff())
    apply_undo(plan)
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.contract.errors import CogError
from cogcli.threads.store import StoredEntry, Thread, UndoEntry, UserEntry
from cogcli.threads.undo_apply import apply_undo
from cogcli.threads.undo_types import (
    FileRevert,
    NothingToUndo,
    RunRef,
    UndoRefused,
    changed_since,
    refused_text,
)

#: lines of "what differs" shown per refused file
DIFF_LINES = 40

__all__ = ["FileRevert", "NothingToUndo", "RunRef", "UndoPlan", "UndoRefused", "apply_undo", "plan_runs", "plan_undo"]


@dataclass
class UndoPlan:
    """What ``cog undo`` would put back, worked out before anything is written."""
    root: Path
    thread_id: str
    #: the oldest run walked back (its ``messageId``)
    message_id: str | None
    files: list[FileRevert] = field(default_factory=list)
    #: the runs walked back, newest first
    runs: list[RunRef] = field(default_factory=list)
    code: bool = True
    conversation: bool = False
    #: what the person should know: records set aside, runs whose files were already back
    notes: list[str] = field(default_factory=list)
    #: the files each run walked back changed (by message id), for what each thread's model is told
    touched: dict[str | None, set[str]] = field(default_factory=dict)
    #: the folders the runs' commands made, removed (deepest first) if empty once the files are back
    folders: list[str] = field(default_factory=list)

    def entries(self) -> dict[str, list[UndoEntry]]:
        """The undo entries each thread keeps for this plan, one per run, newest first; the first of
        each thread names the files put back that its runs changed."""
        out: dict[str, list[UndoEntry]] = {}
        for r in self.runs:
            thread = out.setdefault(r.thread_id or self.thread_id, [])
            if thread or not self.code:
                written: list[str] = []
            elif r.thread_id is None:
                written = [f.path for f in self.files]
            else:
                mine = set().union(*(self.touched.get(o.message_id, set()) for o in self.runs if o.thread_id == r.thread_id))
                written = [f.path for f in self.files if f.path in mine]
            thread.append(UndoEntry(message_id=r.message_id, files=written, code=self.code and not r.code_undone, conversation=self.conversation))
        return out

    def summary(self, *, would: bool = False) -> str:
        """One line for what the undo did (or, ``would``, would do): the runs, the files, the conversation."""
        threads = {r.thread_id or self.thread_id for r in self.runs}
        if len(threads) == 1 and all(r.in_thread in (None, r.number) for r in self.runs):
            which = ", ".join(f"{r.number} ({r.title})" for r in self.runs) + f" of thread {self.thread_id}"
        else:  # the workspace's runs: each with its thread and its number there (cog thread show)
            which = ", ".join(f"{r.number} ({r.title}; run {r.in_thread} of thread {r.thread_id})" for r in self.runs)
        what = f"run{'s' if len(self.runs) != 1 else ''} {which}"
        def named(files: list[FileRevert]) -> str:
            return ", ".join(f"{f.path} (deleted)" if f.deletes else f"{f.path} (restored)" if f.creates else f.path for f in files)

        names = named(self.files)
        commands = [f for f in self.files if f.by_command]
        if commands:  # what the tools wrote, and what the runs' commands changed, apart
            tools = [f for f in self.files if not f.by_command]
            commands.sort(key=lambda f: f.path)
            names = "; ".join(([f"tool writes: {named(tools)}"] if tools else []) + [f"command changes: {named(commands)}"])
        files = f"{len(self.files)} file{'s' if len(self.files) != 1 else ''}" + (f": {names}" if names else "")
        if self.folders and not self.files:
            files += f" (the empty folders its commands made: {', '.join(d + '/' for d in self.folders)})"
        parts = [f"{'would revert' if would else 'reverted'} {files}"] if self.code else []
        them = "them" if len(self.runs) != 1 else "it"
        if self.conversation:
            parts.append(f"the model {'would no longer read' if would else 'no longer reads'} {them}")
        elif self.code:
            parts.append(f"the next run {'would be' if would else 'is'} told")
        return f"{'walking back' if would else 'walked back'} {what}: " + "; ".join(parts)

    def reverse_diff(self) -> str:
        """The change the undo makes, as a unified diff (``git apply`` reads it)."""
        from workspace_tools.text.diffs import (
            file_header,
            format_hunks,
            git_mode,
            quote_path,
            text_blocks,
        )

        out: list[str] = []
        for f in self.files:
            now = "" if f.current is None else f.current.decode(f.encoding)
            a, b = quote_path(f"a/{f.path}"), quote_path(f"b/{f.path}")
            if f.reverted is None:
                mode = git_mode(stat.S_IMODE(os.stat(self.root / f.path).st_mode))
                hunks = format_hunks(text_blocks(now, ""))
                out.append(f"diff --git {a} {b}\ndeleted file mode {mode}\n" + (f"--- {a}\n+++ /dev/null\n{hunks}" if hunks else ""))
            elif f.current is None:
                hunks = format_hunks(text_blocks("", f.reverted.decode(f.encoding)))
                mode = git_mode(f.mode if f.mode is not None else 0o644)
                out.append(f"diff --git {a} {b}\nnew file mode {mode}\n" + (f"--- /dev/null\n+++ {b}\n{hunks}" if hunks else ""))
            else:
                hunks = format_hunks(text_blocks(now, f.reverted.decode(f.encoding)))
                if f.chmod is not None:  # a mode a command changed, put back
                    old = git_mode(stat.S_IMODE(os.stat(self.root / f.path).st_mode))
                    head = f"diff --git {a} {b}\nold mode {old}\nnew mode {git_mode(f.chmod)}\n"
                    out.append(head + (f"--- {a}\n+++ {b}\n{hunks}" if hunks else ""))
                else:
                    out.append(file_header(f.path) + hunks if hunks else "")
        return "".join(out)


# --- the runs of a thread -------------------------------------------------------------------


def thread_runs(entries: Sequence[StoredEntry]) -> list[RunRef]:
    """The runs of a thread in order, numbered from 1, with what was undone of each."""
    code_undone: set[str | None] = set()
    rewound: set[str | None] = set()
    for s in entries:
        if isinstance(s.entry, UndoEntry):
            if s.entry.code:
                code_undone.add(s.entry.message_id)
            if s.entry.conversation:
                rewound.add(s.entry.message_id)
    runs: list[RunRef] = []
    for s in entries:
        if isinstance(s.entry, UserEntry):
            mid = s.entry.message_id
            if mid is not None and runs and runs[-1].message_id == mid:
                continue  # a run's follow-up (an answer sent back by --output-schema), not a run
            runs.append(RunRef(len(runs) + 1, mid, s.entry.content, mid in code_undone, mid in rewound))
    return runs


def last_run(entries: Sequence[StoredEntry]) -> tuple[str | None, list[StoredEntry], bool]:
    """The last run of a thread: its ``messageId``, its entries, and whether it was undone."""
    start = max((i for i, s in enumerate(entries) if isinstance(s.entry, UserEntry)), default=-1)
    if start < 0:
        return None, [], False
    user = entries[start].entry
    assert isinstance(user, UserEntry)
    run = list(entries[start + 1 :])
    undone = any(isinstance(s.entry, UndoEntry) for s in run)
    return user.message_id, run, undone


def undone_runs(entries: Sequence[StoredEntry]) -> list[str]:
    """The ``messageId`` of every run of the thread that was walked back (files or conversation)."""
    return [r.message_id for r in thread_runs(entries) if r.message_id and (r.code_undone or r.rewound)]


def find_run(runs: Sequence[RunRef], which: str) -> RunRef:
    """The run ``which`` names: its number (``3``, ``#3``) or its message id (or a unique prefix)."""
    text = which.strip().lstrip("#")
    across = bool(runs) and runs[0].thread_id is not None
    if text.isdigit():
        number = int(text)
        for run in runs:
            if run.number == number:
                return run
        where = "in this workspace" if across else "in this thread"
        raise NothingToUndo(f"no run {number} {where}: it has {len(runs)} (see {'`cog undo --list`' if across else '`cog thread show`'})")
    found = [r for r in runs if r.message_id and r.message_id.startswith(text)] if text else []
    if len(found) == 1:
        return found[0]
    if found:
        raise NothingToUndo(f"run {which!r} is ambiguous: {', '.join(str(r.message_id) for r in found[:5])}; give more of the id")
    if across:
        raise NothingToUndo(f"no run {which!r} in this workspace (a run's number from `cog undo --list`, or its message id)")
    raise NothingToUndo(f"no run {which!r} in this thread (a run's number from `cog thread show`, or its message id)")


# --- planning -------------------------------------------------------------------------------


def plan_undo(root: str | Path, thread: Thread | None, *, to: str | None = None, code: bool = True, conversation: bool = False) -> UndoPlan:
    """What walking ``thread`` back writes: without ``to``, its newest run that changed files and is
    not undone yet (``code``), or its newest run the model still reads (``conversation`` alone);
    with ``to`` (a run's number or message id), every run from the newest back to that one. Raises
    :class:`NothingToUndo` or :class:`UndoRefused`; reads files, writes nothing."""
    if thread is None:
        raise NothingToUndo("nothing to undo: no run in this workspace yet")
    runs = thread_runs(thread.entries)
    if not runs:
        raise NothingToUndo(f"nothing to undo: thread {thread.id} has no run")
    return plan_runs(root, runs, thread.id, to=to, code=code, conversation=conversation)


def plan_runs(root: str | Path, runs: Sequence[RunRef], thread_id: str, *, to: str | None = None, code: bool = True,
              conversation: bool = False) -> UndoPlan:
    """:func:`plan_undo` on ``runs`` in the order they ran: one thread's (``thread_id``), or the
    workspace's across its threads (each run naming its own; ``thread_id`` the newest run's)."""
    from workspace_tools.files.journal import read_run
    from workspace_tools.workspace.paths import Workspace

    across = runs[0].thread_id is not None
    scope = "in this workspace" if across else f"of thread {thread_id}"
    workspace = Workspace(root)
    notes: list[str] = []
    records: dict[int, list[Any]] = {}

    def changes_of(run: RunRef) -> list[Any]:
        if run.number not in records:
            read = read_run(workspace.root, run.message_id) if run.message_id else None
            if read is not None and read.rejected:
                notes.append(
                    f"set aside {len(read.rejected)} record{'s' if len(read.rejected) != 1 else ''} in .cog/journal/{run.message_id}/ "
                    "that cog did not write (planted or altered): not acted on"
                )
            records[run.number] = read.changes if read is not None else []
        return records[run.number]

    if to is not None:
        target = find_run(runs, to)
        chosen = [r for r in runs if r.number >= target.number and ((code and not r.code_undone) or (conversation and not r.rewound))]
        if not chosen or chosen[0].number != target.number:
            raise NothingToUndo(f"nothing to undo: {target.named(thread_id)} was undone already")
        chosen.reverse()
    elif code:
        chosen = next(([r] for r in reversed(runs) if not r.code_undone and changes_of(r)), [])
        if not chosen:
            if any(changes_of(r) for r in runs):
                raise NothingToUndo(f"nothing to undo: every run {scope} that changed files was undone already")
            raise NothingToUndo(f"nothing to undo: the runs {scope} changed no files" + (f" ({'; '.join(notes)})" if notes else ""))
    else:
        chosen = next(([r] for r in reversed(runs) if not r.rewound), [])
        if not chosen:
            raise NothingToUndo(f"nothing to undo: the model reads no run {scope} any more")
    newest = chosen[0].thread_id or thread_id
    plan = UndoPlan(root=workspace.root, thread_id=newest, message_id=chosen[-1].message_id, runs=chosen, code=code, conversation=conversation)
    if code:
        walked = [(r, changes_of(r)) for r in chosen if not r.code_undone]
        made: set[str] = set()
        noted = len(notes)
        plan.files = _walk_back(workspace, walked, notes, made)
        left = notes[noted:]  # the files cog could not keep, left as they are
        plan.folders = sorted(made | {d for f in plan.files for d in f.folders})
        if plan.folders:
            notes.append(f"the folders the runs' commands made are removed if empty then: {', '.join(d + '/' for d in plan.folders)}")
        if any(c.by for _, changes in walked for c in changes):
            notes.append("only files in the workspace are put back: what the runs' commands did outside it (the network, "
                         "a database, other folders) is not undone")
        plan.touched = {r.message_id: {c.path for c in changes} for r, changes in walked}
        if not plan.files and not plan.folders and to is None and not conversation:
            before = next((r for r in reversed(runs) if r.number < chosen[0].number and not r.code_undone and changes_of(r)), None)
            raise NothingToUndo(_already_back(chosen[0], thread_id, before, left))
        if not plan.files and not plan.folders and any(changes_of(r) for r in chosen):
            notes.append("the files were already as they were before " + ("that run" if len(chosen) == 1 else "those runs"))
    plan.notes = notes
    return plan


def _already_back(run: RunRef, thread_id: str, before: RunRef | None, left: Sequence[str] = ()) -> str:
    """Why ``run``, the newest not undone, has nothing to undo: its files are as they were (put back
    by hand), or cog could not keep them (``left``: a link, a file too big); the run before it to
    walk back to with ``--to``, when one is left."""
    head = f"nothing to undo: the files of {run.named(thread_id)} are as they were before it"
    if left:
        head = f"nothing cog can undo in {run.named(thread_id)}: {'; '.join(left)}; put those back by hand (git restore for tracked files)"
    if before is None:
        return head + ("" if left else " (put back by hand?)") + ", and no run before it changed files that are not undone yet"
    return head + f" (walk further back with --to {before.number}: run {before.number} ({before.title}) too)"


def _walk_back(workspace: Any, runs: list[tuple[RunRef, list[Any]]], notes: list[str], folders: set[str]) -> list[FileRevert]:
    """Each file walked back through the runs' changes, newest first (see the module). A command's
    change (its ``after_mode`` set) must also find the mode it left, and puts back the mode before;
    one cog could not keep (``unrestorable``) leaves its file as it is, named in ``notes``. A folder
    a command made with no file in it, still a folder, is added to ``folders``."""
    now: dict[str, bytes | None] = {}
    state: dict[str, bytes | None] = {}
    modes: dict[str, int | None] = {}
    mode_now: dict[str, int | None] = {}
    mode_state: dict[str, int | None] = {}
    by_command: set[str] = set()
    made: dict[str, set[str]] = {}  # the folders a command made above a file it created
    left: dict[str, str] = {}
    refused: dict[str, str] = {}
    for run, changes in runs:
        for change in reversed(changes):
            if change.path in left:
                continue
            if change.unrestorable and not change.folder:  # never resolved: a link it left may lead out
                left[change.path] = f"{change.path} was not put back: {change.by or 'a command'} changed it and cog could not keep it ({change.unrestorable})"
                continue
            try:
                path = workspace.resolve(change.path, for_write=True)
            except CogError as exc:
                raise UndoRefused(f"{change.path}: {exc.message}") from None
            rel = workspace.relative(path)
            if change.folder:
                if stat.S_ISDIR(_mode_bits(path)):
                    folders.add(rel)
                continue
            if rel in refused or rel in left:
                continue
            if rel not in now:
                now[rel] = state[rel] = _read(rel, path)
                mode_now[rel] = mode_state[rel] = _mode(path) if now[rel] is not None else None
            held = state[rel]
            if change.after_mode is not None or change.by:  # a command's: its bytes and its mode
                by_command.add(rel)
                landed = change.is_after(held) and (held is None or mode_state[rel] == change.after_mode)
                if landed:
                    state[rel], mode_state[rel] = change.before, change.mode
                    modes[rel] = change.mode
                    made.setdefault(rel, set()).update(d for d in change.made_dirs if rel.startswith(d + "/"))
                elif change.is_after(held) or held != change.before or (held is not None and mode_state[rel] != change.mode):
                    moded = held is not None and (change.is_after(held) or held == change.before)
                    refused[rel] = (_refusal(rel, run, change, held) if not moded else
                                    f"{changed_since(rel)} (run {run.number}: {run.title}): its mode is now {mode_state[rel]:o}, "
                                    f"the run left {change.after_mode:o}")
                continue
            if change.is_after(held):
                state[rel] = change.before
                modes[rel] = change.mode
                if change.before is None:
                    mode_state[rel] = None
                elif mode_state[rel] is None:
                    mode_state[rel] = change.mode
            elif held != change.before:
                refused[rel] = _refusal(rel, run, change, held)
    if refused:
        raise UndoRefused(refused_text(refused))
    notes.extend(left.values())
    out: list[FileRevert] = []
    for rel, current in now.items():
        if rel in left:
            continue
        chmod = mode_state[rel] if rel in by_command and current is not None and state[rel] is not None else None
        if state[rel] != current or (chmod is not None and chmod != mode_now[rel]):
            out.append(FileRevert(rel, current, state[rel], _shared_encoding(current, state[rel]), modes.get(rel),
                                  chmod=chmod if chmod != mode_now[rel] else None, by_command=rel in by_command,
                                  folders=tuple(sorted(made.get(rel, ()))) if state[rel] is None else ()))
    return out


def _mode_bits(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None


def _read(rel: str, path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UndoRefused(f"{rel} cannot be read ({exc.strerror or exc}); nothing was changed") from None


def _refusal(rel: str, run: RunRef, change: Any, held: bytes | None) -> str:
    """``rel`` changed since ``run``: the refusal, with what differs from what the run left."""
    from cogcli.shown.visible import visible
    from workspace_tools.text.diffs import format_hunks, text_blocks

    how = "was deleted" if held is None else "changed"
    head = f"{changed_since(rel, how)} (run {run.number}: {run.title})"
    if held is None or (change.after is None and change.after_sha256 is not None):
        return head
    left = b"" if change.after is None else change.after
    enc = _shared_encoding(left, held)
    lines = format_hunks(text_blocks(left.decode(enc), held.decode(enc))).splitlines()
    shown = lines[:DIFF_LINES] + ([f"… {len(lines) - DIFF_LINES} more lines"] if len(lines) > DIFF_LINES else [])
    return head + "; what differs from what the run left:\n" + "\n".join("    " + visible(line, one_line=True) for line in shown)


def _shared_encoding(*datas: bytes | None) -> str:
    try:
        for data in datas:
            if data is not None:
                data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        return "latin-1"
