"""Tools that read, search, edit and test one workspace folder, and never reach outside it.

>>> tools = workspace_tools("path/to/repo", test_command=None)
>>> [t.name for t in tools]
['read_file', 'list_files', 'search_text', 'edit_file', 'apply_patch', 'write_file', 'move_file', 'delete_file', 'git_status', 'git_diff', 'run_tests', 'run_command', 'command_output', 'kill_command']

Every path argument goes through :meth:`Workspace.resolve`; each tool returns
``tool_output(content, details, presentation)`` so the model, the app and any client each get
what they need (the diff of an edit is in ``details``, never in what the model reads).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (at run time imported when tools are made: find_workspace, under here, needs none of them)
    from cogcli.contract.tool import Tool
    from workspace_tools.sandbox.bwrap import SandboxMode
    from workspace_tools.workspace.paths import Workspace
    from workspace_tools.files.journal import Journal
    from workspace_tools.sandbox.environment import PassedEnv
    from workspace_tools.shell.jobs import Jobs


def workspace_tools(
    root: str | Path | Workspace,
    *,
    test_command: str | None = None,
    max_read_bytes: int = 256_000,
    test_timeout: float | None = 600,
    include_git: bool = True,
    secret_globs: Sequence[str] = (),
    allow_secrets: Sequence[str] = (),
    sandbox: SandboxMode = "auto",
    journal: Journal | None = None,
    test_runner: str | None = None,
    only: Collection[str] | None = None,
    allow: Sequence[str] = (),
    command_network: bool = False,
    command_timeout: float | None = None,
    test_env: PassedEnv | None = None,
    jobs: Jobs | None = None,
    keep_jobs: bool = False,
    diagnostics: bool = False,
    diagnostics_off: Sequence[str] = (),
    undo_ignored: bool = False,
    defer: Callable[[str, Callable[[], Tool[Any]]], Tool[Any]] | None = None,
) -> list[Tool[Any]]:
    """All the workspace tools for ``root``.

    ``test_command`` is a shell command for ``run_tests`` (else the runners found in the workspace,
    or ``test_runner``: pytest, go, vitest, jest, node or cargo); ``max_read_bytes``
    is the most ``read_file`` returns at once; ``include_git=False`` leaves out git_status/git_diff.
    Files that look like secrets (:mod:`workspace_tools.workspace.secret_files`: ``.env``, keys, plus
    ``secret_globs``) are kept from the tools, except the paths in ``allow_secrets``.
    ``sandbox`` is how ``run_tests`` runs the tests: ``"auto"`` (default) under bubblewrap when it
    works here and otherwise without a sandbox (with one warning logged), ``"on"`` only under
    bubblewrap, ``"off"`` never under it. ``journal`` (:class:`workspace_tools.files.journal.Journal`)
    is where ``edit_file`` and ``write_file`` record each change before making it, so ``cog undo``
    works after a crash; without one they record nothing. ``only`` keeps the tools of those names
    (in the same order) and imports only their modules: ``cog tool NAME`` starts faster.
    ``run_command`` runs shell commands in the same sandbox as the tests; ``allow`` are the
    person's patterns of commands that run without asking (:mod:`cogcli.contract.allow_list`),
    ``command_network`` the person's choice to give commands the network, ``command_timeout``
    the most one command may take. ``apply_patch``, ``move_file`` and ``delete_file`` record in ``journal`` too.
    ``test_env`` (:class:`workspace_tools.sandbox.environment.PassedEnv`): what the tests get beyond the
    allow-list, for this workspace only. ``jobs`` (:class:`workspace_tools.shell.jobs.Jobs`) keeps
    ``run_command``'s background commands, read by ``command_output`` and ended by ``kill_command``
    (made here when not given; ``run_command``'s ``close`` kills what is still running, but with
    ``keep_jobs`` — the person's ``--keep-jobs`` — keeps it past the session's end).
    allow-list, for this workspace only. ``diagnostics=True`` checks every change edit_file, write_file,
    apply_patch and move_file make with the project's checkers, in the tests' sandbox, and adds the
    ``diagnostics`` tool (:mod:`workspace_tools.diagnostics`); ``diagnostics_off`` names checkers left out.
    ``undo_ignored``: the snapshots before commands and test runs keep files git ignores too.
    ``defer(name, make)``: what stands for each tool, given its name and its maker (a session's
    tools made on first use: :mod:`cogcli.session.tool_specs`); None: each tool made now.
    """
    from workspace_tools.workspace.secret_files import SecretPolicy

    from workspace_tools.workspace.paths import Workspace

    workspace = root if isinstance(root, Workspace) else Workspace(root)
    secrets = SecretPolicy.for_workspace(workspace, secret_globs, allow_secrets)

    checkers: list[Any] = []

    def checked(made: Tool[Any]) -> Tool[Any]:
        """A file tool whose changes are checked (one checker for all of them: it keeps what it saw)."""
        if not diagnostics:
            return made
        import dataclasses

        from workspace_tools.diagnostics.after_change import with_diagnostics

        # made on the first call: listing the tools imports no checker; its warm servers end with the session
        return dataclasses.replace(with_diagnostics(made, checker), close=close_checker)

    def checker() -> Any:
        if not checkers:
            from workspace_tools.diagnostics.checker import Checker

            checkers.append(Checker(workspace, sandbox=sandbox, passed=test_env, off=diagnostics_off))
        return checkers[0]

    def close_checker() -> None:
        for made in checkers:
            made.close()

    # each tool's module is imported only when that tool is made
    def read_file() -> Tool[Any]:
        from workspace_tools.files.read import read_file_tool

        return read_file_tool(workspace, max_read_bytes=max_read_bytes, secrets=secrets)

    def list_files() -> Tool[Any]:
        from workspace_tools.files.list import list_files_tool

        return list_files_tool(workspace, secrets=secrets)

    def search_text() -> Tool[Any]:
        from workspace_tools.files.search import search_text_tool

        return search_text_tool(workspace, secrets=secrets)

    def edit_file() -> Tool[Any]:
        from workspace_tools.files.edit import edit_file_tool

        return checked(edit_file_tool(workspace, secrets=secrets, journal=journal))

    def apply_patch() -> Tool[Any]:
        from workspace_tools.files.apply_patch import apply_patch_tool

        return checked(apply_patch_tool(workspace, secrets=secrets, journal=journal))

    def write_file() -> Tool[Any]:
        from workspace_tools.files.write import write_file_tool

        return checked(write_file_tool(workspace, secrets=secrets, journal=journal))

    def move_file() -> Tool[Any]:
        from workspace_tools.files.move import move_file_tool

        return checked(move_file_tool(workspace, secrets=secrets, journal=journal))

    def delete_file() -> Tool[Any]:
        from workspace_tools.files.delete import delete_file_tool

        return delete_file_tool(workspace, secrets=secrets, journal=journal)

    kept: list[Jobs] = [jobs] if jobs is not None else []

    def session_jobs() -> Jobs:
        if not kept:
            from workspace_tools.shell.jobs import Jobs

            kept.append(Jobs(keep_all=keep_jobs, workspace=workspace.root))
        return kept[0]

    def run_command() -> Tool[Any]:
        import dataclasses

        from cogcli.contract.allow_list import AllowList
        from workspace_tools.shell.run_command import run_command_tool

        made = run_command_tool(workspace, sandbox=sandbox, max_timeout=command_timeout, allow=AllowList.of(allow),
                                network=command_network, passed=test_env, jobs=session_jobs(), journal=journal,
                                undo_ignored=undo_ignored)
        return dataclasses.replace(made, close=session_jobs().close)

    def command_output() -> Tool[Any]:
        from workspace_tools.shell.command_output import command_output_tool

        return command_output_tool(session_jobs())

    def kill_command() -> Tool[Any]:
        from workspace_tools.shell.kill_command import kill_command_tool

        return kill_command_tool(session_jobs())

    def git_status() -> Tool[Any]:
        from workspace_tools.git.changes import git_status_tool

        return git_status_tool(workspace, secrets=secrets)

    def git_diff() -> Tool[Any]:
        from workspace_tools.git.changes import git_diff_tool

        return git_diff_tool(workspace, secrets=secrets)

    def run_tests() -> Tool[Any]:
        from workspace_tools.runners.run_tests import run_tests_tool

        from workspace_tools.shell.command_undo import with_command_undo

        made = run_tests_tool(workspace, test_command=test_command, timeout=test_timeout, sandbox=sandbox, runner=test_runner, passed=test_env)
        # what the tests wrote into the workspace is snapshotted and recorded for cog undo, as a command's
        return with_command_undo(made, workspace.root, journal, lambda params: f"tests: {test_command or test_runner or 'run_tests'}",
                                 ignored=undo_ignored)

    def diagnostics_tool() -> Tool[Any]:
        import dataclasses

        from workspace_tools.diagnostics.tool import diagnostics_tool as make

        return dataclasses.replace(make(checker), close=close_checker)

    makers = [read_file, list_files, search_text, edit_file, apply_patch, write_file, move_file, delete_file]
    if include_git:
        makers += [git_status, git_diff]
    makers += [run_tests, run_command, command_output, kill_command]
    if diagnostics:
        makers.append(diagnostics_tool)
    chosen = [(make.__name__.removesuffix("_tool"), make) for make in makers]
    return [make() if defer is None else defer(name, make) for name, make in chosen if only is None or name in only]


__all__ = ["Workspace", "workspace_tools"]


def __getattr__(name: str) -> Any:
    """``Journal`` and ``Workspace``, importable from here as before, are imported on first use
    (``cog tools`` needs no journal; finding the workspace, under this package, needs neither)."""
    if name == "Journal":
        from workspace_tools.files.journal import Journal

        return Journal
    if name == "Workspace":
        from workspace_tools.workspace.paths import Workspace

        return Workspace
    raise AttributeError(f"module 'workspace_tools' has no attribute {name!r}")
