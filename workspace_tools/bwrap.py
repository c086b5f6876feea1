"""Running the workspace's tests under bubblewrap: the root file system read-only, the workspace
and a private ``/tmp`` writable, no network, and the sandbox dies with cog.

The sandbox keeps the caller's process group (no ``--new-session``, no PID namespace), so killing
the group still reaches every process inside, and inherited fds (the report pipe) pass through.
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from cogcli.errors import ConfigError, ErrorCode, ToolCallError

log = logging.getLogger("cogcli")

SandboxMode = Literal["auto", "on", "off"]
SANDBOX_MODES: tuple[str, ...] = ("auto", "on", "off")

INSTALL_HINT = "apt install bubblewrap"


@functools.cache
def _probe() -> tuple[str | None, str]:
    """(the ``bwrap`` binary, "") when it can create a sandbox here, else (None, why not)."""
    found = shutil.which("bwrap")
    if found is None:
        return None, "bubblewrap (bwrap) is not installed"
    probe = [found, *_mounts(Path("/")), "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap is installed but cannot run here ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
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
            "Debian/Ubuntu, dnf install bubblewrap on Fedora) and unprivileged user namespaces; "
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
        "writable: %s (and allow unprivileged user namespaces). --sandbox off silences this notice",
        unusable_reason(),
        INSTALL_HINT,
    )


def _mounts(workspace: Path) -> list[str]:
    mounts = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if workspace != Path("/"):
        mounts += ["--bind", str(workspace), str(workspace)]
    # $HOME is read-only in here: tools that keep caches under ~/.cache get a private one in /tmp
    env = ["--setenv", "XDG_CACHE_HOME", "/tmp/.cache"]
    return [*mounts, *env, "--unshare-net", "--die-with-parent"]


def sandbox_prefix(mode: SandboxMode, workspace: Path, readable: Sequence[Path] = ()) -> list[str]:
    """The argv prefix that runs a command in the sandbox, or ``[]`` for none.

    ``auto`` uses bwrap when it works here; ``on`` requires it (a :class:`ToolCallError` saying how
    to get it otherwise); ``off`` never uses it. ``readable`` are paths the command needs to read
    (an interpreter, a plugin) that the private ``/tmp`` would otherwise hide.
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
    hidden = [p for p in readable if Path("/tmp") in p.parents and p.exists()]
    binds = [arg for p in hidden for arg in ("--ro-bind", str(p), str(p))]
    return [bwrap, *_mounts(workspace), *binds, "--chdir", str(workspace), "--"]
