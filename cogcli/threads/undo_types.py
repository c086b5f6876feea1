"""What undo is made of, shared by planning (:mod:`cogcli.threads.undo`) and applying
(:mod:`cogcli.threads.undo_apply`): its errors, a run, one file's revert."""

from __future__ import annotations

from dataclasses import dataclass

from cogcli.contract.errors import CogError


class NothingToUndo(CogError):
    """No such thread or run, the runs changed no files, or they were undone already (exit 2)."""

    code = "NOTHING_TO_UNDO"


class UndoRefused(CogError):
    """A file changed since the run (or its change cannot be reverted): nothing was written (exit 1)."""

    code = "UNDO_REFUSED"


@dataclass(frozen=True)
class RunRef:
    """One run of a thread, numbered from 1 as ``cog thread show`` numbers them."""

    number: int
    message_id: str | None
    instruction: str
    #: its files were put back (an undo entry with ``code``)
    code_undone: bool
    #: the model no longer reads its turns (an undo entry with ``conversation``)
    rewound: bool
    #: walking the workspace's runs (``number`` counts them all): its thread, and its number there
    thread_id: str | None = None
    in_thread: int | None = None

    @property
    def title(self) -> str:
        line = " ".join(self.instruction.split())
        return line if len(line) <= 60 else line[:59] + "…"

    def named(self, thread_id: str) -> str:
        """``run 2 of thread thr_…`` (a thread's run), ``run 3 (title; run 2 of thread thr_…)`` (the workspace's)."""
        if self.thread_id is None:
            return f"run {self.number} of thread {thread_id}"
        return f"run {self.number} ({self.title}; run {self.in_thread} of thread {self.thread_id})"


@dataclass(frozen=True)
class FileRevert:
    """One file: its bytes now and what the undo puts back (None: delete it, the run created it;
    ``current`` None: make it again, the run deleted or moved it)."""

    path: str
    current: bytes | None
    reverted: bytes | None
    encoding: str = "utf-8"
    #: the permission bits to make it again with (a file the run deleted)
    mode: int | None = None
    #: the permission bits to give the file besides its bytes (a command changed its mode)
    chmod: int | None = None
    #: a command the run ran changed it (the dry run lists these apart from the tools' writes)
    by_command: bool = False
    #: the folders above it that the command made (a file the undo deletes): removed once empty
    folders: tuple[str, ...] = ()

    @property
    def deletes(self) -> bool:
        return self.reverted is None

    @property
    def creates(self) -> bool:
        return self.current is None


def changed_since(rel: str, how: str = "changed") -> str:
    return f"{rel} {how} since the run, so it cannot be put back as it was; nothing was changed"


#: files named in a refusal's first line, and files whose difference is shown below it (the rest counted)
NAMES_SHOWN = 10
DIFFS_SHOWN = 3


def refused_text(refused: dict[str, str], how: str = "changed") -> str:
    """An undo refused for every file in ``refused`` (path -> its own refusal, what differs included):
    one file's refusal as it is; several named all in the first line (the first :data:`NAMES_SHOWN`
    and ``and K more``), then the first :data:`DIFFS_SHOWN` refusals with what differs."""
    if len(refused) == 1:
        return next(iter(refused.values()))
    names = sorted(refused)
    listed = ", ".join(names[:NAMES_SHOWN]) + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")
    lines = [f"{len(names)} files {how} since the run, so they cannot be put back as they were; nothing was changed: {listed}",
             *(refused[n] for n in names[:DIFFS_SHOWN])]
    if len(names) > DIFFS_SHOWN:
        lines.append(f"… and {len(names) - DIFFS_SHOWN} more files {how} since the run (named above)")
    return "\n".join(lines)
