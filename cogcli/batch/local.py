"""Tasks on this machine: ``--workers N`` at once, each in a process of its own.

The standard library does the scheduling: a :class:`~concurrent.futures.ThreadPoolExecutor` of N
threads, each starting one :mod:`multiprocessing` process per task (the ``forkserver`` context,
with cog imported once in the server, so a task's process starts in milliseconds) and reading its
result from a :func:`multiprocessing.Pipe`. A process per task rather than a pool of reused ones:
nothing a run changes in its process (the tests' environment, the repository decisions of
:mod:`workspace_tools.host.files`) reaches the next task, and a process that is killed fails its own
task only — a :class:`~concurrent.futures.ProcessPoolExecutor` breaks whole when one of its workers
dies, losing every task running beside it.

Ctrl-C (or SIGTERM) stops the batch: no task starts any more, each running one gets SIGINT and
ends with status ``aborted`` (its events and patch kept); a second Ctrl-C kills them.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from cogcli.batch.output_folder import Layout, TaskResult
from cogcli.batch.runner import BatchOptions, child_main, unfinished
from cogcli.batch.tasks import Task

#: how long the stopped tasks get to end (after their SIGINT) before they are killed
STOP_GRACE = 60.0


def default_workers() -> int:
    """Half the machine's cores (a task's tests use cores too), at least one."""
    return max(1, (os.cpu_count() or 2) // 2)


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["cogcli.batch.runner", "cogcli.session", "cogcli.loop.runtime", "workspace_tools"])
    return ctx


class LocalExecutor:
    """Runs tasks in processes on this machine; see the module."""

    def __init__(self, options: BatchOptions, layout: Layout, workers: int) -> None:
        self.options = options
        self.layout = layout
        self.workers = max(1, workers)
        self._ctx = _context()
        self._lock = threading.Lock()
        self._running: dict[str, Any] = {}
        self._stopping = False
        self._killer: threading.Timer | None = None

    def run(
        self,
        tasks: Sequence[tuple[Task, int]],
        on_result: Callable[[TaskResult], None],
        on_start: Callable[[Task], None] | None = None,
    ) -> bool:
        """Run ``tasks`` (each with its attempt number); ``on_result`` gets each result as its
        task ends, in the calling thread. Returns False when the batch was stopped (Ctrl-C):
        the tasks that never started have no result."""
        interrupted = False
        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="cog-batch")
        futures: set[Future[TaskResult | None]] = {pool.submit(self._one, task, attempt, on_start) for task, attempt in tasks}
        try:
            while futures:
                try:
                    done, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
                except KeyboardInterrupt:
                    if interrupted:  # a second Ctrl-C: no more waiting
                        self._signal_all(signal.SIGKILL)
                        continue
                    interrupted = True
                    self.stop()
                    continue
                for future in done:
                    result = future.result()
                    if result is not None:
                        on_result(result)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if self._killer is not None:
                self._killer.cancel()
        return not interrupted

    def stop(self) -> None:
        """No task starts any more; the running ones are asked to stop (SIGINT)."""
        with self._lock:
            self._stopping = True
        self._signal_all(signal.SIGINT)
        self._killer = threading.Timer(STOP_GRACE, self._signal_all, args=(signal.SIGKILL,))
        self._killer.daemon = True
        self._killer.start()

    def _signal_all(self, sig: int) -> None:
        with self._lock:
            processes = list(self._running.values())
        for process in processes:
            if process.pid is not None and process.exitcode is None:
                try:
                    os.kill(process.pid, sig)
                except ProcessLookupError:
                    pass

    def _one(self, task: Task, attempt: int, on_start: Callable[[Task], None] | None) -> TaskResult | None:
        receive, send = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(
            target=child_main, args=(task, self.options, str(self.layout.out), attempt, send), name=f"cog-batch {task.id}"
        )
        with self._lock:
            if self._stopping:
                return None
            process.start()
            self._running[task.id] = process
        send.close()  # the child holds the only writing end: EOF when it is gone
        if on_start is not None:
            on_start(task)
        raw: Any = None
        try:
            raw = receive.recv()
        except (EOFError, OSError):
            pass
        finally:
            receive.close()
            process.join()
            with self._lock:
                self._running.pop(task.id, None)
        if raw is not None:
            return TaskResult.model_validate(raw)
        code = process.exitcode
        if self._stopping:  # killed by the batch itself (a second Ctrl-C): stopped, not failed
            return unfinished(task, self.options, attempt, "aborted",
                              "stopped: its process was killed (a second Ctrl-C, or it did not stop in time)", host=socket.gethostname())
        how = f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited with {code}"
        return unfinished(task, self.options, attempt, "error",
                          f"the task's worker process {how} before it reported a result; run the batch again with --rerun failed",
                          host=socket.gethostname())
