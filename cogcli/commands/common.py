"""Pieces several commands share: Ctrl-C handling that stops a run cleanly, and leaving a tool
that ignored its abort behind at exit. (The workspace tools are the session's:
:func:`cogcli.session.make_tools`.)"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from cogcli.session.factory import make_tools  # noqa: F401 (where commands and their tests found it)

if TYPE_CHECKING:
    from cogcli.contract.context import AbortSignal

log = logging.getLogger("cogcli")


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
