"""``cog thread list`` and ``cog thread show ID``: stored threads, redrawn from memory with the
same renderers (and so the same rows) as the live run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cogcli.errors import ConfigError
from cogcli.render import Renderer
from cogcli.exit_codes import EXIT_OK, EXIT_USAGE


def _fail(message: str) -> int:
    sys.stderr.write(f"cog: {message}\n")
    return EXIT_USAGE


def list_command(root: Path, as_json: bool) -> int:
    from cogcli.memory import default_store_path, default_store

    if not default_store_path(root).exists():
        threads = []
    else:
        try:
            with default_store(root) as store:
                threads = store.list_threads()
        except ConfigError as exc:
            return _fail(exc.message)
    if as_json:
        sys.stdout.write(json.dumps([t.model_dump(mode="json") for t in threads], indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    if not threads:
        sys.stderr.write(f"cog: no threads yet in {root} (cog edit starts one)\n")
        return EXIT_OK
    for t in threads:
        sys.stdout.write(f"{t.id}  {t.updated_at[:19].replace('T', ' ')}  {t.status:<9}  {t.title}\n")
    return EXIT_OK


def show_command(root: Path, thread_id: str, renderer: Renderer) -> int:
    from cogcli.memory import default_store_path, default_store

    if not default_store_path(root).exists():
        return _fail(f"no thread {thread_id!r}: {root} has no stored threads yet")
    try:
        with default_store(root) as store:
            events = store.thread_events(thread_id)
    except ConfigError as exc:
        return _fail(exc.message)
    for event in events:
        renderer.handle(event)
    renderer.close()
    return EXIT_OK
