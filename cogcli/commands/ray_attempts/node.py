"""One attempt of ``cog edit --attempts N --ray`` on its Ray node (see the package): the bundle
cloned into a temporary folder, the attempt run there as a local attempt runs in its worktree
(:func:`cogcli.worktrees.attempts.run_one`), its row, patch and events handed back; the folder
removed. Imported by the Ray worker (by reference from the driver's task)."""

from __future__ import annotations

import logging
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogcli.settings.options import SettingFlags
from cogcli.worktrees.pick import AttemptRow

log = logging.getLogger("cogcli")


@dataclass(frozen=True)
class NodeAttempt:
    """What one Ray task is given (besides the bundle and the credentials)."""

    attempt: int
    name: str
    branch: str
    #: the commit the attempt starts from (in the bundle)
    base: str
    #: the workspace's folder inside the repository ("." : its top)
    inside: str
    instruction: str
    flags: SettingFlags
    #: "auto" (every call runs) or "refuse" (those needing approval are refused)
    approval: str
    #: the JSON Schema object the answer must match (read here: the node has not the file)
    output_schema: dict[str, Any] | None = None
    images: tuple[Any, ...] = ()


def attempt_on_node(job: NodeAttempt, data: bytes, secrets: dict[str, str]) -> dict[str, Any]:
    """The body of one Ray task: clone, run the attempt, hand back its row, patch and events."""
    from cogcli.batch.checkout import remove_tree
    from cogcli.batch.cluster import secrets_set

    with secrets_set(secrets), tempfile.TemporaryDirectory(prefix="cog-attempt-") as scratch:
        checkout = Path(scratch) / "repo"
        try:
            return _attempt_in(job, data, Path(scratch), checkout)
        finally:
            remove_tree(checkout)


def _attempt_in(job: NodeAttempt, data: bytes, scratch: Path, checkout: Path) -> dict[str, Any]:
    import anyio

    from cogcli.batch.checkout import clone
    from cogcli.contract.errors import CogError
    from cogcli.render.jsonl import event_bytes
    from cogcli.worktrees.ship import patch_between, write_bundle

    row = AttemptRow(attempt=job.attempt, name=job.name, branch=job.branch, path=str(checkout))
    events: list[bytes] = []
    patch = b""
    try:
        clone(str(write_bundle(data, scratch)), checkout, local=False, ref=job.base)
        anyio.run(_run, job, row, checkout, lambda _, event: events.append(event_bytes(event)))
        if row.commit is not None:
            patch = patch_between(checkout, job.base, row.commit)
    except CogError as exc:
        row.error = row.error or exc.message
    except Exception as exc:  # never a traceback: the row says what broke
        log.debug("attempt %d failed", job.attempt, exc_info=True)
        row.error = row.error or f"the attempt failed: {type(exc).__name__}: {exc}"
    return {"row": row.model_dump(mode="json"), "patch": patch, "events": events, "host": socket.gethostname()}


async def _run(job: NodeAttempt, row: AttemptRow, checkout: Path, on_event: Callable[[int, Any], None]) -> None:
    import anyio

    from cogcli.batch.runner import keep_waking
    from cogcli.commands.approve import Refuser
    from cogcli.worktrees.attempts import run_one

    approve = Refuser() if job.approval == "refuse" else None
    async with anyio.create_task_group() as tg:
        tg.start_soon(keep_waking)  # so Ray's cancel (an exception in this thread) is delivered
        try:
            await run_one(row, checkout, checkout / job.inside, job.instruction, job.flags, job.base, on_event,
                          approve, None, job.output_schema, job.images)
        finally:
            tg.cancel_scope.cancel()
