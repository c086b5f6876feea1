"""One loopback network for a session's sandboxed commands, so a background server is reachable.

Each sandboxed command normally gets a network namespace of its own (only its own loopback:
:mod:`workspace_tools.sandbox.bwrap`). A dev server started in the background (``run_command(…,
background=true)``) would then be unreachable from the next command. Once a session starts its
first background command it starts one *holder* instead: a process in a new user and network
namespace (``unshare --user --map-root-user --net``) that brings its loopback up and waits. Every
later sandboxed command of the session enters that network (util-linux's ``nsenter``, by the holder's namespace files) before
bubblewrap makes the rest of its sandbox, which is unchanged: its own PIDs, no capabilities, the
same files. The network still reaches nothing outside: it has only loopback, shared by the
session's commands and nobody else.

The holder is this process's child and is never reaped before :meth:`SharedNetwork.close`, so its
PID cannot be reused by another process while a command may still enter it (a holder that died is
a zombie whose namespaces cannot be entered: the command fails, it never lands elsewhere).
"""

from __future__ import annotations

import logging
import subprocess
import threading
from pathlib import Path

log = logging.getLogger("cogcli")

#: what the holder runs: loopback up (and the two addresses NET_SETUP adds, for AI_ADDRCONFIG), a
#: line saying it is ready, then nothing until it is killed
HOLDER = r"""
import ctypes, fcntl, os, signal, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = os.getuid(), os.getgid()
if libc.unshare(0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET, no exec after: the caps stay
    sys.stderr.write(f"cannot make a user and network namespace: {os.strerror(ctypes.get_errno())}\n")
    sys.exit(1)
for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
    with open(f"/proc/self/{name}", "w") as f:
        f.write(text)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sh", fcntl.ioctl(s, 0x8913, struct.pack("16sh", b"lo", 0)))[1]  # SIOCGIFFLAGS
fcntl.ioctl(s, 0x8914, struct.pack("16sh", b"lo", flags | 1))  # SIOCSIFFLAGS: IFF_UP
try:  # SIOCSIFADDR lo:1 127.0.0.2, for getaddrinfo's AI_ADDRCONFIG (as the sandbox's own network has)
    fcntl.ioctl(s, 0x8916, struct.pack("16sH2s4s8s", b"lo:1", socket.AF_INET, bytes(2), socket.inet_aton("127.0.0.2"), bytes(8)))
except OSError:
    pass
sys.stdout.write("ready\n")
sys.stdout.flush()
os.close(1)
while True:
    signal.pause()
"""
#: how long the holder may take to say it is ready
START_TIMEOUT = 5.0


class SharedNetwork:
    """The session's holder of one loopback network (started on first :meth:`enter_args`)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._failed: str | None = None
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether the holder runs (a background command started it)."""
        return self._process is not None

    @property
    def failure(self) -> str | None:
        """Why the shared network could not be made (then commands keep one network each)."""
        return self._failed

    def enter_args(self) -> list[str]:
        """The argv prefix that enters the shared network (before ``bwrap``), or [] when there is none
        here (no ``unshare``/``nsenter``, user namespaces refused): :attr:`failure` says why."""
        with self._lock:
            if self._process is None and self._failed is None:
                self._start()
            if self._process is None:
                return []
            pid = self._process.pid
            if not _alive(pid):
                self._failed = "the shared network's holder process ended"
                return []
        nsenter = _program("nsenter")
        assert nsenter is not None  # checked in _start
        return [nsenter, f"--user=/proc/{pid}/ns/user", f"--net=/proc/{pid}/ns/net", "--preserve-credentials"]

    def _start(self) -> None:
        if _program("nsenter") is None:
            self._failed = "nsenter (util-linux) is not installed"
            return
        from workspace_tools.host.programs import trusted_python

        python = trusted_python()
        if not python:
            self._failed = "no python outside the workspace to hold it"
            return
        argv = [python, "-I", "-S", "-c", HOLDER]
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       start_new_session=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        except OSError as exc:
            self._failed = f"cannot start the holder: {exc.strerror}"
            return
        ready = _read_line(process, START_TIMEOUT)
        if ready != b"ready\n":
            process.kill()
            err = process.communicate(timeout=5)[1].decode("utf-8", "replace").strip().splitlines()
            self._failed = f"the shared network did not start ({err[-1] if err else 'no answer'})"
            log.warning("%s; background commands keep a network of their own", self._failed)
            return
        self._process = process

    def close(self) -> None:
        """Kill the holder (the network goes when its last process does) and reap it."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> bytes:
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(process.stdout.readline() if process.stdout else b""), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0] if got else b""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (not a zombie), read from /proc so the child is never reaped here."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _program(name: str) -> str | None:
    from workspace_tools.host.programs import host_program

    return host_program(name)
