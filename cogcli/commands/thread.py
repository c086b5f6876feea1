"""``cog thread list`` and ``cog thread show ID``: stored threads, redrawn from memory with the
same renderers (and so the same rows) as the live run."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from typing import Any

from cogcli.contract.errors import ConfigError
from cogcli.render import Renderer
from cogcli.wire.exit_codes import EXIT_OK, EXIT_USAGE
from cogcli.shown.visible import say


def _fail(message: str) -> int:
    say(message)
    return EXIT_USAGE


def list_command(root: Path, as_json: bool) -> int:
    from cogcli.threads.store import default_store_path
    from cogcli.session import Session

    try:
        with Session(root) as session:
            threads = session.threads()
    except ConfigError as exc:
        return _fail(exc.message)
    except (ValueError, sqlite3.Error, OSError) as exc:
        return _fail(f"the thread store {default_store_path(root)} cannot be read ({exc}); move it away to start afresh")
    if as_json:
        sys.stdout.write(json.dumps([t.model_dump(mode="json") for t in threads], indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    if not threads:
        say(f"no threads yet in {root} (cog edit starts one)")
        return EXIT_OK
    from cogcli.shown.visible import visible

    for t in threads:
        sys.stdout.write(visible(f"{t.id}  {t.updated_at[:19].replace('T', ' ')}  {t.status:<9}  {t.title}") + "\n")
    from cogcli.threads.undo_disk import undo_disk_line

    line = undo_disk_line(root)
    if line:
        say(line)  # on stderr: stdout stays one thread a line
    return EXIT_OK


def show_command(root: Path, thread_id: str, renderer: Renderer) -> int:
    import gc

    from cogcli.threads.store import collector_paused

    # one pause while ~4,000 entries are read and ~12,000 events made and drawn (no cycles among them to
    # find), and those objects frozen after, not walked by a last full collection: the command ends here
    with collector_paused():
        code = _show(root, thread_id, renderer)
        gc.freeze()
    return code


def _show(root: Path, thread_id: str, renderer: Renderer) -> int:
    from cogcli.threads.store import default_store_path, default_store, events_from_entries
    from cogcli.shown.visible import visible
    from cogcli.threads.undo import thread_runs

    if not default_store_path(root).exists():
        return _fail(f"no thread {thread_id!r}: {root} has no stored threads yet")
    try:
        with default_store(root) as store:
            found = store.require_id(thread_id)
            entries = store.entries(found)  # read once: the events and the runs' headings are made from them
            events = events_from_entries(found, entries)
            runs = thread_runs(entries)
    except ConfigError as exc:
        return _fail(exc.message)
    except (ValueError, RecursionError, sqlite3.Error, OSError) as exc:  # a damaged row, a damaged file
        return _fail(_damaged(default_store_path(root), thread_id, exc))
    from cogcli.render.text import TextRenderer

    if entries and "imported" in (entries[0].entry.model_extra or {}) and isinstance(renderer, TextRenderer):
        from cogcli.threads.imported import origin_line, origin_of  # only for a thread imported from another agent

        origin = origin_of(entries)
        if origin is not None:  # where it came from
            renderer.out.write(visible(origin_line(origin), one_line=True) + "\n")
    headed = iter(runs)
    for event in events:
        if isinstance(renderer, TextRenderer) and getattr(event, "type", None) == "start":
            run = next(headed, None)
            if run is not None:  # the number cog undo --to (and chat's /rewind) take
                renderer.out.write(visible(run_heading(run), one_line=True) + "\n")
        renderer.handle(event)
    renderer.close()
    return EXIT_OK


def run_heading(run: Any) -> str:
    """``── run 2 · msg_… · files undone ──``: a run's number for ``cog undo --to``, and what was undone."""
    marks = [m for m, on in (("files undone", run.code_undone), ("conversation rewound", run.rewound)) if on]
    return "── run " + " · ".join([str(run.number), str(run.message_id or "?"), *marks]) + " ──"


def export_command(root: Path, thread_id: str | None, fmt: str, output: Path | None) -> int:
    """``cog thread export [ID|--last] --format atif|jsonl``: the thread as an ATIF trajectory (one
    JSON document) or as its events (JSON lines), on stdout or into ``output``."""
    from cogcli.threads.store import default_store, default_store_path

    if not default_store_path(root).exists():
        return _fail(f"no threads in {root} yet (cog edit starts one)")
    try:
        with default_store(root) as store:
            thread = store.get_thread(thread_id) if thread_id else store.last_thread()
            if thread is None:
                return _fail(f"no thread {thread_id!r} (list them with `cog thread list`)" if thread_id else f"no threads in {root} yet")
            if fmt == "atif":
                from cogcli.threads.atif import trajectory

                text = json.dumps(trajectory(thread.id, thread.entries, model=thread.model), indent=2, ensure_ascii=False) + "\n"
            else:
                text = "".join(json.dumps(e.to_wire(), ensure_ascii=False) + "\n" for e in store.thread_events(thread.id))
    except ConfigError as exc:
        return _fail(exc.message)
    except (ValueError, RecursionError, sqlite3.Error, OSError) as exc:
        return _fail(_damaged(default_store_path(root), thread_id or "", exc))
    if output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write {output} ({exc.strerror or exc}): check that its folder exists and is writable")
    return EXIT_OK


def _damaged(db: Path, thread_id: str, exc: BaseException) -> str:
    """What is wrong with a thread that cannot be read: the entry whose stored data is not valid
    JSON (or not an entry this cog knows) when one is found, else the error."""
    seq = None
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = con.execute(
                "SELECT seq, data FROM entries WHERE thread_id IN (SELECT id FROM threads WHERE id = ? OR id LIKE ? || '%') ORDER BY seq",
                (thread_id, thread_id),
            ).fetchall()
        finally:
            con.close()
        for row_seq, data in rows:
            try:
                json.loads(data)
            except (ValueError, RecursionError, TypeError):
                seq = row_seq
                break
    except sqlite3.Error:
        pass
    what = f"its entry {seq} is not valid JSON" if seq is not None else f"{type(exc).__name__}: {exc}"
    return (
        f"thread {thread_id} cannot be shown: {what} (the store {db} was damaged or written by another program). "
        "The other threads are unaffected (cog thread list)"
    )


def import_command(root: Path, file: Path, fmt: str | None, as_json: bool) -> int:
    """``cog thread import FILE``: another agent's session stored as a new thread of this workspace."""
    from cogcli.threads.imported import entries, import_file, title
    from cogcli.threads.store import default_store, default_store_path
    from cogcli.shown.visible import visible

    try:
        imported = import_file(file, fmt)
        made = entries(imported)
        with default_store(root) as store:
            info = store.create_thread(title=title(imported))
            store.append(info.id, made, status="completed")
    except ConfigError as exc:
        return _fail(exc.message)
    except (sqlite3.Error, OSError) as exc:
        return _fail(f"the thread store {default_store_path(root)} cannot be written ({exc}); move it away to start afresh")
    origin = imported.origin
    if as_json:
        sys.stdout.write(json.dumps({"threadId": info.id, "origin": origin.model_dump(exclude_none=True)}, ensure_ascii=False) + "\n")
        return EXIT_OK
    extras = ", ".join(f"{n} {what}" for n, what in ((origin.skipped_lines, "malformed lines skipped"), (origin.cut, "long messages cut"),
                                            (origin.dropped, "older messages left out"), (origin.redacted, "credentials redacted")) if n)
    sys.stdout.write(visible(
        f"imported {_count(origin.messages, 'message')} ({_count(origin.calls, 'tool call')}, as text) from {origin.agent}"
        f"{f' session {origin.session_id}' if origin.session_id else ''} into thread {info.id}"
        f"{f' ({extras})' if extras else ''}") + "\n")
    sys.stdout.write(f"continue it: cog edit --thread {info.id} \"…\"   or   cog chat --thread {info.id}\n")
    return EXIT_OK


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"
