"""What the reliability tests check after a fault: the thread database opens, passes SQLite's
integrity check and holds whole steps; a JSON-lines stream is valid and ends in one finish. And
:func:`run_while`, which runs the tools while another thread keeps changing the files under them."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

from cogcli.wire.events import parse_event


def db_check(workspace: Path) -> dict[str, list[str]]:
    """Open ``<workspace>/.cog/threads.db`` as a reader would after a crash (read-only, no WAL
    writes), assert ``PRAGMA integrity_check`` is ``ok`` and every entry's data is JSON, and
    return each thread's entry kinds in order."""
    path = workspace / ".cog" / "threads.db"
    assert path.exists(), "no thread database"
    db = sqlite3.connect(path, timeout=30)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kinds: dict[str, list[str]] = {tid: [] for (tid,) in db.execute("SELECT id FROM threads")}
        for tid, kind, data in db.execute("SELECT thread_id, kind, data FROM entries ORDER BY thread_id, seq"):
            json.loads(data)
            kinds[tid].append(kind)
        return kinds
    finally:
        db.close()


def thread_status(workspace: Path, thread_id: str) -> str:
    db = sqlite3.connect(workspace / ".cog" / "threads.db", timeout=30)
    try:
        (status,) = db.execute("SELECT status FROM threads WHERE id = ?", (thread_id,)).fetchone()
        return status
    finally:
        db.close()


def events_of(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines of a whole run: each a valid event, seq 0, 1, 2, …, one finish, last."""
    events = [json.loads(line) for line in stdout.splitlines()]
    for line in stdout.splitlines():
        parse_event(line)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("finish") == 1 and events[-1]["type"] == "finish"
    return events


def results_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool-result"]


def run_while(step: Callable[[int], None], work: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """``anyio.run(work)`` while a thread repeats ``step(n)`` (n = 1, 2, …) until the work is
    done; an ``OSError`` in a step is a race the step lost, and is ignored. Returns the work's
    result and how many steps ran."""
    stop = threading.Event()
    steps = 0

    def repeat() -> None:
        nonlocal steps
        while not stop.is_set():
            steps += 1
            try:
                step(steps)
            except OSError:
                pass

    thread = threading.Thread(target=repeat, daemon=True)
    thread.start()
    try:
        result = anyio.run(work)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    return result, steps

