"""The connection's streams for ``cog acp``: stdin, and the real stdout kept for JSON-RPC alone
(file descriptor 1 then points at stderr, so nothing else can write into the stream)."""

from __future__ import annotations

import asyncio
import os
import sys


async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The connection's streams: stdin, and the real stdout — after which file descriptor 1 is
    stderr, so nothing else in the process (or a child it starts) can write into the stream.
    Pipes and sockets (what an editor gives) are read and written by the event loop; a regular
    file (``cog acp < requests > replies``) through a thread and plain writes."""
    loop = asyncio.get_running_loop()
    sys.stdout.flush()
    wire = os.dup(1)  # not inherited by children (Python's default)
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # not a pipe
        _feed_from_thread(loop, reader, sys.stdin.fileno())
    protocol = asyncio.streams.FlowControlMixin()
    try:
        transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(wire, "wb", buffering=0, closefd=False))
    except ValueError:  # not a pipe
        transport = _FileTransport(wire)
    os.dup2(2, 1)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)  # type: ignore[arg-type]


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    import threading

    def feed() -> None:
        try:
            while chunk := os.read(fd, 65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=feed, name="cog-acp-stdin", daemon=True).start()


class _FileTransport(asyncio.WriteTransport):
    """Writes to a file descriptor that is no pipe, at once (a regular file does not block)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(bytes(data))
        while view:
            view = view[os.write(self.fd, view):]

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True
