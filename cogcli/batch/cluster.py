"""Tasks on Ray: ``--ray`` (a local Ray started for the batch) or ``--ray ADDRESS`` (an existing
cluster: ``auto``, ``ray://head:10001``, ``head:6379``).

Each task is a Ray task asking for ``--cpus-per-task`` CPUs, retried by Ray when its worker or node
dies (``max_retries``); the batch collects results as they finish (a ``ray.wait`` loop) and writes
them as the local executor does. A task's checkout is made on the node that runs it: under
``DIR/work/<id>`` on a local Ray, in a temporary folder on a cluster's node (removed once its patch
is taken). Its events and patch come back with its result.

The workers get the variables a run needs: the providers' base URLs, ``COG_*`` settings and the
tasks' ``env`` names through the job's runtime environment (``env_vars``); the credential-named
ones among them (the model's API key) as an object in Ray's object store handed to each task,
which sets them in its worker's environment for the run and removes them after. Not in
``env_vars``: Ray's runtime-environment agent writes those, values included, to its log
(``/tmp/ray/session_*/logs/runtime_env_agent.log`` on every node). Neither reaches the results.
Ray is imported here only, by ``--ray``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from cogcli.batch.output_folder import Layout, TaskResult, write_file
from cogcli.batch.runner import BatchOptions, run_task, unfinished
from cogcli.batch.tasks import Task

log = logging.getLogger("cogcli")

#: how often Ray runs a task again when its worker process or node died
MAX_RETRIES = 2
#: variables the workers get when set here (besides each task's ``env`` names)
PASSED_PREFIXES = ("OPENAI_", "ANTHROPIC_", "OLLAMA_", "COG_")
PASSED_NAMES = frozenset({"XDG_CONFIG_HOME", "CI"})


def runtime_env_vars(tasks: Sequence[Task], environ: dict[str, str] | None = None, allowed: Sequence[str] = ()) -> dict[str, str]:
    """The variables the job's workers get: the model providers' (keys, base URLs), cog's own
    settings, and the names tasks pass in ``env`` that the person allowed (``allowed``, see
    :func:`cogcli.batch.tasks.task_env`), as set in this process."""
    from cogcli.batch.tasks import task_env

    environ = dict(os.environ if environ is None else environ)
    wanted = {name for task in tasks for name in task_env(task, allowed)[0]} | PASSED_NAMES
    return {k: v for k, v in environ.items() if k.startswith(PASSED_PREFIXES) or k in wanted}


def split_secrets(variables: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(plain variables, credential-named ones: API keys, tokens, passwords)."""
    from workspace_tools.sandbox.environment import is_credential_name

    secret = {k: v for k, v in variables.items() if is_credential_name(k)}
    return {k: v for k, v in variables.items() if k not in secret}, secret


@contextlib.contextmanager
def secrets_set(secrets: dict[str, str]) -> Iterator[None]:
    """``secrets`` in this worker's environment for the task, and as they were after it (a Ray
    worker runs task after task: the keys do not stay for the next one). A run adds nothing to the
    environment (its tests' settings are passed to them explicitly), so only these are put back."""
    before = {name: os.environ.get(name) for name in secrets}
    os.environ.update(secrets)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def ray_task(task_json: str, options: BatchOptions, local_work: str | None, attempt: int, secrets: dict[str, str]) -> dict[str, Any]:
    """The body of one Ray task: run it, hand back its result, patch and events."""
    with secrets_set(secrets):
        return _ray_task(Task.model_validate_json(task_json), options, local_work, attempt)


def _ray_task(task: Task, options: BatchOptions, local_work: str | None, attempt: int) -> dict[str, Any]:
    events = io.BytesIO()
    if local_work is not None:  # DIR/work, opened without following links (see Layout)
        checkout = Layout(Path(local_work).parent).clear_checkout(task.id)
        outcome = run_task(task, options, checkout, events, attempt=attempt)
    else:
        from cogcli.batch.checkout import remove_tree

        with tempfile.TemporaryDirectory(prefix="cog-batch-") as scratch:
            checkout = Path(scratch) / task.id
            try:
                outcome = run_task(task, options, checkout, events, attempt=attempt)
            finally:
                remove_tree(checkout)
    return {"result": outcome.result.model_dump(mode="json"), "patch": outcome.patch, "events": events.getvalue()}


def reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast when nothing answers at a ``host:port`` / ``ray://host:port`` address (Ray itself
    keeps trying to connect for minutes). ``auto`` and addresses without a port are Ray's to find."""
    from urllib.parse import urlsplit

    from cogcli.contract.errors import ConfigError

    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        return
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(f"nothing answers at the Ray address {address} ({exc.strerror or exc}): start the cluster "
                          "with Ray's own `ray start` on its head node, or check --ray ADDRESS") from None


def start_ray(address: str | None, cpus: int, env_vars: dict[str, str]) -> Any:
    """Ray, started here with ``cpus`` CPUs (``address`` None) or connected to the cluster at
    ``address``, its workers getting ``env_vars`` (never credentials: see the module). Raises
    :class:`~cogcli.contract.errors.ConfigError` without Ray, or when it cannot start or be reached."""
    from cogcli.contract.errors import ConfigError

    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'cogcli[ray]' (on every node of the cluster too)") from None
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
        "configure_logging": True,
        "runtime_env": {"env_vars": env_vars},
    }
    if address is None:
        options["num_cpus"] = max(1, cpus)
    else:
        reachable(address)
        options["address"] = address
    term = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(**options)
    except Exception as exc:  # no cluster at that address, a Ray that cannot start here
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise ConfigError(f"cannot start or reach {where}: {type(exc).__name__}: {str(exc).strip()[:500]}") from None
    if term is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, term)  # ray.init put its own there (it ends the process at once): the caller's again
    return ray


def gather(ray: Any, refs: dict[Any, Any], on_ready: Callable[[Any, Any, bool], None]) -> bool:
    """Wait for the Ray tasks ``refs`` (ref → what it runs), handing each to ``on_ready(ref, job,
    stopping)`` as it ends; emptied. Ctrl-C cancels those still running (a KeyboardInterrupt in
    the task: its run ends aborted), a second one kills them. True when interrupted."""
    interrupted = False
    while refs:
        try:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
        except KeyboardInterrupt:
            for ref in refs:
                ray.cancel(ref, force=interrupted)
            interrupted = True
            continue
        for ref in ready:
            on_ready(ref, refs.pop(ref), interrupted)
    return interrupted


class RayExecutor:
    """Runs tasks as Ray tasks; see the module."""

    def __init__(self, options: BatchOptions, layout: Layout, *, address: str | None, workers: int, cpus_per_task: float) -> None:
        self.options = options
        self.layout = layout
        self.address = address
        self.workers = max(1, workers)
        self.cpus_per_task = cpus_per_task
        self._refs: dict[Any, tuple[Task, int]] = {}

    def _init(self, tasks: Sequence[Task]) -> tuple[Any, dict[str, str]]:
        env_vars, secrets = split_secrets(runtime_env_vars(tasks, allowed=self.options.pass_env))
        cpus = max(1, int(self.workers * self.cpus_per_task + 0.999))  # a Ray of our own, as big as --workers tasks
        return start_ray(self.address, cpus, env_vars), secrets

    def run(
        self,
        tasks: Sequence[tuple[Task, int]],
        on_result: Callable[[TaskResult], None],
        on_start: Callable[[Task], None] | None = None,
    ) -> bool:
        ray, secrets = self._init([t for t, _ in tasks])
        try:
            secrets_ref = ray.put(secrets)  # in the object store, not in a log
            remote = ray.remote(num_cpus=self.cpus_per_task, max_retries=MAX_RETRIES, retry_exceptions=False)(ray_task)
            local_work = str(self.layout.work) if self.address is None else None
            for task, attempt in tasks:  # "running" on the progress line: submitted (Ray queues what waits for CPUs)
                ref = remote.remote(task.model_dump_json(), self.options, local_work, attempt, secrets_ref)
                self._refs[ref] = (task, attempt)
                if on_start is not None:
                    on_start(task)
            interrupted = gather(ray, self._refs, lambda ref, job, stopping: on_result(self._collect(ray, ref, *job, stopping=stopping)))
        finally:
            ray.shutdown()
        return not interrupted

    def _collect(self, ray: Any, ref: Any, task: Task, attempt: int, *, stopping: bool) -> TaskResult:
        try:
            got = ray.get(ref)
        except Exception if stopping else ray.exceptions.TaskCancelledError:  # stopped by Ctrl-C (or killed by a second one)
            return unfinished(task, self.options, attempt, "aborted", "stopped before it finished")
        except Exception as exc:  # the task's worker died more often than Ray retries it, or Ray failed
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return unfinished(task, self.options, attempt, "error", f"the Ray task failed: {type(exc).__name__}: {why[:500]}")
        result = TaskResult.model_validate(got["result"])
        write_file(self.layout.events_of(task.id), got["events"] or b"", self.layout)
        if got["patch"] is not None:
            self.layout.write_patch(task.id, got["patch"])
        else:
            self.layout.remove_patch(task.id)  # an earlier attempt's
        return result

