"""Pieces several commands share: the workspace tools with the command's limits, and Ctrl-C
handling that stops a run cleanly."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from cogcli.config import Settings
from cogcli.context import AbortSignal
from cogcli.tools import Tool

log = logging.getLogger("cogcli")


def make_tools(settings: Settings) -> list[Tool[Any]]:
    """``workspace_tools(root)`` with the test command, the test sandbox and the per-call timeout
    applied. Raises :class:`ConfigError` for ``sandbox = "on"`` where bubblewrap is not usable."""
    from workspace_tools import workspace_tools
    from workspace_tools.bwrap import check_sandbox

    check_sandbox(settings.sandbox)
    options: dict[str, Any] = {"sandbox": settings.sandbox}
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


@asynccontextmanager
async def abort_on_signals(abort: AbortSignal) -> AsyncIterator[list[int]]:
    """While open, SIGINT and SIGTERM fire ``abort`` (the run then ends with its one ``finish``,
    status aborted). The yielded list holds the signals received. A second signal quits at once."""
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
