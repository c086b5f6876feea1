"""Running one hook command: on the host, in a process group of its own, the event's JSON on stdin.

The command line is the configured one, run by ``/bin/sh -c``; nothing from the workspace or the
model is ever put on it — what the event is about reaches the hook on stdin only. The hook gets the
person's environment less the variables named like credentials (the rule the tests' environment
follows, :func:`workspace_tools.sandbox.environment.is_credential_name`), plus the ones its ``pass_env`` names,
plus ``COG_PROJECT_DIR`` and ``CLAUDE_PROJECT_DIR`` (the workspace root, which Claude Code hook
scripts read). Its stdout and stderr are read up to :data:`MAX_OUTPUT` bytes each. When it passes
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


def hook_environment(root: Path, pass_env: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The person's environment for a hook: all of it but credential-named variables (unless
    ``pass_env`` names them), and the project folder under cog's and Claude Code's names."""
    from workspace_tools.sandbox.environment import is_credential_name

    environ = os.environ if environ is None else environ
    passed = set(pass_env)
    env = {k: v for k, v in environ.items() if k in passed or not is_credential_name(k)}
    env["COG_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = str(root)
    return env


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
