"""Text files as the tools see them: decoded with their encoding, BOM and line endings noted, so
a write puts back exactly the bytes an edit did not touch. Writes are atomic and keep the mode.

Inside the tools text always has ``\\n`` line endings; a file whose every line ends in ``\\r\\n``
is converted on read and converted back on write (an exact round trip).
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.host import files as hostfiles

log = logging.getLogger("cogcli")

if TYPE_CHECKING:
    from workspace_tools.workspace.paths import Workspace

F = TypeVar("F", bound=Callable[..., Any])

BOM = "\ufeff"
#: bytes looked at to tell text from binary
SNIFF_BYTES = 8192
_TEXT_CONTROLS = {0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1B}


class NotText(Exception):
    """The bytes are not text the tools can edit (NUL bytes, or undecodable)."""


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded file. ``text`` has ``\\n`` line endings and no BOM."""

    text: str
    encoding: str = "utf-8"  # "utf-8" or "latin-1"
    bom: bool = False
    newline: str = "\n"  # "\n" or "\r\n"

    @classmethod
    def decode(cls, data: bytes) -> TextFile:
        encoding = detect_encoding(data)
        text = data.decode(encoding)
        bom = text.startswith(BOM)
        if bom:
            text = text[1:]
        newline = "\n"
        crlf = text.count("\r\n")
        if crlf and crlf == text.count("\n"):
            newline = "\r\n"
            text = text.replace("\r\n", "\n")
        return cls(text, encoding, bom, newline)

    def with_text(self, text: str) -> TextFile:
        return replace(self, text=text)

    def normalize(self, text: str) -> str:
        """Text from the model in this file's terms (``\\n`` endings): ``\\r\\n`` becomes ``\\n``."""
        return text.replace("\r\n", "\n") if self.newline == "\r\n" else text

    def disk_line(self, line: str) -> str:
        """One ``\\n``-ended line as it is on disk (for diffs that ``git apply`` accepts)."""
        if self.newline == "\r\n" and line.endswith("\n"):
            return line[:-1] + "\r\n"
        return line

    def encode(self) -> bytes:
        """The bytes to write; raises :class:`ToolCallError` if the text does not fit the encoding."""
        text = self.text.replace("\n", "\r\n") if self.newline == "\r\n" else self.text
        if self.bom:
            text = BOM + text
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise ToolCallError(
                f"the file is {self.encoding}-encoded and cannot hold {bad!r}; "
                "use characters the file's encoding has (or rewrite the whole file with write_file)",
                code=ErrorCode.INVALID_ARGUMENTS,
            ) from None


def detect_encoding(data: bytes) -> str:
    """``utf-8`` or ``latin-1`` for text; raises :class:`NotText` for binary data."""
    if b"\x00" in data:
        raise NotText("it contains NUL bytes")
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    # latin-1 decodes anything: accept it only when the bytes look like text
    sample = data[: SNIFF_BYTES * 8]
    controls = sum(1 for b in sample if (b < 0x20 and b not in _TEXT_CONTROLS) or 0x7F <= b < 0xA0)
    if controls > len(sample) * 0.05:
        raise NotText("it is neither UTF-8 nor Latin-1 text")
    return "latin-1"


def decode_text(data: bytes, shown: str) -> TextFile:
    try:
        return TextFile.decode(data)
    except NotText as exc:
        raise ToolCallError(f"{shown} is not a text file ({exc})", code=ErrorCode.FILE_NOT_TEXT) from None


def read_existing(path: Path, root: Path) -> bytes | None:
    """The bytes of ``path`` (opened as :func:`open_in_workspace` does), None when there is no such file."""
    try:
        fd = open_in_workspace(path, root)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def open_in_workspace(path: Path, root: Path) -> int:
    """A read-only descriptor of ``path`` (resolved, under the resolved workspace ``root``), opened
    the way writes open their folder: every folder below the root with ``O_NOFOLLOW``, then the
    file with ``O_NOFOLLOW``. A folder or the file swapped for a symlink after the path was checked
    raises :class:`ToolCallError` (PATH_OUTSIDE_WORKSPACE) and nothing outside is read. Reading
    tools use it (``read_file``, ``edit_file``; ``search_text`` can too)."""
    dir_fd = open_dir(path.parent, root)
    try:
        try:
            # O_NONBLOCK: a FIFO put in the workspace does not hang the open (callers refuse non-files)
            return os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ToolCallError(
                    f"{path.relative_to(root).as_posix()} became a symlink after the path was checked; it was not followed",
                    code=ErrorCode.PATH_OUTSIDE_WORKSPACE,
                ) from None
            raise
    finally:
        os.close(dir_fd)


def read_bytes(path: Path, shown: str, *, root: Path | None = None) -> bytes:
    try:
        if root is None or path == root:
            return path.read_bytes()
        fd = open_in_workspace(path, root)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
            raise ToolCallError(f"{shown} is not a regular file (a pipe, socket or device)", code=ErrorCode.FILE_NOT_TEXT)
        with os.fdopen(fd, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise ToolCallError(
            f"{shown} does not exist; list_files shows the files there are", code=ErrorCode.FILE_NOT_FOUND
        ) from None
    except IsADirectoryError:
        raise ToolCallError(
            f"{shown} is a directory, not a file; use list_files to see what is in it",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from None
    except PermissionError:
        raise ToolCallError(f"{shown} cannot be read (permission denied)", code=ErrorCode.TOOL_ERROR) from None


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (not on other characters ``str.splitlines`` breaks at), ends kept."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@functools.cache
def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """Permission bits a new file gets: 0o666 minus the umask."""
    return 0o666 & ~_umask()


_UNCHECKED: Any = object()


def atomic_write(
    path: Path, data: bytes, *, mode: int | None = None, root: Path | None = None, expect: bytes | None = _UNCHECKED
) -> None:
    """Write ``data`` to ``path`` all at once: a temp file in the same directory, fsync, rename.

    ``mode`` is the permission bits to give the file; by default those of the file being
    replaced, or 0o666 minus the umask for a new file; a file without any write permission bit is
    not replaced (``PermissionError``). A failure leaves ``path`` as it was.

    With ``root`` (the resolved workspace root, ``path`` resolved under it), each folder below the
    root is opened without following symlinks and the temp file and the rename go through that
    folder's descriptor: a folder swapped for a symlink after ``path`` was checked is refused
    (:class:`ToolCallError`, PATH_OUTSIDE_WORKSPACE) and nothing is written anywhere.

    With ``expect`` (the bytes the caller read, or None: there was no file), the file is compared
    just before the rename: if it holds anything else, another program changed it since it was
    read, and the write is refused (:class:`ToolCallError`, FILE_CHANGED) rather than overwriting
    that change. cog's own writers also hold :func:`workspace_lock`, so between cog processes
    this never happens; it catches editors and other programs.
    """
    dir_fd = open_dir(path.parent, root)
    try:
        if mode is None:
            try:
                mode = stat.S_IMODE(os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            except FileNotFoundError:
                mode = new_file_mode()
            else:  # a rename would replace it anyway (even as root): its missing write bits say no
                if not mode & 0o222:
                    raise PermissionError(errno.EACCES, f"it is read-only (mode {mode:o}); make it writable first if it should change", str(path))
        tmp = f".{path.name}.{os.urandom(4).hex()}.cogtmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            if expect is not _UNCHECKED and _current(path.name, dir_fd) != expect:
                raise ToolCallError(file_changed(path.name), code=ErrorCode.FILE_CHANGED)
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        _sweep_stale_temps(path.name, dir_fd)
    finally:
        os.close(dir_fd)


def file_changed(shown: str) -> str:
    return f"{shown}: the file changed since it was read (another program wrote it); read it again and redo the change"


def _current(name: str, dir_fd: int) -> bytes | None:
    """The bytes of ``name`` in ``dir_fd`` now (None: no file), without following a symlink."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return b"\0symlink"  # never what a caller read: a symlink was put in its place
        raise
    with os.fdopen(fd, "rb") as f:
        return f.read()


#: a temp file of ours this old was left by a write that was killed (SIGKILL, power loss)
STALE_TEMP_SECONDS = 60.0


def _sweep_stale_temps(name: str, dir_fd: int) -> None:
    """Remove ``.<name>.*.cogtmp`` files that a killed write of this file left behind. Young ones
    are left alone: another process may be writing the file right now."""
    prefix, now = f".{name}.", time.time()
    try:
        with os.scandir(dir_fd) as entries:
            stale = [
                e.name
                for e in entries
                if e.name.startswith(prefix)
                and e.name.endswith(".cogtmp")
                and now - e.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS
            ]
        for stale_name in stale:
            os.unlink(stale_name, dir_fd=dir_fd)
    except OSError:
        log.debug("could not sweep stale temp files of %s", name, exc_info=True)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def open_dir(directory: Path, root: Path | None = None, *, create: bool = False) -> int:
    """A descriptor of ``directory``. Under ``root``, opened as :func:`workspace_tools.host.files.open_dir`
    opens it (every folder below the root with ``O_NOFOLLOW``, ``create`` makes missing ones), so
    the descriptor is the folder the path names and never a symlink's target: a symlink in the way
    raises :class:`ToolCallError` (PATH_OUTSIDE_WORKSPACE), a file in the way ``NotADirectoryError``."""
    if root is None:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        return os.open(directory, _DIR_FLAGS)
    try:
        return hostfiles.open_dir(directory, root, create=create)
    except hostfiles.LinkRefused as exc:
        raise ToolCallError(
            f"{exc.where} became a symlink after the path was checked; it was not followed and nothing was written",
            code=ErrorCode.PATH_OUTSIDE_WORKSPACE,
        ) from None


def write_failed(shown: str, exc: OSError) -> ToolCallError:
    """An OS error while writing, as a tool error the model can read (the file is left as it was)."""
    return ToolCallError(f"could not write {shown}: {exc.strerror or exc}; the file was not changed", code=ErrorCode.TOOL_ERROR)


def os_errors(workspace: Workspace) -> Callable[[F], F]:
    """Decorate a tool's ``execute`` so an unexpected OS error (name too long, disk full, no
    permission) reaches the model as a readable tool error instead of a traceback."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any) -> Any:
            try:
                return fn(*args)
            except OSError as exc:
                named = isinstance(exc.filename, (str, bytes)) and exc.filename  # not a descriptor number
                where = workspace.relative(Path(os.fsdecode(exc.filename))) if named else "a file"
                raise ToolCallError(f"{where}: {exc.strerror or exc}", code=ErrorCode.TOOL_ERROR) from None

        return run  # type: ignore[return-value]

    return wrap


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()

#: how long a writer waits for another process's write in the same workspace
LOCK_WAIT_SECONDS = 60.0


@contextmanager
def path_lock(path: Path, root: Path | None = None) -> Iterator[None]:
    """Serialise changes to one (resolved) path: across the worker threads tools run in, and with
    ``root`` (the resolved workspace root) across processes too — an exclusive ``flock`` on the
    workspace root folder, held from the read to the rename, so two cog processes editing one file
    each see the other's edit and none is lost. (Writes take milliseconds: one lock per workspace
    is simpler than one per file and costs nothing that shows.)"""
    key = str(path)
    with _locks_guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        if root is None:
            yield
            return
        with workspace_lock(root):
            yield


@contextmanager
def workspace_lock(root: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the workspace root folder (released when the process dies)."""
    import fcntl

    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ToolCallError(
                        f"another program has held the workspace's write lock for {LOCK_WAIT_SECONDS:.0f} s; "
                        "nothing was written, try again",
                        code=ErrorCode.FILE_CHANGED,
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)  # releases the lock
