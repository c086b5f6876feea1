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

from cogcli.errors import ErrorCode, ToolCallError

log = logging.getLogger("cogcli")

SandboxMode = Literal["auto", "on", "off"]


@functools.cache
def bwrap_executable() -> str | None:
    """The ``bwrap`` binary if it is installed and can create a sandbox here (checked once)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    probe = [found, *_mounts(Path("/")), "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("bwrap is installed but cannot run here (%s); tests run without a sandbox", exc)
        return None
    if done.returncode != 0:
        log.info(
            "bwrap is installed but cannot create a sandbox here (%s); tests run without one",
            done.stderr.decode(errors="replace").strip(),
        )
        return None
    return found


def _mounts(workspace: Path) -> list[str]:
    mounts = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if workspace != Path("/"):
        mounts += ["--bind", str(workspace), str(workspace)]
    return [*mounts, "--unshare-net", "--die-with-parent"]


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
                "the test sandbox (bubblewrap) is required but not usable here: install it "
                "(apt-get install bubblewrap) and allow user namespaces, or run with sandbox 'auto' or 'off'",
                code=ErrorCode.TOOL_ERROR,
            )
        return []
    hidden = [p for p in readable if Path("/tmp") in p.parents and p.exists()]
    binds = [arg for p in hidden for arg in ("--ro-bind", str(p), str(p))]
    return [bwrap, *_mounts(workspace), *binds, "--chdir", str(workspace), "--"]
