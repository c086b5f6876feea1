"""``cog batch TASKS.jsonl --out DIR``: check the task file, pick what (re-)runs, run it on this
machine or on Ray, and write each result as its task ends."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from cogcli.batch.report import money
from cogcli.batch.output_folder import Layout, ResultsWriter, TaskResult, read_results, to_run
from cogcli.batch.runner import BatchOptions
from cogcli.batch.tasks import Task, read_tasks
from cogcli.contract.errors import ConfigError
from cogcli.shown.visible import error_lines, say, visible

#: the batch ran everything and every task passed / some did not / it was stopped
EXIT_ALL_PASSED, EXIT_SOME_FAILED, EXIT_STOPPED = 0, 1, 130
#: the output folder's lock file: one batch at a time writes there
LOCK = ".lock"


@dataclass
class BatchRequest:
    """What ``cog batch`` was asked: the tasks file, the results folder and the options."""
    tasks_file: Path
    out: Path
    options: BatchOptions
    workers: int
    ray: bool = False
    ray_address: str | None = None
    cpus_per_task: float = 1.0
    rerun_failed: bool = False


def describe(result: TaskResult) -> str:
    """One line for a finished task."""
    parts = [f"{result.steps} step{'s' if result.steps != 1 else ''}"]
    if result.files_changed:
        parts.append(f"{len(result.files_changed)} file{'s' if len(result.files_changed) != 1 else ''} changed")
    if result.tests:
        t = result.tests
        parts.append(", ".join(f"{t[k]} {k}" for k in ("passed", "failed", "errors") if t.get(k)) or "no tests")
    parts.append(f"{result.tokens:,} tokens")
    if result.cost_usd is not None:
        parts.append(money(result.cost_usd))
    parts.append(f"{result.duration_s:.1f} s")
    line = f"{result.status:<7}  {visible(result.id)}  {' · '.join(parts)}"
    if result.error and result.status != "passed":
        line += "".join(f"\n         {part}" for part in error_lines(result.error))
    return line


class Progress:
    """What a person sees: each finished task's line on stdout and, when stderr is a terminal, one
    progress line kept at its bottom (done / running / not passed, tokens, cost)."""

    def __init__(self, total: int, out: TextIO | None = None, bar: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        bar = bar or sys.stderr
        self.bar = bar if bar.isatty() else None
        self.total = total
        self.done = self.failed = self.running = self.tokens = 0
        self.cost: float | None = None
        self._lock = threading.Lock()
        self._shown = False
        self._notes: set[str] = set()

    def say(self, text: str) -> None:
        with self._lock:
            self._clear()
            self.out.write(text + "\n")
            self.out.flush()
            self._redraw()

    def started(self, task: Task) -> None:
        with self._lock:
            self.running += 1
            self._redraw()

    def finished(self, result: TaskResult) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)
            self.done += 1
            self.failed += result.status != "passed"
            self.tokens += result.tokens
            if result.cost_usd is not None:
                self.cost = (self.cost or 0.0) + result.cost_usd
            self._clear()
            self.out.write(describe(result) + "\n")
            self.out.flush()
            for note in result.notes:  # each once a batch, on stderr as cog's warnings are
                if note not in self._notes:
                    self._notes.add(note)
                    say(note, stream=self.bar or sys.stderr)
            self._redraw()

    def line(self) -> str:
        cost = f" · {money(self.cost)}" if self.cost is not None else ""
        return (f"{self.done}/{self.total} done · {self.running} running · {self.failed} not passed · "
                f"{self.tokens:,} tokens{cost}")

    def _clear(self) -> None:
        if self.bar is not None and self._shown:
            self.bar.write("\r\x1b[K")
            self.bar.flush()
            self._shown = False

    def _redraw(self) -> None:
        if self.bar is not None:
            self._clear()
            self.bar.write(self.line())
            self.bar.flush()
            self._shown = True

    def close(self) -> None:
        with self._lock:
            self._clear()


def _check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {visible(str(out))} is a file; name a folder (made if missing) for the results")
    results = out / "results.jsonl"
    if results.is_symlink():
        raise ConfigError(f"{visible(str(results))} is a link; the results are written only to a file of the output folder")


def run_batch(request: BatchRequest, *, out: TextIO | None = None) -> int:
    """Run the batch; its exit code (0 every task passed, 1 some did not, 130 stopped). Raises
    :class:`ConfigError` for a bad task file or output folder, before any task starts."""
    tasks = read_tasks(request.tasks_file)
    _check_out_dir(request.out)
    layout = Layout(request.out)
    layout.make()
    with _only_batch_in(layout.out):
        return _run(request, tasks, layout, out)


@contextlib.contextmanager
def _only_batch_in(folder: Path) -> Iterator[None]:
    """Hold the output folder's lock for the batch: two batches appending to one results file
    (or cloning into one checkout) would mix their tasks."""
    import fcntl

    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"another cog batch is writing to {visible(str(folder))}: wait for it to end, "
                              "or give this one another --out") from None
        yield
    finally:
        os.close(fd)


def _run(request: BatchRequest, tasks: list[Task], layout: Layout, out: TextIO | None) -> int:
    previous = read_results(layout.results)
    wanted = set(to_run([t.id for t in tasks], previous, rerun_failed=request.rerun_failed))
    todo = [(t, previous[t.id].attempt + 1 if t.id in previous else 1) for t in tasks if t.id in wanted]
    progress = Progress(len(tasks), out)
    if len(todo) < len(tasks):
        progress.say(f"{len(tasks) - len(todo)} of {len(tasks)} tasks already have a result in {visible(str(layout.results))}: skipped"
                     f"{'' if request.rerun_failed else ' (--rerun failed runs the failed ones again)'}")
        progress.done = len(tasks) - len(todo)
        progress.failed = sum(1 for t in tasks if t.id in previous and t.id not in wanted and previous[t.id].status != "passed")
    finished: dict[str, TaskResult] = {t.id: previous[t.id] for t in tasks if t.id in previous and t.id not in wanted}
    completed = True
    started = time.monotonic()
    if todo:
        if request.ray:
            from cogcli.batch.cluster import RayExecutor

            executor: object = RayExecutor(request.options, layout, address=request.ray_address,
                                           workers=request.workers, cpus_per_task=request.cpus_per_task)
        else:
            from cogcli.batch.local import LocalExecutor

            executor = LocalExecutor(request.options, layout, request.workers)
        with ResultsWriter(layout.results) as writer:

            def on_result(result: TaskResult) -> None:
                writer.write(result)
                finished[result.id] = result
                progress.finished(result)

            try:
                completed = executor.run(todo, on_result, progress.started)  # type: ignore[attr-defined]
            finally:
                progress.close()
    passed = sum(1 for r in finished.values() if r.status == "passed")
    left = len(tasks) - len(finished)
    progress.say(f"{passed} of {len(tasks)} tasks passed{f', {left} left for the resume' if left else ''} "
                 f"in {time.monotonic() - started:.1f} s · results in {visible(str(layout.results))}")
    progress.close()
    if not completed or any(r.status == "aborted" for r in finished.values()):
        return EXIT_STOPPED
    return EXIT_ALL_PASSED if passed == len(tasks) else EXIT_SOME_FAILED
