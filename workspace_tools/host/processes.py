"""Running a command as a process group: output drained as it comes, bounded in memory, and the
whole tree killed on timeout or abort.

The child starts in a new session (its own process group), so ``os.killpg`` reaches every
process it forked. However the run ends — finished, cancelled by a timeout or an abort — what the
group left behind is killed before :func:`run_process_group` returns (the cleanup is shielded
from the cancellation that triggered it).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream

# anyio is imported by the functions that start and read processes: listing run_tests (cog tools)
# needs none of it

log = logging.getLogger("cogcli")

#: how long a group gets between SIGTERM and SIGKILL
TERM_GRACE = 2.0
#: after the main process exits, how long its pipes may stay open (a grandchild that escaped the group)
DRAIN_TIMEOUT = 5.0

Sink = Callable[[bytes], None]


class OutputTail:
    """Keeps the last ``limit`` bytes of a stream and counts what it dropped."""

    def __init__(self, limit: int = 64 * 1024) -> None:
        self.limit = limit
        self.dropped = 0
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data
        excess = len(self._buf) - self.limit
        if excess > 0:
            del self._buf[:excess]
            self.dropped += excess

    def text(self) -> str:
        """The tail as text, with a first line saying how much came before it when anything was dropped."""
        body = bytes(self._buf).decode("utf-8", "replace")
        if self.dropped:
            return f"…[{self.dropped} earlier bytes dropped]\n{body}"
        return body


class LineSplitter:
    """Cuts a byte stream into lines; a line longer than ``max_line`` is cut there (the rest of it
    is dropped), so a stream with no newline never grows memory."""

    def __init__(self, max_line: int = 8192) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._skipping = False  # inside the dropped rest of an over-long line

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            self._take(data[start:end])
            if not self._skipping:
                lines.append(bytes(self._buf))
            self._buf.clear()
            self._skipping = False
            start = end + 1
        self._take(data[start:])
        if len(self._buf) >= self.max_line and not self._skipping:
            lines.append(bytes(self._buf[: self.max_line]))
            self._buf.clear()
            self._skipping = True
        return lines

    def _take(self, piece: bytes) -> None:
        if not self._skipping:
            self._buf += piece[: max(0, self.max_line - len(self._buf))]

    def flush(self) -> list[bytes]:
        """The last line when the stream did not end with a newline."""
        line = bytes(self._buf)
        self._buf.clear()
        return [line] if line and not self._skipping else []


def kill_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to a process group; a group that is already gone is not an error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _pump_stream(stream: ByteReceiveStream, sink: Sink) -> None:
    async for chunk in stream:
        sink(chunk)


async def _pump_fd(fd: int, sink: Sink) -> None:
    import anyio

    os.set_blocking(fd, False)
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            return
        sink(chunk)


async def run_process_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    on_output: Sink,
    extra_pipe: tuple[int, int, Sink] | None = None,
    term_grace: float = TERM_GRACE,
    on_stderr: Sink | None = None,
) -> int:
    """Run ``argv`` in a new process group and return its exit code (negative: killed by that signal).

    stdout and stderr (merged) go to ``on_output`` chunk by chunk; with ``on_stderr``, stderr goes
    there instead, read apart. ``extra_pipe`` is
    ``(read_fd, write_fd, sink)``: ``write_fd`` is passed to the child (its number stays the same)
    and ``read_fd`` is drained into ``sink``; both are closed here. Sinks run on the event loop's
    thread, in the order the bytes arrived. Cancelling the caller kills the whole group
    (SIGTERM, then SIGKILL after ``term_grace`` seconds) before the cancellation goes on.
    """
    import anyio

    pass_fds = (extra_pipe[1],) if extra_pipe else ()
    read_fd = extra_pipe[0] if extra_pipe else None
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if on_stderr is None else subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        if extra_pipe:
            os.close(extra_pipe[0])
            os.close(extra_pipe[1])
        raise
    pgid = process.pid
    if extra_pipe:
        os.close(extra_pipe[1])  # only the child holds the write end now: EOF when it is gone
    try:
        async with anyio.create_task_group() as tg:
            drained = anyio.Event()

            async def drain() -> None:
                async with anyio.create_task_group() as readers:
                    assert process.stdout is not None
                    readers.start_soon(_pump_stream, process.stdout, on_output)
                    if on_stderr is not None:
                        assert process.stderr is not None
                        readers.start_soon(_pump_stream, process.stderr, on_stderr)
                    if read_fd is not None:
                        readers.start_soon(_pump_fd, read_fd, extra_pipe[2])  # type: ignore[index]
                drained.set()

            tg.start_soon(drain)
            returncode = await process.wait()
            # what the tests left running in the group would hold the pipes open: end it
            kill_group(pgid, signal.SIGKILL)
            with anyio.move_on_after(DRAIN_TIMEOUT):
                await drained.wait()
            if not drained.is_set():
                log.warning("output of %s still open %.0f s after it exited; stopped reading", argv[0], DRAIN_TIMEOUT)
            tg.cancel_scope.cancel()
        return returncode
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                kill_group(pgid, signal.SIGTERM)
                with anyio.move_on_after(term_grace):
                    await process.wait()
            kill_group(pgid, signal.SIGKILL)
            with anyio.move_on_after(term_grace + 5):
                await process.wait()
            await process.aclose()
            if read_fd is not None:
                try:
                    os.close(read_fd)
                except OSError:
                    pass
