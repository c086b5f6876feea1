"""What a batch leaves in its output folder, and reading it back (also while the batch runs).

    DIR/results.jsonl        one line per finished task (appended and flushed as it ends; the last
                             line of an id is its result: a re-run appends a new one)
    DIR/patches/<id>.diff    the task's change against its base commit (``git apply`` it)
    DIR/events/<id>.jsonl    the task's wire events (``cog render`` draws them)
    DIR/work/<id>/           the task's own checkout

A task's ``status``: ``passed`` (the run finished and its last test run, if any, passed: exit 0),
``failed`` (it finished but the task failed: failing tests, the step limit, refused calls),
``error`` (it could not run or broke off: clone, setup, configuration, the model, a killed worker),
``aborted`` (stopped by Ctrl-C). A resume runs the tasks with no result and the aborted ones;
``--rerun failed`` also those that failed or erred.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cogcli.contract.errors import ConfigError
from cogcli.shown.visible import visible

Status = Literal["passed", "failed", "error", "aborted"]
#: what ``--rerun failed`` runs again (besides tasks with no result and aborted ones)
RERUN_FAILED: frozenset[str] = frozenset({"failed", "error"})

RESULTS = "results.jsonl"
PATCHES = "patches"
EVENTS = "events"
WORK = "work"


class TaskResult(BaseModel):
    """One line of ``results.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    status: Status
    #: what ``cog edit`` would have exited with (0 passed, 1 failed, 2 configuration, 130 aborted)
    exit_code: int
    #: the run's own status (completed, max_steps, error, aborted, denied), None when no run started
    run_status: str | None = None
    model: str | None = None
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int | None = None
    #: None: cog does not know the model's price
    cost_usd: float | None = None
    duration_s: float = 0.0
    files_changed: list[dict[str, Any]] = Field(default_factory=list)
    tests: dict[str, int] | None = None
    error: str | None = None
    #: the commit the task started from (the patch applies to it)
    base: str | None = None
    thread_id: str | None = None
    #: the host (or Ray node) that ran it
    host: str | None = None
    #: which attempt this is for the id (1 on the first run)
    attempt: int = 1
    finished_at: str | None = None
    #: the final answer parsed against --output-schema (None without one, or when it never matched)
    output: Any = None
    #: warnings cog gave while the task ran (redacted; escape them before showing them)
    notes: list[str] = Field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def line(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))


class FolderRefused(ConfigError):
    """A folder of the output folder is a link or not a folder: nothing is written through it."""


class Layout:
    """The paths of an output folder. Everything under it is made and opened without following
    links (:func:`workspace_tools.host.files.open_dir`): a link planted at ``DIR/patches``,
    ``DIR/events`` or ``DIR/work`` is refused, so no patch, event or checkout lands in (or removes)
    a folder outside ``DIR``. ``DIR`` itself is the person's and is taken as it is."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.results = out / RESULTS
        self.patches = out / PATCHES
        self.events = out / EVENTS
        self.work = out / WORK

    def make(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        for folder in (self.patches, self.events, self.work):
            os.close(self.open_folder(folder))

    def open_folder(self, folder: Path) -> int:
        """A descriptor of ``folder`` (one of DIR's), made if missing, never through a link."""
        from workspace_tools.host.files import LinkRefused, open_dir

        try:
            return open_dir(folder, self.out, create=True, mode=0o755)
        except LinkRefused as exc:
            raise FolderRefused(
                f"{visible(str(folder))} is a link (to {visible(str(exc.target))}): cog batch writes only into folders "
                "of the output folder itself; remove the link (or give another --out)") from None
        except NotADirectoryError:
            raise FolderRefused(f"{visible(str(folder))} is not a folder: remove it (or give another --out)") from None

    def patch(self, task_id: str) -> Path:
        return self.patches / f"{task_id}.diff"

    def events_of(self, task_id: str) -> Path:
        return self.events / f"{task_id}.jsonl"

    def checkout(self, task_id: str) -> Path:
        return self.work / task_id

    def open_events(self, task_id: str) -> IO[bytes]:
        """The task's events file, new (a re-run replaces it; a link there is removed, not followed)."""
        fd = self.open_folder(self.events)
        try:
            name = f"{task_id}.jsonl"
            _unlink_at(fd, name)
            handle = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
        finally:
            os.close(fd)
        return os.fdopen(handle, "wb")

    def write_patch(self, task_id: str, data: bytes) -> None:
        write_file(self.patch(task_id), data, self)

    def remove_patch(self, task_id: str) -> None:
        fd = self.open_folder(self.patches)
        try:
            _unlink_at(fd, f"{task_id}.diff")
        finally:
            os.close(fd)

    def clear_checkout(self, task_id: str) -> Path:
        """Remove the task's old checkout (a re-run starts afresh) inside ``DIR/work`` opened without
        following links, and return where the new one goes."""
        from cogcli.batch.checkout import remove_tree_at

        fd = self.open_folder(self.work)
        try:
            remove_tree_at(fd, task_id)
        finally:
            os.close(fd)
        return self.checkout(task_id)


def _unlink_at(dir_fd: int, name: str) -> None:
    """Remove the entry ``name`` of the folder ``dir_fd`` if it is not a folder (a link is removed, never followed)."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except (FileNotFoundError, IsADirectoryError):
        pass


def read_results(path: Path, on_problem: Any = None) -> dict[str, TaskResult]:
    """The last result of each id in ``results.jsonl`` (none if it does not exist). A line that is
    not a result (cut by a crash mid-write) is skipped and reported to ``on_problem(number, why)``."""
    found: dict[str, TaskResult] = {}
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return found
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                result = TaskResult.model_validate_json(line)
            except ValidationError as exc:
                if on_problem is not None:
                    on_problem(number, exc.errors(include_url=False)[0]["msg"])
                continue
            found[result.id] = result
    return found


def to_run(ids: Iterable[str], done: dict[str, TaskResult], *, rerun_failed: bool) -> list[str]:
    """The ids a (re-)run runs: those with no result, aborted ones, and with ``rerun_failed`` the
    failed and erred ones; passed tasks never run again (start a new DIR for that)."""
    wanted = []
    for task_id in ids:
        last = done.get(task_id)
        if last is None or last.status == "aborted" or (rerun_failed and last.status in RERUN_FAILED):
            wanted.append(task_id)
    return wanted


class ResultsWriter:
    """Appends results to ``results.jsonl``, each line flushed and synced as it is written (a crash
    of the batch loses no finished task). One writer per batch: the process that collects results."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        self._file: IO[str] = os.fdopen(fd, "a", encoding="utf-8")

    def write(self, result: TaskResult) -> None:
        self._file.write(result.line() + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_file(path: Path, data: bytes, layout: Layout | None = None) -> None:
    """Write ``data`` to ``path`` whole (a temporary file renamed over it: a reader never sees half).
    With ``layout``, ``path``'s folder is one of the output folder's, opened without following links."""
    if layout is None:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return
    fd = layout.open_folder(path.parent)
    try:
        tmp = f".{path.name}.tmp"
        _unlink_at(fd, tmp)
        handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, path.name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
