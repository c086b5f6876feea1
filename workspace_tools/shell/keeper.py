"""The keeper: the small process between cog and a background command, so the person can keep one.

Every background command (:mod:`workspace_tools.shell.jobs`) starts as ``python -I -S -c KEEPER LOG
LIMIT ARGV…``: the keeper (cog's own code, run by a Python outside the workspace) starts ARGV (the
sandbox's prefix, then ``bash -c COMMAND``) with its output on a pipe, and copies that output to
its own stdout, which cog drains. Its stdin is cog's *lifeline*: cog never writes to it but the
word ``keep``, so it reads end-of-file when cog closes it or cog's process ends (however: a crash,
SIGKILL). Then:

- not kept: the keeper kills its whole process group (itself, bubblewrap — whose
  ``--die-with-parent`` takes the sandbox with it — or, with no sandbox, the command's processes);
- kept (cog wrote ``keep``): it goes on, writing the command's output to ``LOG`` (0600, in the
  person's state folder) instead, bounded: past ``LIMIT`` bytes the file is cut to its newest half.
  It ignores SIGHUP and SIGPIPE, and a write to cog that fails (cog ended) only stops the copy to cog.
  The newest output from before the keep (:data:`TAIL` bytes) is written to the log first.

The keeper is the sandbox's parent (not a thread of cog that may come and go: a parent-death
signal fires when the *thread* that started a process ends), and a kept command keeps running
when cog exits. ``cog jobs`` lists and kills kept ones (:mod:`workspace_tools.shell.kept`).
"""

from __future__ import annotations

from collections.abc import Sequence

#: the most a kept command's log file holds (its newest bytes, cut to half when passed)
LOG_LIMIT = 4 * 1024 * 1024
#: what the keeper remembers of the output before a keep, written to the log first
TAIL = 64 * 1024

KEEPER = r"""
import os, select, signal, subprocess, sys
log_path, limit, tail_limit, argv = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
r, w = os.pipe()
try:
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=w, stderr=w)
except OSError as exc:
    sys.stdout.write(f"cannot start the command: {exc.strerror}\n")
    sys.exit(127)
os.close(w)
open_fds, to_cog, log, size, tail = [r, 0], True, None, 0, bytearray()

def write_log(data):
    global size
    log.write(data)
    log.flush()
    size += len(data)
    if size > limit:
        log.seek(size - limit // 2)
        keep = log.read()
        log.seek(0)
        log.truncate()
        log.write(b"[... earlier output dropped]\n" + keep)
        log.flush()
        size = log.tell()

while r in open_fds:
    ready = select.select(open_fds, [], [])[0]
    if 0 in ready:
        word = os.read(0, 64)
        if word.startswith(b"keep") and log is None:
            fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            log = os.fdopen(fd, "r+b", buffering=0)
            log.seek(0, 2)
            size = log.tell()
            write_log(bytes(tail))
            tail = None
        elif not word:
            open_fds.remove(0)
            if log is None:
                os.killpg(0, signal.SIGKILL)
    if r in ready:
        chunk = os.read(r, 65536)
        if not chunk:
            open_fds.remove(r)
            continue
        if to_cog:
            try:
                os.write(1, chunk)
            except OSError:
                to_cog = False
        if log is not None:
            write_log(chunk)
        else:
            tail += chunk
            del tail[:-tail_limit]
code = child.wait()
if log is not None:
    write_log(f"[ended: exit code {code}]\n".encode())
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def keeper_argv(python: str, log: str, argv: Sequence[str]) -> list[str]:
    """The argv that starts ``argv`` under the keeper, its log (when kept) at ``log``."""
    return [python, "-I", "-S", "-c", KEEPER, log, str(LOG_LIMIT), str(TAIL), *argv]
