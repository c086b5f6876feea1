"""What a sandboxed step may not leave behind on the host: setuid and setgid bits, file capabilities.

Inside bwrap's user namespace root stays uid 0 (mapped to the host's 0) and any other user stays
themself: a test owns what it writes and may ``chmod 4755`` it. The sandbox drops every capability,
so it cannot set a file capability (``security.capability``: EPERM, tried here) nor ``chown``, but
the mode bits are the owner's to set, and a ``nosuid`` mount would only stop them working *inside*:
the file on the host would still be setuid root (or setuid to the person), a way up for anyone who
can reach the workspace. So after every step that ran a command or tests — run_command and each
run of run_tests, in or out of the sandbox, also after a timeout or an abort — :func:`strip_privileges`
walks everything the step could write (the workspace but ``.git/`` and ``.cog/``, which the sandbox
shows read-only, environments and ignored folders included, and the extra writable paths) without
following links and, for each regular file,

- removes the setuid and setgid bits (``chmod`` of the file itself, reached through descriptors:
  no link followed, nothing outside changed); a file with more than one name is deleted instead
  (with ``--sandbox off`` a hard link may be a host program's own file: its bits are not ours to change);
- removes a ``security.capability`` attribute from a file changed since the step started;

and names each one in the step's result. The sandbox is gone by then (its processes die with it),
so nothing sets a bit again behind the sweep. While the step runs the file exists with its bits:
docs/security.md says so.

Measured here (2 busy cores): cog's checkout with its ``.venv``, 25,254 entries, 0.07–0.2 s a
sweep; without a virtualenv a few ms.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workspace_tools.host.files import LinkRefused, open_below

log = logging.getLogger("cogcli")

#: entries a sweep looks at, at most (then it says it stopped)
SWEEP_LIMIT = 1_000_000
#: folders of the workspace the sandbox cannot write (read-only binds), not swept
READ_ONLY = frozenset({".git", ".cog"})
CAPABILITY = "security.capability"


@dataclass(frozen=True)
class Removed:
    """A file a step left with privileges, and what cog did about it."""

    path: str
    #: "setuid", "setgid", "setuid, setgid", "file capabilities" (or several)
    what: str
    #: "stripped" (the bits removed, the file kept) or "deleted" (a file with more than one name)
    action: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "removed": self.what, "action": self.action}


def strip_privileges(root: Path, more: Sequence[Path] = (), *, since_ns: int = 0) -> list[Removed]:
    """Remove setuid/setgid bits (and file capabilities of files changed since ``since_ns``, a
    ``time.time_ns()``) from every regular file under ``root`` (``.git``/``.cog`` at its top
    excepted) and under each of ``more``; the files acted on (workspace-relative paths, absolute
    for ``more``)."""
    removed: list[Removed] = []
    budget = [SWEEP_LIMIT]
    for top, shown, skipped in [(Path(root), "", READ_ONLY), *((Path(p), str(p), frozenset()) for p in more)]:
        try:
            fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            _sweep(fd, shown, skipped, since_ns, removed, budget)
        finally:
            os.close(fd)
    if budget[0] <= 0:
        log.warning("the sweep for setuid files stopped after %d entries", SWEEP_LIMIT)
    return removed


def _sweep(top: int, shown: str, skipped: frozenset[str], since_ns: int, removed: list[Removed], budget: list[int]) -> None:
    stack: list[tuple[int, str]] = [(os.dup(top), shown)]
    try:
        while stack:
            fd, rel = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    names = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in entries]
                for name, is_dir, is_file in names:
                    budget[0] -= 1
                    if budget[0] <= 0:
                        return
                    path = f"{rel}/{name}" if rel else name
                    if is_dir:
                        if rel == shown and name in skipped:
                            continue
                        try:
                            stack.append((open_below(fd, name), path))
                        except (OSError, LinkRefused):
                            continue
                    elif is_file:
                        done = _check(fd, name, path, since_ns)
                        if done is not None:
                            removed.append(done)
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)


def _check(dir_fd: int, name: str, path: str, since_ns: int) -> Removed | None:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    bits = info.st_mode & (stat.S_ISUID | stat.S_ISGID)
    recent = info.st_ctime_ns >= since_ns
    if not stat.S_ISREG(info.st_mode) or (not bits and not recent):
        return None
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        now = os.fstat(fd)
        if (now.st_ino, now.st_dev) != (info.st_ino, info.st_dev):
            return None
        proc = f"/proc/self/fd/{fd}"  # the file this descriptor holds, never a link's target
        what = [w for w, bit in (("setuid", stat.S_ISUID), ("setgid", stat.S_ISGID)) if now.st_mode & bit]
        capable = recent and _has_capability(proc)
        if capable:
            what.append("file capabilities")
        if not what:
            return None
        if now.st_nlink > 1:
            os.unlink(name, dir_fd=dir_fd)
            return Removed(path, ", ".join(what), "deleted")
        if capable:
            os.removexattr(proc, CAPABILITY)
        if now.st_mode & (stat.S_ISUID | stat.S_ISGID):
            os.chmod(proc, stat.S_IMODE(now.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
        return Removed(path, ", ".join(what), "stripped")
    except OSError as exc:
        log.warning("could not remove the privileges of %s: %s", path, exc)
        return Removed(path, "setuid/setgid or capabilities", f"NOT removed ({exc.strerror})")
    finally:
        os.close(fd)


def _has_capability(proc: str) -> bool:
    try:
        os.getxattr(proc, CAPABILITY)
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            log.debug("getxattr %s: %s", proc, exc)
        return False
    return True


async def strip_after(root: Path, more: Sequence[Path] = (), *, since_ns: int = 0) -> list[Removed]:
    """:func:`strip_privileges` in a worker thread, shielded: it runs also when the step was
    cancelled (a timeout, an abort)."""
    import anyio
    import anyio.to_thread

    with anyio.CancelScope(shield=True):
        return await anyio.to_thread.run_sync(functools.partial(strip_privileges, root, more, since_ns=since_ns))


def removed_text(removed: Sequence[Removed], *, limit: int = 20) -> str:
    """The line the model reads about what was removed ('' when nothing was)."""
    if not removed:
        return ""
    named = ", ".join(f"{r.path} ({r.what} {r.action})" for r in removed[:limit])
    more = f" and {len(removed) - limit} more" if len(removed) > limit else ""
    return (f"{len(removed)} file{'s' if len(removed) != 1 else ''} left with setuid/setgid bits or file capabilities, "
            f"which no step may leave on the host: {named}{more}")
