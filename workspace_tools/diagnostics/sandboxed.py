"""One checker run the way ``run_tests`` runs a test runner: in the bubblewrap sandbox (no network,
the workspace writable, the toolchain and the project's environment shown read-only), with the
variables the tests get, as a process group killed whole when its time budget runs out.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path

from workspace_tools.diagnostics.sources import Found, Source
from workspace_tools.host.processes import OutputTail, run_process_group
from workspace_tools.runners.run_tests import _sandbox_argv
from workspace_tools.runners.toolchains import toolchain_homes
from workspace_tools.sandbox.bwrap import SandboxMode, sandbox_prefix
from workspace_tools.sandbox.environment import PassedEnv
from workspace_tools.workspace.paths import Workspace

#: output kept of one checker run (its JSON on a big project's backlog can be long)
OUTPUT_BYTES = 16 * 1024 * 1024


@dataclass
class Ran:
    exit_code: int | None
    output: str
    duration: float
    sandboxed: bool
    #: the budget ran out and the process group was killed
    timed_out: bool = False


async def run_source(workspace: Workspace, source: Source, found: Found, root: Path, files: list[Path], *,
                     sandbox: SandboxMode, passed: PassedEnv, budget: float) -> Ran:
    """Run ``source`` on ``files`` of the project in ``root`` within ``budget`` seconds."""
    import anyio
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
    output = OutputTail(OUTPUT_BYTES)
    started = time.perf_counter()
    exit_code: int | None = None
    with anyio.move_on_after(budget):
        exit_code = await run_process_group([*prefix, *source.argv(found, root, files)], cwd=root,
                                            env=passed.child_env(extra, bool(prefix)), on_output=output.feed)
    return Ran(exit_code=exit_code, output=output.text(), duration=time.perf_counter() - started, sandboxed=bool(prefix),
               timed_out=exit_code is None)
