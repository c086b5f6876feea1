"""Running the workspace's tests under bubblewrap, a sandbox that holds for root as for anyone.

Inside: a user namespace with no capabilities (root included; no nested user namespaces), its own
PIDs (a fresh ``/proc``; everything in it dies with the run, daemons too, also when cog is
killed), its own network with only loopback (``localhost`` resolves; nothing outside answers, and
it fails at once), the root file system read-only, ``/run``, ``/var/run``, ``/tmp``, ``/var/tmp``,
``/dev/shm`` and the home directory replaced by empty private ones (``$HOME`` is a writable
throwaway), no unix socket file of the host reachable (sockets found in the workspace and the
usual places are covered), the workspace writable except ``.git/`` (read-only) and ``.cog/`` (cog's own
state: shown as an empty read-only folder).

``COG_SANDBOX_WRITABLE`` (paths separated by ``:``; ``--sandbox-writable PATH`` sets it) names
more paths the person lets tests write. It is the person's setting, never the workspace's.

What the sandbox shows of the host, and the one guard of every bind: :mod:`workspace_tools.sandbox.view`.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cogcli.contract.errors import ConfigError, ErrorCode, ToolCallError
from workspace_tools.host.programs import host_program, trusted_python
from workspace_tools.sandbox.view import (
    HIDDEN_DIRS,
    WRITABLE_ENV,
    _covered,
    _empty_file,
    _env_bind_args,
    _is_within,
    _link_note,
    _ro_bind_args,
    _shown_credentials,
    home_dir,
    workspace_link,
)

if TYPE_CHECKING:
    from workspace_tools.sandbox.shared_net import SharedNetwork

log = logging.getLogger("cogcli")

SandboxMode = Literal["auto", "on", "off"]
SANDBOX_MODES: tuple[str, ...] = ("auto", "on", "off")

INSTALL_HINT = "apt install bubblewrap"
#: host folders searched for unix socket files to cover (the hidden ones need no search)
SOCKET_SEARCH = ("/var", "/srv", "/opt", "/mnt", "/media", "/home", "/etc")
#: workspace folders the sandbox may not write: ``.git`` it reads, ``.cog`` (cog's own state) shows empty
READ_ONLY_IN_WORKSPACE = (".git", ".cog")
#: at most this many directory entries are searched for sockets in the workspace per run
SOCKET_SCAN_LIMIT = 200_000

USERNS_HELP = (
    "the kernel refuses user namespaces to this user. Allow them: sysctl -w kernel.unprivileged_userns_clone=1 "
    "(Debian), sysctl -w user.max_user_namespaces=15000, or on Ubuntu 23.10+ "
    "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for bwrap); "
    "in a container, run it with --security-opt seccomp=unconfined or allow unshare"
)


def _read_sysctl(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def userns_blocker() -> str:
    """The kernel setting that blocks unprivileged user namespaces here ("" when none is known to)."""
    if _read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0" and os.geteuid() != 0:
        return "kernel.unprivileged_userns_clone = 0"
    if _read_sysctl("/proc/sys/user/max_user_namespaces") == "0":
        return "user.max_user_namespaces = 0"
    if _read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" and os.geteuid() != 0:
        return "kernel.apparmor_restrict_unprivileged_userns = 1 (AppArmor)"
    return ""


@functools.cache
def _supports(flag: str) -> bool:
    found = host_program("bwrap")  # never one a test planted in a workspace folder on PATH
    if found is None:
        return False
    try:
        done = subprocess.run([found, "--help"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return flag.encode() in done.stdout + done.stderr


@functools.cache
def _probe() -> tuple[str | None, str]:
    """(the ``bwrap`` binary, "") when it can create the sandbox here, else (None, why not)."""
    found = host_program("bwrap")  # never one a test planted in a workspace folder on PATH
    if found is None:
        return None, "bubblewrap (bwrap) is not installed"
    probe = [found, *_namespaces(), *_base_mounts(), "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap is installed but cannot run here ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        blocker = userns_blocker()
        lowered = said.lower()
        if blocker or "namespace" in lowered or "uid map" in lowered or "operation not permitted" in lowered:
            why = f"{blocker}: " if blocker else ""
            return None, f"bwrap is installed but cannot create a sandbox here ({said}); {why}{USERNS_HELP}"
        return None, f"bwrap is installed but cannot create a sandbox here ({said})"
    return found, ""


def bwrap_executable() -> str | None:
    """The ``bwrap`` binary if it is installed and can create a sandbox here (checked once)."""
    return _probe()[0]


def unusable_reason() -> str:
    """Why the sandbox cannot be used here ("" when it can)."""
    return _probe()[1] or ("" if bwrap_executable() else "bubblewrap (bwrap) is not usable here")


def check_sandbox(mode: SandboxMode) -> None:
    """Before a run: ``on`` without a usable bwrap is a :class:`ConfigError` (the CLI exits 2)."""
    if mode == "on" and bwrap_executable() is None:
        raise ConfigError(
            f"--sandbox on: {unusable_reason()}. The sandbox needs bubblewrap ({INSTALL_HINT} on "
            "Debian/Ubuntu, dnf install bubblewrap on Fedora) and user namespaces; "
            "or run with --sandbox auto or --sandbox off"
        )


_fallback_noticed = False


def _notice_fallback() -> None:
    """``auto`` without bwrap: say so once per process (a warning: the CLI prints it on stderr)."""
    global _fallback_noticed
    if _fallback_noticed:
        return
    _fallback_noticed = True
    log.warning(
        "tests run WITHOUT a sandbox: %s. To run them with no network and only the workspace "
        "writable: %s (and allow user namespaces). --sandbox off silences this notice",
        unusable_reason(),
        INSTALL_HINT,
    )


#: run first inside the sandbox, with CAP_NET_ADMIN, CAP_SYS_ADMIN and CAP_SETPCAP only: make a network
#: namespace of its own with loopback up and one more IPv4 and IPv6 address on it (glibc's AI_ADDRCONFIG ignores 127.0.0.1, so getaddrinfo("localhost", AF_INET,
#: AI_ADDRCONFIG) fails on a loopback-only network), then drop every capability for good (bounding
#: set, ambient, inheritable, permitted) and exec the command. Never execs with a capability left.
NET_SETUP = r"""
import ctypes, os, subprocess, sys
ip, argv = sys.argv[1], sys.argv[2:]
libc = ctypes.CDLL(None, use_errno=True)
if ip and libc.unshare(0x40000000) == 0:  # a network namespace of our own (bwrap's is owned by its outer user namespace)
    for args in (["link", "set", "lo", "up"], ["addr", "add", "127.0.0.2/32", "dev", "lo"],
                 ["-6", "addr", "add", "fd00:c06::2/128", "dev", "lo", "nodad"]):
        subprocess.run([ip, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={})
libc.prctl(47, 4, 0, 0, 0)
for cap in [c for c in range(64) if c != 8] + [8]:
    libc.prctl(24, cap, 0, 0, 0)
class H(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class D(ctypes.Structure):
    _fields_ = [("e", ctypes.c_uint32), ("p", ctypes.c_uint32), ("i", ctypes.c_uint32)]
if libc.capset(ctypes.byref(H(0x20080522, 0)), (D * 2)()) != 0 or libc.prctl(23, 8, 0, 0, 0) > 0:
    sys.stderr.write("cog sandbox: could not drop capabilities; not running the tests\n")
    os._exit(126)
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write(f"cog sandbox: cannot start {argv[0]!r}: {exc.strerror}; {EXEC_HINT}\n")
    os._exit(127)
"""
#: what the sandbox says after a program that could not start (its first words are what readers match)
NOT_STARTED = "cog sandbox: cannot start "
EXEC_HINT = ("the program or a folder on its way is not shown inside the sandbox (only the workspace, the system's "
             "folders and what cog binds are)")


def _net_setup() -> list[str]:
    """The command prefix that runs :data:`NET_SETUP` before the tests (:func:`trusted_python`,
    isolated), or [] when there is none (then no capability is ever added)."""
    python = trusted_python()
    if not python:
        return []
    return [python, "-I", "-S", "-c", f"EXEC_HINT = {EXEC_HINT!r}\n{NET_SETUP}", host_program("ip") or ""]


def _namespaces() -> list[str]:
    args = ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    if _supports("--disable-userns"):
        args.append("--disable-userns")  # no nested namespace in which to gain capabilities again
    return args


def _base_mounts() -> list[str]:
    mounts = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for hidden in HIDDEN_DIRS:
        path = Path(hidden)
        if path.is_dir() and not path.is_symlink():
            mounts += ["--tmpfs", hidden]
    return mounts


def writable_paths() -> list[Path]:
    """The person's extra writable paths from ``COG_SANDBOX_WRITABLE`` (those that exist)."""
    found = []
    for raw in os.environ.get(WRITABLE_ENV, "").split(os.pathsep):
        if raw.strip():
            path = Path(raw.strip()).expanduser()
            if path.exists():
                found.append(path.resolve())
            else:
                log.warning("%s: %s does not exist; not made writable", WRITABLE_ENV, path)
    return found


def _iter_sockets(top: Path, limit: int) -> Iterator[Path]:
    """Unix socket files under ``top`` (not following links), searching at most ``limit`` entries."""
    stack = [str(top)]
    seen = 0
    while stack and seen < limit:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
                            if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                                yield Path(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue
    if stack:
        log.warning("searched %d entries under %s for unix sockets and stopped; sockets further in stay reachable", seen, top)


@functools.cache
def _host_sockets() -> tuple[Path, ...]:
    """Socket files in the usual host places that the hidden folders do not already cover."""
    found: list[Path] = []
    for top in SOCKET_SEARCH:
        path = Path(top)
        if path.is_dir() and not path.is_symlink():
            found += _iter_sockets(path, 100_000)
    return tuple(found)


def sandbox_prefix(
    mode: SandboxMode,
    workspace: Path,
    readable: Sequence[Path] = (),
    *,
    writable: Sequence[Path] | None = None,
    notes: list[str] | None = None,
    network: bool = False,
    environments: Sequence[Path] = (),
    shared: SharedNetwork | None = None,
) -> list[str]:
    """The argv prefix that runs a command in the sandbox, or ``[]`` for none.

    ``auto`` uses bwrap when it works here; ``on`` requires it (a :class:`ToolCallError` saying how
    to get it otherwise); ``off`` never uses it. ``readable`` are paths the command needs to read
    (an interpreter, a plugin, a build cache) that the private ``/tmp`` or the empty home would
    otherwise hide; they stay read-only, each one as :func:`bindable` allows. ``writable`` are more
    paths tests may write (default: the person's ``COG_SANDBOX_WRITABLE``). ``notes`` gets one line
    for each ``readable`` link out of the workspace that the tests will not see through (for the
    run's result). ``network`` (the person's choice, e.g. ``cog batch --setup-network`` for a setup
    that installs packages): the host's network, everything else as without. ``environments``:
    Python environments the host confirmed (:func:`workspace_tools.pyconfirm.confirmed_env`), shown
    read-only where they are even in a hidden place such as ``~/.cache`` (each folder alone; see
    :func:`workspace_tools.sandbox.view.env_bind_refusal`). ``shared``: the session's one loopback
    network (:mod:`workspace_tools.sandbox.shared_net`), entered instead of a network of its own
    once the session runs a background command (not with ``network``).
    """
    if mode == "off":
        return []
    bwrap = bwrap_executable()
    if bwrap is None:
        if mode == "on":
            raise ToolCallError(
                f"the test sandbox is required but {unusable_reason()}: install it ({INSTALL_HINT}) "
                "and allow user namespaces, or run with sandbox 'auto' or 'off'",
                code=ErrorCode.TOOL_ERROR,
            )
        _notice_fallback()
        return []
    workspace = Path(workspace).resolve()
    enter = shared.enter_args() if shared is not None and not network else []
    own_net = not network and not enter
    namespaces = [a for a in _namespaces() if a not in ("--cap-drop", "ALL") and not (not own_net and a == "--unshare-net")]
    if enter:  # the shared network's user namespace maps this user to its root: be this user again inside
        namespaces += ["--uid", str(os.getuid()), "--gid", str(os.getgid())]
    setup = _net_setup() if own_net else []
    caps = ["--cap-drop", "ALL"]
    if setup:  # all dropped by NET_SETUP before the tests start
        caps += ["--cap-add", "CAP_NET_ADMIN", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
    args = [*enter, bwrap, *namespaces, *caps, *_base_mounts()]
    hidden = [Path("/tmp"), *(Path(h) for h in HIDDEN_DIRS if Path(h).is_dir() and not Path(h).is_symlink())]
    home = home_dir()
    if home is not None:
        args += ["--tmpfs", str(home)]  # an empty, writable, throwaway home; a workspace in it is bound back below
        hidden.append(home)
    bound: list[Path] = []
    links_out: list[tuple[Path, Path]] = []
    own = [Path(p).resolve() for p in (sys.prefix, sys.base_prefix, *setup[:1])]
    wanted = [Path(p) for p in (*readable, *_interpreter_homes(workspace), *own)]
    # links in the workspace last: one leading into a folder bound anyway (a toolchain's) is shown by that
    for path in sorted(wanted, key=lambda p: p.is_absolute() and workspace_link(p, workspace) is not None):
        args += _ro_bind_args(path, workspace, hidden, bound, links_out)
    for env in environments:
        args += _env_bind_args(env, workspace, hidden, bound)
    if network:
        args += _resolver_binds(hidden)
    if workspace != Path("/"):
        args += ["--bind", str(workspace), str(workspace)]
    extra_writable = list(writable_paths() if writable is None else writable)
    for path in extra_writable:
        args += ["--bind", str(path), str(path)]
    shown = [*bound, *extra_writable]
    for link, wanted_target in links_out:
        if notes is not None and not _covered(wanted_target, shown):
            try:
                target = link.resolve()  # the note says where the link itself leads
            except (OSError, RuntimeError):
                target = wanted_target
            note = _link_note(link, target, workspace)
            if note not in notes:  # one note a link
                notes.append(note)
    from workspace_tools.host import files as hostfiles

    for name in READ_ONLY_IN_WORKSPACE:
        inside = workspace / name
        try:  # .cog made now (else a test could create it and plant a thread store), neither through a link
            os.close(hostfiles.open_dir(inside, workspace, create=name == ".cog"))
        except hostfiles.LinkRefused as exc:  # binding it would bind what it points to
            raise ToolCallError(
                f"{inside} is a symbolic link (to {exc.target}); the tests were not run, as the sandbox keeps {name}/ "
                "read-only and a link there leads outside the workspace. Remove the link and run again",
                code=ErrorCode.TOOL_ERROR,
            ) from None
        except OSError:
            pass
        if inside.exists() and name == ".cog":  # cog's own state: neither read nor written there (DESIGN.md)
            args += ["--tmpfs", str(inside), "--remount-ro", str(inside)]
        elif inside.exists():
            args += ["--ro-bind", str(inside), str(inside)]
    linked = _linked_git_dir(workspace)
    if linked is not None and _is_within(linked, workspace):
        args += ["--ro-bind", str(linked), str(linked)]  # a .git file pointing into the workspace
    visible = [workspace, *extra_writable]
    sockets = [
        s for s in (*_host_sockets(), *_iter_sockets(workspace, SOCKET_SCAN_LIMIT))
        if not _covered(s, hidden) or _covered(s, visible)
    ]
    for sock in sockets:
        args += ["--ro-bind", "/dev/null", str(sock)]  # a socket file outside the sandbox: unreachable
    secrets = _shown_credentials(bound, hidden, [workspace, *extra_writable])
    empty = _empty_file() if secrets else "/dev/null"
    for secret in secrets:
        args += ["--ro-bind", empty, str(secret)]  # a credential file the sandbox would show: empty
    if home is not None:
        args += ["--setenv", "HOME", str(home), "--setenv", "XDG_CACHE_HOME", str(home / ".cache")]
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(workspace), "--", *setup]
    return args


def _resolver_binds(hidden: Sequence[Path]) -> list[str]:
    """With the host's network: the resolver configuration ``/etc/resolv.conf`` leads to when it
    is a link into a hidden folder (systemd-resolved's ``/run/systemd/resolve``), bound read-only."""
    try:
        real = Path("/etc/resolv.conf").resolve(strict=True)
    except (OSError, RuntimeError):
        return []
    return ["--ro-bind", str(real), str(real)] if _covered(real, hidden) and real.is_file() else []


def _linked_git_dir(workspace: Path) -> Path | None:
    """Where the workspace's ``.git`` file (``gitdir: …``, a worktree or submodule) points, if it
    is one the repository decision accepted (:func:`workspace_tools.host.files.repository`)."""
    from workspace_tools.host.files import repository

    found = repository(workspace)
    if found is None or found.work_tree != workspace or found.git_dir == workspace / ".git":
        return None
    return found.git_dir


def _interpreter_homes(workspace: Path) -> list[Path]:
    """The base installation of the workspace's Python, which may live in a hidden folder
    (``~/.pyenv``): as the interpreter resolved on the host reports it, never read from a workspace
    file (``pyvenv.cfg`` is the workspace's to write), and never the home, /tmp or a folder above them."""
    from workspace_tools.sandbox.python import interpreter_homes

    return interpreter_homes(workspace)
