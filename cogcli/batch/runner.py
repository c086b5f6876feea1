"""One task, from its checkout to its result: the run exactly as ``cog edit`` makes it (the same
settings, ``--model``/``--max-steps``/``--timeout`` over the workspace's, the library
:class:`~cogcli.session.Session`, the JSON lines renderer for its events), non-interactive.

Batch runs ask nobody: every call of the run's own tools runs (writes and test runs stay inside the
task's checkout, the tests in their sandbox); the workspace's MCP servers start only if the person
approved them before (``cog trust``), as ``cog edit`` off a terminal.

Where it runs: in a worker process of the local executor (:mod:`cogcli.batch.local`) or in a Ray
task (:mod:`cogcli.batch.cluster`); both call :func:`run_task`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from cogcli.batch.output_folder import Layout, TaskResult
from cogcli.batch.tasks import Task
from cogcli.settings.options import SettingFlags

log = logging.getLogger("cogcli")

#: the longest a setup command may run when neither --timeout nor the workspace says
SETUP_TIMEOUT = 1800.0
#: how much of a failed setup's output its result keeps
SETUP_TAIL = 2000


@dataclass(frozen=True)
class BatchOptions:
    """What the batch command line sets for every task (a setting not given: the task's workspace,
    the environment and the person's config decide)."""

    #: the settings given as flags (:mod:`cogcli.settings.options`); a task's ``model`` and ``test_command`` over them
    flags: SettingFlags = field(default_factory=SettingFlags)
    #: variables tasks may pass to their setup and tests (``--pass-env``: the person's; see
    #: :func:`cogcli.batch.tasks.task_env`)
    pass_env: tuple[str, ...] = ()
    #: the setup command may reach the network (``--setup-network``: the person's); the tests never do
    setup_network: bool = False
    #: the JSON Schema (the object, read once by the command) every task's answer must match (its
    #: budgets, --max-tokens and --max-cost, are settings: in ``flags``)
    output_schema: dict[str, Any] | None = None
    #: the folder relative task paths are read from (the task file's)
    base: Path = field(default_factory=Path.cwd)


@dataclass
class Outcome:
    """What a task run hands back: its result, and (when asked to keep them in memory) its patch
    and events."""

    result: TaskResult
    patch: bytes | None = None
    events: bytes | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def unfinished(task: Task, options: BatchOptions, attempt: int, status: str, error: str, *, host: str | None = None) -> TaskResult:
    """The result of a task that ended without its run's own (stopped, or its worker died)."""
    return TaskResult(id=task.id, status=status, exit_code=130 if status == "aborted" else 1, attempt=attempt, host=host,
                      model=task.model or options.flags.model or None, finished_at=_now(), error=error)


def status_of(exit_code: int, run_status: str | None) -> str:
    """A task's status from what ``cog edit`` would exit with and the run's own status."""
    if run_status == "aborted":
        return "aborted"
    if exit_code == 0:
        return "passed"
    if run_status in (None, "error"):
        return "error"
    return "failed"


def run_task(
    task: Task,
    options: BatchOptions,
    checkout: Path,
    events: IO[bytes],
    *,
    attempt: int = 1,
    patch_path: Path | None = None,
    watch_signals: bool = False,
) -> Outcome:
    """Run ``task`` in a fresh clone at ``checkout``, its wire events written to ``events`` as they
    come. The patch is written to ``patch_path`` (else returned in the outcome). ``watch_signals``:
    SIGINT and SIGTERM abort the run (its status ``aborted``), as in ``cog edit``. Never raises for
    what the task does: every failure is the result's ``error``."""
    with _notes_kept() as notes:
        outcome = _run_task(task, options, checkout, events, attempt=attempt, patch_path=patch_path, watch_signals=watch_signals)
    outcome.result.notes = notes[:MAX_NOTES]
    return outcome


#: at most this many warnings of a task's run are kept in its result
MAX_NOTES = 20


class _Notes(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        from cogcli.secrets.redactor import redact

        text, _ = redact(record.getMessage())
        if text not in self.into:
            self.into.append(text)


@contextlib.contextmanager
def _notes_kept() -> Iterator[list[str]]:
    """The warnings cog logs while a task runs (no sandbox here, a settings key ignored …), for
    its result: a worker has no terminal of its own to say them on."""
    notes: list[str] = []
    handler = _Notes(notes)
    log.addHandler(handler)
    propagate, log.propagate = log.propagate, False
    try:
        yield notes
    finally:
        log.removeHandler(handler)
        log.propagate = propagate


def _run_task(
    task: Task,
    options: BatchOptions,
    checkout: Path,
    events: IO[bytes],
    *,
    attempt: int,
    patch_path: Path | None,
    watch_signals: bool,
) -> Outcome:
    started = time.monotonic()
    result = TaskResult(id=task.id, status="error", exit_code=1, attempt=attempt, host=socket.gethostname(),
                        model=task.model or options.flags.model or None)
    patch: bytes | None = None
    base: str | None = None
    if patch_path is not None:  # an earlier attempt's: it would not match this result
        Layout(patch_path.parent.parent).remove_patch(task.id)
    try:
        from cogcli.batch.checkout import CheckoutError, clone, make_patch
        from cogcli.contract.errors import CogError, ConfigError

        try:
            base = clone(task.source(options.base), checkout, local=not task.is_url, ref=task.ref)
            result.base = base
            _run_in_checkout(task, options, checkout, events, result, watch_signals)
        except CogError as exc:
            result.error = exc.message
            result.exit_code = 2 if isinstance(exc, ConfigError) else 1  # as cog edit exits
        except Exception as exc:  # never a traceback: the task's result says what broke
            log.debug("task %s failed", task.id, exc_info=True)
            result.error = f"the task failed: {type(exc).__name__}: {exc}"
        if result.tests and (result.tests.get("errors") or result.tests.get("failed")):
            cause = _tests_cause(events)  # why, first: no project environment, an interpreter that could not start
            if cause and cause not in (result.error or ""):
                result.error = cause + (f"\n{result.error}" if result.error else "")
        if base is not None:
            try:
                patch = make_patch(checkout, base, [f["path"] for f in result.files_changed])
            except CheckoutError as exc:
                result.error = result.error or exc.message
    except KeyboardInterrupt:  # Ctrl-C before the run watched it (the clone, the setup), or Ray's cancel
        try:
            ran = events.tell() > 0
        except (OSError, ValueError):
            ran = False
        result.status, result.exit_code, result.run_status = "aborted", 130, "aborted"
        result.error = result.error or ("interrupted while the agent ran" if ran else "interrupted before the run started")
    finally:
        result.duration_s = round(time.monotonic() - started, 3)
        result.finished_at = _now()
    if result.status != "aborted":
        result.status = status_of(result.exit_code, result.run_status)  # type: ignore[assignment]
    if patch is not None and patch_path is not None:  # DIR/patches, never through a link
        Layout(patch_path.parent.parent).write_patch(task.id, patch)
        patch = None
    return Outcome(result=result, patch=patch)


def _run_in_checkout(task: Task, options: BatchOptions, checkout: Path, events: IO[bytes], result: TaskResult, watch_signals: bool) -> None:
    import anyio

    from cogcli.settings.load import load_settings
    from cogcli.render.jsonl import JsonlWriter
    from cogcli.batch.tasks import task_env
    from cogcli.session import Session, exit_status, make_tools

    passed, refused = task_env(task, options.pass_env)
    for why in refused:
        log.warning("%s", why)
    own = {"model": task.model, "test_command": task.test_command, "pass_env": passed}
    settings = load_settings(checkout, options.flags.replace(**{k: v for k, v in own.items() if v}),
                             output_schema=options.output_schema)
    result.model = settings.model
    if task.setup:
        _setup(task, settings, checkout, network=options.setup_network)
    session = Session.open(settings, cwd=checkout, interactive=False, make_tools=make_tools, on_note=lambda note: log.info("%s", note))
    writer = JsonlWriter(events, live=True)
    try:
        run = anyio.run(_run, session, task.instruction, writer.handle, watch_signals)
    finally:
        session.close()
        writer.close()
    usage = run.usage
    result.run_status = str(run.status)
    result.exit_code = exit_status(run)
    result.steps = run.steps
    result.input_tokens, result.output_tokens = usage.input_tokens, usage.output_tokens
    result.cached_input_tokens = usage.cached_input_tokens
    result.cost_usd = getattr(usage, "cost_usd", None)
    result.files_changed = [f.model_dump(mode="json", exclude_none=True) for f in run.files_changed]
    result.tests = dict(run.tests) if run.tests is not None else None
    result.thread_id = run.thread_id
    result.error = run.error or run.tests_error
    result.output = run.structured_output
    if str(run.status) == "aborted":
        result.exit_code = 130


async def _run(session: Any, instruction: str, on_event: Callable[[Any], None], watch_signals: bool) -> Any:
    import anyio

    from cogcli.contract.context import AbortSignal

    abort = AbortSignal()
    async with anyio.create_task_group() as tg:
        if watch_signals:
            tg.start_soon(_abort_on_signals, abort)
        else:
            tg.start_soon(keep_waking)
        try:
            async with session:
                return await session.run(instruction, approve=None, on_event=on_event, signal=abort)
        finally:
            tg.cancel_scope.cancel()


async def keep_waking() -> None:
    """Wake the event loop a few times a second. A Ray task is cancelled by an exception Ray
    raises in its thread, which Python delivers only when it runs code: not while the loop
    sleeps waiting for a test run."""
    import anyio

    while True:
        await anyio.sleep(TICK)


#: how often :func:`keep_waking` wakes the loop (seconds)
TICK = 0.25


async def _abort_on_signals(abort: Any) -> None:
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            abort.abort(f"stopped by {signal.Signals(signum).name}")


def _setup(task: Task, settings: Any, checkout: Path, *, network: bool = False) -> None:
    """Run the task's setup command in the checkout, in the test sandbox the settings say (only
    the checkout writable; no network unless the person gave ``--setup-network``), with the tests'
    environment and the task's allowed ``env``."""
    import anyio

    from cogcli.contract.errors import CogError
    from cogcli.secrets.redactor import redact
    from cogcli.session import test_env
    from workspace_tools.sandbox.bwrap import sandbox_prefix
    from workspace_tools.host.processes import OutputTail, run_process_group

    passed = test_env(settings)  # task.env is in its pass_env
    prefix = sandbox_prefix(settings.sandbox, checkout, network=network, writable=passed.writable)
    env = passed.child_env({}, bool(prefix), network=network)  # offline tools unless --setup-network
    tail = OutputTail(SETUP_TAIL * 4)
    limit = settings.timeout or SETUP_TIMEOUT

    async def go() -> int | None:
        with anyio.move_on_after(limit):
            return await run_process_group([*prefix, "/bin/sh", "-c", task.setup or ""], cwd=checkout, env=env, on_output=tail.feed)
        return None

    code = anyio.run(go)
    if code == 0:
        return
    said, _ = redact(tail.text().strip())
    why = f"took longer than {limit:.0f} s" if code is None else f"exited with {code}"
    hint = ("" if network or not prefix else
            " (the setup ran without network: if it installs dependencies, run the batch with --setup-network)")
    raise CogError(f"the setup command {why}{hint}{':' + chr(10) + last_lines(said, SETUP_TAIL) if said else ''}", code="SETUP_FAILED")


def last_lines(text: str, limit: int) -> str:
    """The end of ``text`` in at most ``limit`` characters, starting at a line's start (never mid-word)."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    newline = cut.find("\n")
    return "…\n" + (cut[newline + 1:] if 0 <= newline < len(cut) - 1 else cut.split(" ", 1)[-1])


def _tests_cause(events: IO[bytes]) -> str | None:
    """Why the run's last test run failed, when its result said more than counts (no project
    environment found, the interpreter could not start): the first note of its details."""
    import json

    try:
        if hasattr(events, "getvalue"):  # a Ray task's events, in memory
            lines = events.getvalue().splitlines()
        else:
            events.flush()
            with open(events.fileno(), "rb", closefd=False) as raw:
                raw.seek(0)
                lines = raw.read().splitlines()
    except (OSError, ValueError, AttributeError):
        return None
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "tool-result" and event.get("toolName") == "run_tests":
            notes = ((event.get("details") or {}).get("notes") or []) if isinstance(event.get("details"), dict) else []
            return str(notes[0]) if notes else None
    return None


def open_events(layout: Layout, task_id: str) -> IO[bytes]:
    """The task's events file, new (a re-run replaces it), never opened through a link."""
    return layout.open_events(task_id)


def child_main(task: Task, options: BatchOptions, out: str, attempt: int, conn: Any) -> None:
    """A worker process's whole life (local executor): run one task, send its result back over
    ``conn``, exit. Its own process group: Ctrl-C reaches it once, through the batch."""
    os.setpgrp()
    layout = Layout(Path(out))
    with open_events(layout, task.id) as events:
        outcome = run_task(task, options, layout.clear_checkout(task.id), events, attempt=attempt,
                           patch_path=layout.patch(task.id), watch_signals=True)
    conn.send(outcome.result.model_dump(mode="json"))
    conn.close()
