"""Pieces several commands share: the workspace tools with the command's limits, and Ctrl-C
handling that stops a run cleanly."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogcli.config import Settings
from cogcli.tools import Tool

if TYPE_CHECKING:
    from cogcli.context import AbortSignal

log = logging.getLogger("cogcli")


def make_tools(settings: Settings, *, journal: Any = None, only: Collection[str] | None = None) -> list[Tool[Any]]:
    """``workspace_tools(root)`` with the test command, the test sandbox and the per-call timeout
    applied; ``journal`` (a :class:`workspace_tools.journal.Journal`) records file changes for
    ``cog undo`` before they are made; ``only``: just the tools of those names. Raises
    :class:`ConfigError` for ``sandbox = "on"`` where bubblewrap is not usable."""
    from workspace_tools import workspace_tools
    from workspace_tools.bwrap import check_sandbox

    check_sandbox(settings.sandbox)
    export_test_settings(settings)
    options: dict[str, Any] = {"sandbox": settings.sandbox, "journal": journal, "only": only}
    options["secret_globs"], options["allow_secrets"] = settings.secret_globs, settings.allow_secrets
    if settings.test_command:
        options["test_command"] = settings.test_command
    if settings.timeout:
        options["test_timeout"] = settings.timeout
    if settings.runner:
        options["test_runner"] = settings.runner
    tools = workspace_tools(settings.root, **options)
    if settings.timeout:
        tools = [dataclasses.replace(t, timeout=settings.timeout) for t in tools]
    return list(tools)


def export_test_settings(settings: Settings) -> None:
    """Hand what the tests may get to run_tests through cog's environment (its children read it):
    ``--pass-env`` names, the workspace's ``pass_env`` wishes, ``--sandbox-writable`` paths."""
    from workspace_tools.bwrap import WRITABLE_ENV
    from workspace_tools.testenv import PASS_ENV, WORKSPACE_PASS_ENV

    def add(name: str, values: tuple[str, ...], sep: str) -> None:
        if values:
            current = [v for v in os.environ.get(name, "").split(sep) if v]
            os.environ[name] = sep.join([*current, *(v for v in values if v not in current)])

    add(PASS_ENV, settings.pass_env, ",")
    add(WORKSPACE_PASS_ENV, settings.workspace_pass_env, ",")
    add(WRITABLE_ENV, tuple(str(Path(p).expanduser().resolve()) for p in settings.sandbox_writable), os.pathsep)


@asynccontextmanager
async def abort_on_signals(abort: AbortSignal) -> AsyncIterator[list[int]]:
    """While open, SIGINT and SIGTERM fire ``abort`` (the run then ends with its one ``finish``,
    status aborted). The yielded list holds the signals received. A second signal quits at once."""
    import anyio  # here, not at the top: making the tools (cog tools) needs no event loop

    received: list[int] = []

    async def watch(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            task_status.started()
            async for signum in signals:
                if received:
                    log.warning("interrupted again: quitting now")
                    sys.stdout.flush()
                    os._exit(128 + received[0])
                received.append(signum)
                log.warning("%s: stopping the run (again to quit at once)", signal.Signals(signum).name)
                abort.abort(f"interrupted by {signal.Signals(signum).name}")

    async with anyio.create_task_group() as tg:
        await tg.start(watch)
        try:
            yield received
        finally:
            tg.cancel_scope.cancel()


def leave_lingering_tools(code: int, *, grace: float = 0.2) -> int:
    """Return ``code``, or exit the process with it at once when a tool is still running.

    A synchronous tool runs in a worker thread; when its call is aborted (Ctrl-C, SIGTERM, its
    timeout) the run goes on without it, but Python cannot stop a thread, and at exit the
    interpreter would wait for one that spins forever — after the run's ``finish`` the process
    would not end. So once everything is written (the last event, the thread), a worker thread
    still alive after ``grace`` seconds is left behind: output flushed, the process ends now."""
    deadline = time.monotonic() + grace
    lingering = []
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            lingering.append(thread.name)
    if not lingering:
        return code
    log.warning("a tool is still running in the background (it ignored the abort); exiting without waiting for it")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)
