"""run_command: a shell command (``bash -c``) in the workspace, inside the test sandbox.

The sandbox is run_tests' (:mod:`workspace_tools.sandbox.bwrap`): the workspace writable but ``.git/`` and
``.cog/``, the rest of the machine read-only, an empty throwaway home, no network (only its own
loopback), no host socket, no credential in the environment (:mod:`workspace_tools.sandbox.environment`), its
own PIDs, and everything it started killed when the command ends, times out or is aborted.
``--sandbox off`` runs it without one, and the result says so. The network is the person's to give
(``--command-network``), never the model's.

What each reader gets:

- people watching: each output line as a progress update (several in one when they come fast:
  :class:`~workspace_tools.shell.output.LiveLines`);
- the model: the exit code, the duration, whether it was sandboxed, the output's head and tail (cut
  to fit its limit), the workspace files the command changed, and any file it left setuid, setgid
  or with capabilities, whose privileges cog removed (:mod:`workspace_tools.sandbox.leftovers`);
- the application: :class:`cogcli.contract.details.ShellCommandDetails` (command, exit code, duration,
  stdout and stderr apart, each bounded, the files changed, ``privileges_removed``).

In a run, the workspace's files are kept in a private snapshot before each command and what it
changed is recorded in the run's journal after it, so ``cog undo`` puts it back with the run's tool
writes (:mod:`workspace_tools.shell.command_undo`; docs/undo.md); what it did outside the
workspace is not undone, and the result says so.

``background=true`` starts the command as a job of the session (:mod:`workspace_tools.shell.jobs`)
and answers at once with its id; from then on the session's sandboxed commands share one loopback
network (:mod:`workspace_tools.sandbox.shared_net`), so a server it starts can be queried.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import tool_output
from cogcli.contract.tool import Tool, tool
from workspace_tools.sandbox.bwrap import SandboxMode
from workspace_tools.workspace.paths import Workspace
from workspace_tools.sandbox.environment import PassedEnv

if TYPE_CHECKING:
    from cogcli.contract.allow_list import AllowList
    from cogcli.contract.context import ToolContext
    from workspace_tools.sandbox.shared_net import SharedNetwork
    from workspace_tools.files.journal import Journal
    from workspace_tools.shell.command_undo import CommandUndo
    from workspace_tools.shell.jobs import Jobs

LABEL = "Run"
ICON = "terminal"
#: seconds a command may run when the call gives no timeout
DEFAULT_TIMEOUT = 120
#: the most a command may take (the call's own ``timeout`` is held to it, and to the session's)
MAX_TIMEOUT = 3600
#: what the model reads of the output: its first and its last bytes
MODEL_HEAD, MODEL_TAIL = 4_000, 12_000
#: what the details keep of each stream
DETAILS_HEAD, DETAILS_TAIL = 16_000, 48_000
#: changed files named in the details (and in what the model reads: fewer)
CHANGED_IN_DETAILS, CHANGED_FOR_MODEL = 200, 20
MAX_COMMAND = 100_000
#: how long a background start waits for the command's first output (or its end)
FIRST_LOOK_S = 0.5


class RunCommandParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when this tool is listed or called

    command: str = Field(
        description="The shell command, run as `bash -c COMMAND` in the workspace root: a linter, a type checker, "
        "a build, git log, a code generator. No network; only the workspace is writable.",
        max_length=MAX_COMMAND,
    )
    timeout: int | None = Field(
        default=None, ge=1, le=MAX_TIMEOUT,
        description=f"Seconds it may run (default {DEFAULT_TIMEOUT}); then it and everything it started are killed.",
    )
    background: bool = Field(
        default=False,
        description="Start it and return at once with a job id (a dev server, a watcher): read what it prints with "
        "command_output(id), end it with kill_command(id). Later commands and tests can reach a server it starts on "
        "localhost. It is killed when the session ends.",
    )


def _presentation(params: RunCommandParams) -> dict[str, Any]:
    label = "Start" if params.background else LABEL
    return {"label": label, "icon": ICON, "detail": params.command}


def run_command_tool(
    workspace: Workspace,
    *,
    sandbox: SandboxMode = "auto",
    max_timeout: float | None = None,
    allow: AllowList | None = None,
    network: bool = False,
    passed: PassedEnv | None = None,
    jobs: Jobs | None = None,
    journal: Journal | None = None,
    undo_ignored: bool = False,
) -> Tool[RunCommandParams]:
    """The tool for ``workspace``. ``sandbox`` as run_tests' (``"off"``: no sandbox, said in each
    result); ``max_timeout`` the most a call may ask for (the session's per-call timeout); ``allow``
    the person's allow list (matching commands run without asking); ``network`` the person's
    choice to give commands the host's network; ``passed`` what they get beyond the tests'
    allow-list (the same as the tests: :class:`workspace_tools.sandbox.environment.PassedEnv`);
    ``jobs`` the session's background commands (:mod:`workspace_tools.shell.jobs`; without it
    ``background`` is refused); ``journal`` the run's, where what a command changed is recorded for
    ``cog undo`` from a snapshot taken before it (``undo_ignored``: files git ignores too)."""
    from workspace_tools.shell.command_undo import CommandUndo

    undo = CommandUndo(workspace.root, journal, ignored=undo_ignored)
    if sandbox not in ("auto", "on", "off"):
        raise ValueError(f"sandbox must be 'auto', 'on' or 'off', not {sandbox!r}")
    # a little under the session's per-call timeout: our own deadline reports the output so far
    ceiling = min(MAX_TIMEOUT, max(1.0, max_timeout - min(5.0, max_timeout * 0.2)) if max_timeout else MAX_TIMEOUT)

    def check(params: RunCommandParams) -> str:
        command = params.command
        if not command.strip():
            raise ToolCallError("command is empty; give the shell command to run, e.g. `ruff check .`", code=ErrorCode.INVALID_ARGUMENTS)
        if "\x00" in command:
            raise ToolCallError("command holds a NUL character, which no shell command can; remove it", code=ErrorCode.INVALID_ARGUMENTS)
        return command

    def preview(params: RunCommandParams) -> dict[str, Any]:
        """The exact command line the person approves (and where it will run)."""
        return {"command": check(params), "sandbox": sandbox, "network": network, "background": params.background}

    async def execute(params: RunCommandParams, context: ToolContext) -> Any:
        import anyio
        import anyio.to_thread

        from cogcli.contract.details import ShellCommandDetails
        from workspace_tools.shell.output import HeadTail, LiveLines
        from workspace_tools.host.processes import run_process_group
        from workspace_tools.sandbox.hints import needs_network
        from workspace_tools.sandbox.leftovers import removed_text, strip_after
        from workspace_tools.shell.tree_changes import scan
        from workspace_tools.workspace.envdirs import tracked_folders

        command = check(params)
        limit = min(params.timeout or DEFAULT_TIMEOUT, ceiling)
        passed_env = passed or PassedEnv()
        if params.background:
            return await _start_background(params, workspace.root, sandbox, network, passed_env, jobs, undo)
        shared = jobs.network if jobs is not None and jobs.network.active else None
        prefix, env = await anyio.to_thread.run_sync(functools.partial(_setup, workspace.root, sandbox, network, passed_env, shared))
        tracked = await anyio.to_thread.run_sync(tracked_folders, workspace.root)
        before = await anyio.to_thread.run_sync(functools.partial(scan, workspace.root, tracked=tracked))
        taken = await anyio.to_thread.run_sync(undo.before, before)
        since = time.time_ns()

        model, out, err = HeadTail(MODEL_HEAD, MODEL_TAIL), HeadTail(DETAILS_HEAD, DETAILS_TAIL), HeadTail(DETAILS_HEAD, DETAILS_TAIL)
        presentation = _presentation(params)

        def send(text: str, first: int, count: int) -> None:
            context.update(content=text, details={"line": first, "lines": count}, presentation=presentation)

        live = LiveLines(send)

        def on_stdout(chunk: bytes) -> None:
            model.feed(chunk)
            out.feed(chunk)
            live.feed(chunk)

        def on_stderr(chunk: bytes) -> None:
            model.feed(chunk)
            err.feed(chunk)
            live.feed(chunk)

        async def flush_now_and_then() -> None:
            from workspace_tools.shell.output import COALESCE_S

            while True:
                await anyio.sleep(COALESCE_S * 2)
                live.flush()

        started = time.perf_counter()
        exit_code: int | None = None
        timed_out = False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(flush_now_and_then)
                with anyio.move_on_after(limit) as deadline:
                    exit_code = await run_process_group(
                        [*prefix, _bash(), "-c", command], cwd=workspace.root, env=env, on_output=on_stdout, on_stderr=on_stderr
                    )
                timed_out = deadline.cancelled_caught
                tg.cancel_scope.cancel()
        finally:  # also when the call is aborted or timed out: no setuid file stays behind (sandbox/leftovers.py),
            # and what the command changed so far is recorded for cog undo (shielded, as the sweep is)
            removed = await strip_after(workspace.root, _writable(passed_env, workspace.root), since_ns=since)
            _, changes, recorded = await undo.finish(taken, before, tracked, f"command: {command}")
        live.close()
        duration_ms = (time.perf_counter() - started) * 1000

        changed = [{"path": p, "change": kind, **recorded.line_fields(p)} for kind, part in (("created", changes.created), ("modified", changes.modified),
                                                                  ("deleted", changes.deleted)) for p in part]
        changed.sort(key=lambda c: c["path"])
        details = ShellCommandDetails(
            command=command, exit_code=exit_code, duration_ms=round(duration_ms, 1),
            stdout=out.text(), stderr=err.text(), stdout_dropped=out.dropped, stderr_dropped=err.dropped,
            timed_out=timed_out, sandbox="bwrap" if prefix else "none", network=network and bool(prefix),
            changed_files=changed[:CHANGED_IN_DETAILS], changed_total=len(changed), changes_complete=changes.complete,
            privileges_removed=[r.as_dict() for r in removed], changes_notes=changes.notes,
            undo_recorded=recorded.count, undo_notes=recorded.notes,
        )
        text = _model_text(details, model.text(), changed, limit, sandbox)
        text += "".join(f"\n{line}" for line in (*changes.notes, recorded.text(), removed_text(removed)) if line)
        if prefix and not network and exit_code and needs_network([details.stdout, details.stderr]):
            text += ("\nThe command needed the network, which the sandbox does not give (npm, pip and cargo are told "
                     "they are offline, so they stop at once): the person can allow it with --command-network "
                     "(COG_COMMAND_NETWORK=1; still sandboxed).")
        shown = dict(presentation)
        if timed_out:
            shown["detail"] = f"{command} · timed out"
        elif exit_code:
            shown["detail"] = f"{command} · exit {exit_code}"
        return tool_output(text, details=details, presentation=shown)

    made = tool(
        kind="execute",
        name="run_command",
        description=(
            "Run a shell command (bash -c) in the workspace root and read its exit code and output: linters, type "
            "checkers, builds, `git log`, code generators, `ls`, `find`. It runs in a sandbox: no network, only the "
            "workspace writable (not .git/; .cog/, cog's own state, shows empty), nothing left running after it. Long output is cut to its start and end. "
            "Prefer read_file, search_text, edit_file and run_tests for what they do."
        ),
        parameters=RunCommandParams,
        execute=execute,
        presentation=_presentation,
        timeout=(max_timeout or ceiling + 30),  # our own deadline comes first and reports the output so far
        side_effects=("runs code", "writes files"),
        ordered_by=None,
        preview=preview,
    )
    if allow:
        import dataclasses

        made = dataclasses.replace(made, allowed=lambda params: allow.match(params.command))
    return made


def _setup(root: Path, sandbox: SandboxMode, network: bool, passed: PassedEnv,
           shared: SharedNetwork | None = None) -> tuple[list[str], dict[str, str]]:
    """(the sandbox's argv prefix, ``[]`` for none; the environment): the tests' environment (no
    credentials) with the project's Python environment first on PATH, so ``ruff`` or ``mypy``
    installed in it run as in an activated shell, shown read-only in the sandbox when it lies
    outside the workspace and the host confirmed it (as run_tests shows it), and the toolchains a
    build reads from the home (cargo, go, node). ``shared``: the session's one loopback network,
    entered once a background command started it."""
    from workspace_tools.sandbox.bwrap import sandbox_prefix
    from workspace_tools.host.programs import host_program
    from workspace_tools.sandbox.python import find_project_python
    from workspace_tools.sandbox.python_binds import environments

    project = find_project_python(root, root)
    extra: dict[str, str] = {}
    if project.env is not None and not project.fallback and (project.env / "bin").is_dir():
        extra = {"PATH": f"{project.env / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(project.env)}
    readable: list[Path] = []
    envs: list[Path] = []
    if sandbox != "off":
        from workspace_tools.runners.toolchains import toolchain_homes

        for name in ("cargo", "go", "node"):
            readable += toolchain_homes(name)
        envs = environments(project, root)[0]
    go_cache: list[tuple[Path, str]] = []
    if sandbox != "off" and host_program("go"):  # Go's caches, as run_tests' Go runner has them
        from workspace_tools.runners.go import SANDBOX_GOCACHE, module_cache, sandbox_build_cache

        readable.append(module_cache())
        go_cache.append((sandbox_build_cache(root), SANDBOX_GOCACHE))
    prefix = sandbox_prefix(sandbox, root, readable, network=network, environments=envs, writable=passed.writable, shared=shared)
    env = passed.child_env(extra, bool(prefix), network=network)
    if prefix and go_cache:
        from workspace_tools.runners.run_tests import _sandbox_argv

        go_cache[0][0].mkdir(parents=True, exist_ok=True)
        prefix = _sandbox_argv(prefix, root, go_cache)
        env.update(GOCACHE=go_cache[0][1], GOTOOLCHAIN="local")
    return prefix, env


async def _start_background(params: RunCommandParams, root: Path, sandbox: SandboxMode, network: bool, passed: PassedEnv,
                            jobs: Jobs | None, undo: CommandUndo) -> Any:
    """Start the command as a job and answer with its id (and what it printed in its first moment).
    In a run, the workspace is snapshotted first and what the job changed is recorded when it ends
    (in the journal of the run going on then)."""
    import anyio
    import anyio.to_thread

    if jobs is None:
        raise ToolCallError("background commands are not available here (no session keeps them); run it in the foreground",
                            code=ErrorCode.INVALID_ARGUMENTS)
    command = params.command
    shared = None if network or sandbox == "off" else jobs.network
    prefix, env = await anyio.to_thread.run_sync(functools.partial(_setup, root, sandbox, network, passed, shared))
    from workspace_tools.sandbox.leftovers import strip_privileges

    more = _writable(passed, root)
    record = await anyio.to_thread.run_sync(undo.start, f"background command: {command}") if undo.active else None

    def sweep(since: int) -> list[Any]:
        removed = strip_privileges(root, more, since_ns=since)
        if record is not None:
            record()
        return removed

    job = await anyio.to_thread.run_sync(lambda: jobs.start(
        command, [*prefix, _bash(), "-c", command], cwd=root, env=env, sandboxed=bool(prefix), sweep=sweep,
        shared_network=bool(shared is not None and shared.active)))
    await anyio.to_thread.run_sync(job.wait_for_news, FIRST_LOOK_S)
    early, dropped = job.take_new()
    state = "running" if job.running else f"ended at once (exit code {job.exit_code})"
    lines = [f"started {job.id} in the background: {state}"]
    if not prefix:
        lines[0] += " · NOT sandboxed: it runs with the person's own access"
    elif shared is not None and not shared.active:
        lines[0] += f" · its network is its own ({shared.failure}): later commands cannot reach a server it starts"
    if early.strip():
        lines.append(("…" if dropped else "") + early.rstrip("\n"))
    lines.append(f"read its output with command_output(id={job.id!r}), end it with kill_command(id={job.id!r})")
    from workspace_tools.shell.command_output import job_details

    details = job_details(job, early, dropped, sandbox="bwrap" if prefix else "none",
                          shared_network=bool(shared is not None and shared.active))
    presentation = {"label": "Start", "icon": ICON, "detail": f"{command} · {job.id}"}
    return tool_output("\n".join(lines), details=details, presentation=presentation)


def _writable(passed: PassedEnv, root: Path) -> list[Path]:
    """The paths besides the workspace a command may write (the person's ``--sandbox-writable``,
    Go's build cache), swept for setuid files after it like the workspace."""
    from workspace_tools.host.programs import host_program
    from workspace_tools.sandbox.bwrap import writable_paths

    paths = [Path(p) for p in (writable_paths() if passed.writable is None else passed.writable)]
    if host_program("go"):
        from workspace_tools.runners.go import sandbox_build_cache

        paths.append(sandbox_build_cache(root))
    return paths


def _bash() -> str:
    """The host's bash (never one a workspace folder on PATH holds)."""
    from workspace_tools.host.programs import host_program

    found = host_program("bash")
    if found is None:
        raise ToolCallError("bash is not installed on this machine; run_command needs it", code=ErrorCode.TOOL_ERROR)
    return found


def _model_text(details: Any, output: str, changed: list[dict[str, str]], limit: float, sandbox: SandboxMode) -> str:
    if details.timed_out:
        head = f"timed out after {limit:g} s; the command and everything it started were killed"
    elif details.exit_code is not None and details.exit_code < 0:
        head = f"killed by signal {-details.exit_code}"
    else:
        head = f"exit code {details.exit_code}"
    head += f" · {details.duration_ms / 1000:.1f} s"
    if details.sandbox == "none":
        why = "--sandbox off" if sandbox == "off" else "no sandbox is usable here"
        head += f" · NOT sandboxed ({why}): it ran with the person's own access"
    elif details.network:
        head += " · sandboxed, with network"
    lines = [head]
    if output:
        lines.append(output.rstrip("\n"))
    else:
        lines.append("(no output)")
    if changed:
        names = ", ".join(f"{c['path']} ({c['change']})" for c in changed[:CHANGED_FOR_MODEL])
        more = f" and {len(changed) - CHANGED_FOR_MODEL} more" if len(changed) > CHANGED_FOR_MODEL else ""
        lines.append(f"{len(changed)} file{'s' if len(changed) != 1 else ''} changed: {names}{more}")
    if not details.changes_complete:
        lines.append("(the workspace is too large to check every file for changes)")
    return "\n".join(lines)
