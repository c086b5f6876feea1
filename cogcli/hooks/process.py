"""Running one hook command: on the host, in a process group of its own, the event's JSON on stdin.

The command line is the configured one, run by ``/bin/sh -c``; nothing from the workspace or the
model is ever put on it — what the event is about reaches the hook on stdin only. The hook gets the
person's environment less the variables named like credentials (the rule the tests' environment
follows, :func:`workspace_tools.sandbox.environment.is_credential_name`), plus the ones its ``pass_env`` names,
plus ``COG_PROJECT_DIR`` and ``CLAUDE_PROJECT_DIR`` (the folder it runs in, which Claude Code hook
scripts read: the workspace root for the person's hooks, the approved copy for the workspace's —
:mod:`cogcli.hooks.snapshot`). Nothing of the workspace is on its ``PATH`` (the rule of the programs
cog starts itself, :func:`workspace_tools.host.programs.host_path`, and no folder inside the
workspace), so an activated project ``.venv/bin`` does not stand in for ``python3``; no
``PYTHONPATH`` entry inside the workspace; and for the person's hooks, which run in the workspace
root, ``PYTHONSAFEPATH=1``, so ``python3 -m black`` imports no ``black.py`` the model wrote there. Its stdout and stderr are read up to :data:`MAX_OUTPUT` bytes each. When it passes
its timeout, or the run is cancelled while it runs, its whole process group is killed.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream

from workspace_tools.host.files import resolves_inside

#: the most bytes of a hook's stdout (and of its stderr) cog reads; the rest is read and dropped
MAX_OUTPUT = 1024 * 1024
SHELL = "/bin/sh"


@dataclass(frozen=True)
class Finished:
    """How one hook command ended."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: float
    timed_out: bool = False
    #: it could not be started (the reason)
    failed: str | None = None


def hook_environment(
    root: Path, pass_env: Iterable[str] = (), environ: Mapping[str, str] | None = None, *, folder: Path | None = None,
) -> dict[str, str]:
    """The person's environment for a hook: all of it but credential-named variables (unless
    ``pass_env`` names them), no workspace folder on ``PATH`` or ``PYTHONPATH``, and the folder the
    hook runs in (``folder``, a workspace hook's approved copy; else the workspace ``root``) under
    cog's and Claude Code's names."""
    from workspace_tools.sandbox.environment import is_credential_name

    environ = os.environ if environ is None else environ
    passed = set(pass_env)
    env = {k: v for k, v in environ.items() if k in passed or not is_credential_name(k)}
    env["PATH"] = host_search_path(root, env.get("PATH", os.defpath))
    kept = [e for e in env.pop("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(e) and not resolves_inside(e, root)]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    if folder is None:  # runs in the workspace root: nothing imported from it by -m, -c or stdin
        env["PYTHONSAFEPATH"] = "1"
    env["COG_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = str(folder or root)
    return env


def host_search_path(root: Path, path: str) -> str:
    """``path`` without the folders cog skips for its own programs (relative, in a git work tree
    or a virtualenv, but the person's tool installations) and without any folder in ``root``."""
    from workspace_tools.host.programs import host_path

    return os.pathsep.join(e for e in host_path(path).split(os.pathsep) if e and not resolves_inside(e, root))


async def run_hook_command(command: str, stdin: bytes, *, cwd: Path, env: Mapping[str, str], timeout: float) -> Finished:
    """Run ``command`` with ``stdin``; always returns (a hook that cannot start says why)."""
    started = time.perf_counter()
    try:
        process = await anyio.open_process([SHELL, "-c", command], cwd=cwd, env=dict(env), start_new_session=True)
    except OSError as exc:
        return Finished(None, "", "", _ms(started), failed=f"could not start it: {exc.strerror or exc}")
    out: list[bytes] = []
    err: list[bytes] = []
    timed_out = False
    try:
        with anyio.move_on_after(timeout) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read, process.stdout, out)
                tg.start_soon(_read, process.stderr, err)
                tg.start_soon(_write, process, stdin)
                await process.wait()
        timed_out = scope.cancelled_caught
    finally:
        if process.returncode is None or timed_out:
            _kill_group(process.pid)
            with anyio.move_on_after(2, shield=True):
                await process.wait()
        with anyio.CancelScope(shield=True):
            await process.aclose()
    code = None if timed_out else process.returncode
    return Finished(code, _text(out), _text(err), _ms(started), timed_out=timed_out)


async def _write(process: anyio.abc.Process, data: bytes) -> None:
    stream = process.stdin
    assert stream is not None
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # a hook need not read its input
    finally:
        try:
            await stream.aclose()
        except (anyio.BrokenResourceError, OSError):
            pass


async def _read(stream: ByteReceiveStream | None, into: list[bytes]) -> None:
    if stream is None:
        return
    kept = 0
    try:
        async for chunk in stream:
            if kept < MAX_OUTPUT:
                into.append(chunk[: MAX_OUTPUT - kept])
                kept += len(into[-1])
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


def _kill_group(pid: int) -> None:
    """SIGKILL the hook's process group (its shell and everything it started in it)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", "replace")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
