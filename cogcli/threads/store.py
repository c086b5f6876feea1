"""Threads: a run's conversation kept in SQLite so it can be continued and re-drawn later.

A thread is a list of *entries*, written as each step completes, one transaction a step (a
killed process loses at most the step in flight):

- ``user`` — the input of a run;
- ``assistant`` — one model turn: its text and the tool calls it made (arguments as streamed);
- ``tool_result`` — one per call: ``tool_results`` holds exactly what the model read (the
  result's ``model_text``), and ``metadata`` keeps what only clients read — ``details``,
  ``presentation``, the whole content, the error code, the arguments it ran with, its duration;
- ``run_end`` — how a run ended (status, steps, usage, error);
- ``undo`` — ``cog undo`` reverted the files of a run.

The history a model reads is built from entries by :mod:`cogcli.threads.history`, which never reads
``metadata``. :meth:`ThreadStore.thread_events` turns entries back into wire events so a client
draws a stored thread with the same rows the live run drew.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cogcli.threads.entries import (  # noqa: F401 (the entry types are part of this module's API)
    _ENTRY, AssistantEntry, Entry, ModelToolResult, RunEndEntry, StoredEntry, ToolResultEntry, ToolResultMetadata, UndoEntry, UserEntry,
    collector_paused,
)
from cogcli.threads.redraw import events_from_entries  # noqa: F401 (where callers have always found it)
from cogcli.wire.emitter import now_iso
from cogcli.contract.errors import ConfigError
from cogcli.wire.events import BaseEvent
from workspace_tools.host.files import exclude_from_git  # noqa: F401 (where it lives; callers import it from here too)

log = logging.getLogger("cogcli")

#: the SQLite layout of a thread store (``PRAGMA user_version``); the wire's is ``events.SCHEMA_VERSION``
STORE_SCHEMA_VERSION = 1
TITLE_LENGTH = 120
#: the entry kinds this cog reads (a row of another kind was written by a newer cog: left out)
ENTRY_KINDS = ("user", "assistant", "tool_result", "run_end", "undo", "compaction")


class ThreadInfo(BaseModel):
    id: str
    created_at: str
    updated_at: str
    #: the first input of the thread, cut to a line
    title: str = ""
    model: str | None = None
    workspace: str | None = None
    #: ``running`` while a run is under way, else how its last run ended (a :class:`RunStatus` value)
    status: str = "running"


class Thread(ThreadInfo):
    entries: list[StoredEntry] = Field(default_factory=list)


def _entry_json(entry: Entry) -> str:
    """An entry as stored: UTF-8 JSON, or ASCII JSON with ``\\u`` escapes when it holds text UTF-8
    cannot carry (lone surrogates from a file name that is not UTF-8), which reads back the same."""
    data = entry.model_dump(mode="json", exclude_none=True)
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data)
    return text


def new_thread_id() -> str:
    return f"thr_{uuid.uuid4().hex[:20]}"


# --- the store ------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    model TEXT,
    workspace TEXT,
    status TEXT NOT NULL DEFAULT 'running',
    -- rises with every write: orders threads by their last change even within one millisecond
    touched INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS entries (
    thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE INDEX IF NOT EXISTS threads_touched ON threads(touched);
"""


class ThreadStore:
    """Threads in one SQLite file (WAL); ``":memory:"`` keeps them for the life of the object.

    Safe to share between threads of one process and between processes on one file.
    """

    def __init__(self, path: str | Path = ":memory:", *, workspace: str | Path | None = None) -> None:
        self.path = path if path == ":memory:" else Path(path)
        self.workspace = str(workspace) if workspace is not None else None
        if isinstance(self.path, Path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(
                str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False
            )
            self._db.row_factory = sqlite3.Row
            if isinstance(self.path, Path):
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > STORE_SCHEMA_VERSION:
                raise ConfigError(
                    f"thread store {self.path} was written by a newer cog (schema {version}, this cog reads "
                    f"{STORE_SCHEMA_VERSION}); upgrade cog or move the file away"
                )
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={STORE_SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot open thread store {self.path}: {exc} (move the file away to start afresh)") from None
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ThreadStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # --- writing ------------------------------------------------------------------------

    def create_thread(self, thread_id: str | None = None, *, title: str = "", model: str | None = None) -> ThreadInfo:
        now = now_iso()
        info = ThreadInfo(
            id=thread_id or new_thread_id(),
            created_at=now,
            updated_at=now,
            title=_title(title),
            model=model,
            workspace=self.workspace,
        )
        with self._transaction() as db:
            db.execute(
                "INSERT INTO threads (id, created_at, updated_at, title, model, workspace, status, touched) "
                "VALUES (?,?,?,?,?,?,?, (SELECT COALESCE(MAX(touched), 0) + 1 FROM threads))",
                (info.id, info.created_at, info.updated_at, info.title, info.model, info.workspace, info.status),
            )
        return info

    def append(self, thread_id: str, entries: Sequence[Entry], *, status: str | None = None) -> None:
        """Append ``entries`` to the thread in one transaction (all or none); ``status`` sets the
        thread's status in the same transaction."""
        now = now_iso()
        rows = [(e.kind, _entry_json(e)) for e in entries]
        with self._transaction() as db:
            (last,) = db.execute("SELECT COALESCE(MAX(seq), -1) FROM entries WHERE thread_id = ?", (thread_id,)).fetchone()
            db.executemany(
                "INSERT INTO entries (thread_id, seq, kind, data, created_at) VALUES (?,?,?,?,?)",
                [(thread_id, last + 1 + i, kind, data, now) for i, (kind, data) in enumerate(rows)],
            )
            updated = db.execute(
                "UPDATE threads SET updated_at = ?, status = COALESCE(?, status), "
                "touched = (SELECT MAX(touched) + 1 FROM threads) WHERE id = ?",
                (now, status, thread_id),
            )
            if updated.rowcount != 1:
                raise KeyError(f"no thread {thread_id!r}")

    def set_status(self, thread_id: str, status: str) -> None:
        self.append(thread_id, [], status=status)

    # --- reading ------------------------------------------------------------------------

    def list_threads(self, limit: int | None = None) -> list[ThreadInfo]:
        """Threads, the most recently updated first."""
        sql = "SELECT * FROM threads ORDER BY touched DESC"
        with self._lock:
            rows = self._db.execute(sql + (" LIMIT ?" if limit else ""), (limit,) if limit else ()).fetchall()
        return [_info(r) for r in rows]

    def resolve_id(self, thread_id: str) -> str | None:
        """The id of the thread ``thread_id`` names (the whole id or a unique prefix), or None.
        An ambiguous prefix raises :class:`ConfigError` listing the matches."""
        with self._lock:
            if self._db.execute("SELECT 1 FROM threads WHERE id = ?", (thread_id,)).fetchone():
                return thread_id
            pattern = thread_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self._db.execute(
                "SELECT id FROM threads WHERE id LIKE ? ESCAPE '\\' ORDER BY touched DESC LIMIT 6", (pattern,)
            ).fetchall()
        if not rows:
            return None
        if len(rows) > 1:
            shown = ", ".join(r["id"] for r in rows[:5]) + (", …" if len(rows) > 5 else "")
            raise ConfigError(f"thread id {thread_id!r} is ambiguous: it starts {shown}; give more of the id")
        return rows[0]["id"]

    def require_id(self, thread_id: str, *, to: str = "") -> str:
        """:meth:`resolve_id`, or a :class:`ConfigError` saying there is no such thread and how to
        list them (``to``: what it was wanted for, e.g. " to continue"). The one message for it."""
        found = self.resolve_id(thread_id)
        if found is None:
            raise ConfigError(f"no thread {thread_id!r}{to} (list them with `cog thread list`)")
        return found

    def get_thread(self, thread_id: str) -> Thread | None:
        """The thread with this id (or unique id prefix) and all its entries; None when there is none."""
        found = self.resolve_id(thread_id)
        if found is None:
            return None
        with self._lock:
            row = self._db.execute("SELECT * FROM threads WHERE id = ?", (found,)).fetchone()
        if row is None:
            return None
        return Thread(**_info(row).model_dump(), entries=self.entries(found))

    def last_thread(self) -> Thread | None:
        """The most recently updated thread, or None when there is none."""
        threads = self.list_threads(limit=1)
        return self.get_thread(threads[0].id) if threads else None

    def entries(self, thread_id: str, kinds: Sequence[str] = (), *, after: int = -1, limit: int = -1) -> list[StoredEntry]:
        """The thread's entries in order; with ``kinds`` only those (its runs without its 2,000 calls);
        ``after``/``limit``: the first ``limit`` after ``seq`` ``after`` (a part: Studio's thread stream)."""
        # a newer cog's kinds are left out by the row's kind; the entry's own kind (in its JSON) is
        # what it is validated and read as (a row of a kind it is not: damaged, never skipped)
        kinds = [k for k in kinds if k in ENTRY_KINDS] if kinds else list(ENTRY_KINDS)
        with self._lock:
            rows = self._db.execute(
                f"SELECT seq, data, created_at FROM entries WHERE thread_id = ? AND kind IN ({','.join('?' * len(kinds))}) "
                "AND seq > ? ORDER BY seq LIMIT ?",
                (thread_id, *kinds, after, limit),
            ).fetchall()
        with collector_paused():
            # validated from the stored JSON (any row may be planted): ~2x json.loads + validate_python
            return [StoredEntry(seq=r["seq"], created_at=r["created_at"], entry=_ENTRY.validate_json(r["data"])) for r in rows]

    def history_entries(self, thread_id: str) -> list[StoredEntry]:
        """The entries a model's history is built from (:func:`cogcli.threads.history.build_history`):
        every kind but ``run_end``, each validated from its stored JSON as :meth:`entries` does, less
        a call's ``metadata`` (details, the whole content, the arguments: what only clients read and
        a model never does; at 2,000 steps most of a thread's bytes), removed by SQLite before it is read."""
        kinds = [k for k in ENTRY_KINDS if k != "run_end"]
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, CASE WHEN json_valid(data) THEN json_remove(data, '$.metadata') ELSE data END AS data, created_at "
                f"FROM entries WHERE thread_id = ? AND kind IN ({','.join('?' * len(kinds))}) ORDER BY seq",
                (thread_id, *kinds),
            ).fetchall()
        with collector_paused():
            return [StoredEntry(seq=r["seq"], created_at=r["created_at"], entry=_ENTRY.validate_json(r["data"])) for r in rows]

    def runs_written(self) -> list[tuple[str, StoredEntry]]:
        """Every thread's ``user`` and ``undo`` entries in the order they were written, as (thread id,
        entry): what walking the workspace's runs back across its threads reads."""
        with self._lock:
            rows = self._db.execute(
                "SELECT thread_id, seq, data, created_at FROM entries WHERE kind IN ('user', 'undo') ORDER BY created_at, rowid"
            ).fetchall()
        return [(r["thread_id"], StoredEntry(seq=r["seq"], created_at=r["created_at"], entry=_ENTRY.validate_json(r["data"])))
                for r in rows]

    def thread_events(self, thread_id: str) -> list[BaseEvent]:
        """The thread as wire events: per run ``start``, its texts, each call's
        ``tool-call-start → tool-call-end → [tool-update with arguments] → tool-result`` (with the
        presentation and details the live run had), an ``error`` if it failed and its ``finish``."""
        found = self.require_id(thread_id)
        return events_from_entries(found, self.entries(found))


def _info(row: sqlite3.Row) -> ThreadInfo:
    return ThreadInfo(**{k: row[k] for k in row.keys() if k in ThreadInfo.model_fields})


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


# --- where a workspace keeps its threads ----------------------------------------------------

COG_DIR = ".cog"
STORE_NAME = "threads.db"


def default_store_path(workspace: Path) -> Path:
    return Path(workspace) / COG_DIR / STORE_NAME


#: what cog keeps in ``.cog/``: the store (and SQLite's files beside it), the undo journal, test reports
COG_STATE = (STORE_NAME, f"{STORE_NAME}-wal", f"{STORE_NAME}-shm", f"{STORE_NAME}-journal", "journal", "test-reports")


def default_store(workspace: Path) -> ThreadStore:
    """The workspace's own store, ``<workspace>/.cog/threads.db``. When the workspace is a git
    repo, ``.cog/`` is added to ``.git/info/exclude`` (never to ``.gitignore``) so it stays out
    of ``git status`` without touching a tracked file.

    ``.cog`` is opened (made) without following a link, and neither the store, SQLite's files
    beside it, nor the journal and report folders may be links: a link there (committed, or left
    by a test run without the sandbox) would make cog write outside the workspace, so it is a
    :class:`ConfigError` naming it, and nothing is written."""
    root = prepare_store(workspace)
    return ThreadStore(default_store_path(root), workspace=root)


async def default_store_aside(workspace: Path) -> ThreadStore:
    """:func:`default_store`, its checks and set-up (they run ``git``) in a worker thread: the
    caller's event loop goes on meanwhile (a session's first request's connection opens)."""
    import anyio

    root = await anyio.to_thread.run_sync(prepare_store, workspace)
    return ThreadStore(default_store_path(root), workspace=root)


def prepare_store(workspace: Path) -> Path:
    """:func:`default_store`'s checks and set-up, without opening the store (they run ``git``: a
    session does them in a worker thread while its first request's connection opens); the
    workspace's resolved root."""
    workspace = Path(workspace)
    exclude_from_git(workspace)
    root = workspace.resolve()
    check_cog_dir(root)
    owners_only(root)
    return root


def is_tracked(root: Path, rel: str) -> bool:
    """Whether git tracks ``rel`` in the workspace at ``root`` (False outside a repository or without git)."""
    from workspace_tools.host.git import GitNotFound, run_git

    try:
        done = run_git(root, ["ls-files", "-z", "--", rel], timeout=30)
    except (LookupError, GitNotFound, OSError):
        return False
    return done.returncode == 0 and bool(done.stdout.strip(b"\0"))


def owners_only(root: Path) -> None:
    """Make ``.cog/threads.db`` (not through a link) readable by its owner only — SQLite makes
    its ``-wal``/``-shm`` files with the database's mode — and refuse a store git tracks: what the
    person typed and the model read must never show in ``git diff`` or a push."""
    from workspace_tools.host import files as hostfiles

    rel = f"{COG_DIR}/{STORE_NAME}"
    if os.path.lexists(root / rel) and is_tracked(root, rel):
        raise ConfigError(
            f"{root / rel} is tracked by git: cog's thread store holds what you typed and what the model read, "
            f"and must not be committed. Run: git rm --cached {rel}  (and commit), then run cog again"
        )
    try:
        fd = hostfiles.open_file(root / rel, root, os.O_RDWR | os.O_CREAT, 0o600)
    except hostfiles.LinkRefused as exc:
        raise ConfigError(link_in_cog_dir(root, exc)) from None
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def check_cog_dir(root: Path) -> None:
    """Make ``root/.cog`` (not through a link) and check that nothing cog writes in it is a link.
    Raises :class:`ConfigError` naming the link; ``NotADirectoryError`` when ``.cog`` is a file."""
    from workspace_tools.host import files as hostfiles

    try:
        fd = hostfiles.open_dir(root / COG_DIR, root, create=True)
        try:
            for name in COG_STATE:
                hostfiles.refuse_link(fd, name, where=f"{COG_DIR}/{name}")
        finally:
            os.close(fd)
    except hostfiles.LinkRefused as exc:
        raise ConfigError(link_in_cog_dir(root, exc)) from None


def link_in_cog_dir(root: Path, exc: Any) -> str:
    """The words for a link where cog keeps its state (``exc``: a :class:`workspace_tools.host.files.LinkRefused`)."""
    return (
        f"{root / exc.where} is a symbolic link{f' (to {exc.target})' if exc.target else ''}; cog keeps its threads, "
        "undo records and test reports there and does not write through a link (it would write outside the workspace): "
        "nothing was written. Remove the link and run again"
    )
