"""One checker run the way ``run_tests`` runs a test runner: in the bubblewrap sandbox (no network,
the workspace writable, the toolchain and the project's environment shown read-only), with the
variables the tests get, as a process group killed whole when its time budget runs out.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path

from workspace_tools.diagnostics.sources import Found, Source
from workspace_tools.host.processes import OutputTail, run_process_group
from workspace_tools.runners.run_tests import _sandbox_argv
from workspace_tools.runners.toolchains import toolchain_homes
from workspace_tools.sandbox.bwrap import SandboxMode, sandbox_prefix
from workspace_tools.sandbox.environment import PassedEnv
from workspace_tools.sandbox.leftovers import Removed, strip_after
from workspace_tools.workspace.paths import Workspace

#: output kept of one checker run (its JSON on a big project's backlog can be long)
OUTPUT_BYTES = 16 * 1024 * 1024


@dataclass
class Ran:
    """A checker's run: its exit code, output and duration."""
    exit_code: int | None
    output: str
    duration: float
    sandboxed: bool
    #: the budget ran out and the process group was killed
    timed_out: bool = False
    #: not run: no sandbox here, and the caller runs checkers only in one
    refused: bool = False
    #: files the checker left setuid/setgid or with capabilities, whose privileges were removed
    removed: list[Removed] = field(default_factory=list)


async def run_source(workspace: Workspace, source: Source, found: Found, root: Path, files: list[Path], *,
                     sandbox: SandboxMode, passed: PassedEnv, budget: float, sandbox_only: bool = False) -> Ran:
    """Run ``source`` on ``files`` of the project in ``root`` within ``budget`` seconds.

    A checker may run the project's code (an ESLint config, a mypy plugin, a build script, a program
    from the project's environment), so it runs like the tests: sandboxed, and swept afterwards for
    setuid files. ``sandbox_only`` (after a change, which nobody was asked to run code for): with no
    sandbox here it is not run at all."""
    import anyio

    prefix, extra = await sandboxed_command(workspace, source, found, root, sandbox=sandbox, passed=passed)
    inv = found.invocation
    if not prefix and sandbox_only:
        return Ran(exit_code=None, output="", duration=0.0, sandboxed=False, refused=True)
    output = OutputTail(OUTPUT_BYTES)
    started, since = time.perf_counter(), time.time_ns()
    exit_code: int | None = None
    try:
        with anyio.move_on_after(budget):
            exit_code = await run_process_group([*prefix, *source.argv(found, root, files)], cwd=root,
                                                env=passed.child_env(extra, bool(prefix)), on_output=output.feed)
    finally:  # also when cancelled: no setuid file stays behind (sandbox/leftovers.py)
        removed = await strip_after(workspace.root, [h for h, _ in inv.writable], since_ns=since)
    return Ran(exit_code=exit_code, output=output.text(), duration=time.perf_counter() - started, sandboxed=bool(prefix),
               timed_out=exit_code is None, removed=removed)


async def sandboxed_command(workspace: Workspace, source: Source, found: Found, root: Path, *, sandbox: SandboxMode,
                            passed: PassedEnv) -> tuple[list[str], dict[str, str]]:
    """The sandbox prefix a checker of the project in ``root`` runs behind (``[]``: none here) and the
    variables it gets beyond the passed environment: a process per check, or a warm server."""
    import anyio.to_thread

    inv = found.invocation
    readable = [*inv.readable, *toolchain_homes(source.toolchain)] if sandbox != "off" else inv.readable
    prefix = await anyio.to_thread.run_sync(functools.partial(
        sandbox_prefix, sandbox, workspace.root, readable, environments=inv.environments, writable=passed.writable))
    extra = {**inv.env}  # a Python checker's: the project's environment first on PATH, as for its tests
    if prefix:
        extra.update(inv.sandbox_env)
        for host, _ in inv.writable:
            host.mkdir(parents=True, exist_ok=True)
        prefix = _sandbox_argv(prefix, root, inv.writable)
    return prefix, extra
