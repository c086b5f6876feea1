"""Every git process cog starts goes through :func:`run_git`, which runs no program the repository
names.

The workspace's files (a folder shaped like a repository included) and whatever a test or a
model wrote are not trusted. So git is started from the workspace root with the git dir and the
work tree named explicitly (no discovery: ``vendor/lib/{HEAD,config,objects}`` is just files;
which repository, if any, is decided once per process by :func:`workspace_tools.host.files.repository`,
so a ``.git`` a test writes later, or one naming another repository, is just a file),
with no ``GIT_*`` variable of cog's environment (but the person's identity), and with everything off that runs a configured
command: fsmonitor, hooks (unless the caller passes an approved hooks folder), external diff,
textconv, filter drivers (``clean``/``smudge``/``process`` of every driver configured), pager,
credential helpers, askpass, editor, gpg signing; and no git inside a submodule (whose own config
a test may have written). The git binary itself and everything git starts by name come from
``PATH`` without the folders a test could write (:mod:`workspace_tools.host.programs`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from workspace_tools.host.programs import host_path, host_program
from workspace_tools.host.files import repository

#: settings that run a program, turned off for every git cog starts
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("sequence.editor", "false"),
    ("diff.external", ""),
    ("credential.helper", ""),
    ("gpg.program", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("protocol.allow", "never"),
    ("core.untrackedCache", "false"),
    # a submodule is a repository of its own, with a config of its own (its drivers, its fsmonitor)
    # that a test may have written: git must not start a git inside it to ask whether it is dirty
    # (a moved submodule commit is still shown: git reads that without starting anything)
    ("diff.ignoreSubmodules", "dirty"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
)
#: per-driver keys that name a command (``filter.<driver>.clean`` …), blanked for every driver configured
DRIVER_COMMANDS = {"filter": ("clean", "smudge", "process"), "diff": ("textconv", "command"), "merge": ("driver",)}


#: ``GIT_*`` variables of cog's environment that are the person's and run nothing: kept
KEPT_GIT_VARIABLES = frozenset(
    {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
     "GIT_COMMITTER_DATE", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"}
)


class GitNotFound(Exception):
    """The git command is not installed."""


def _git() -> str:
    """The host's git: never one a test planted in a folder on ``PATH`` (:mod:`workspace_tools.host.programs`)."""
    found = host_program("git")
    if found is None:
        raise GitNotFound("the git command is not installed (none on PATH outside repositories and virtualenvs)")
    return found


def git_dir(workspace: Path) -> Path | None:
    """The git dir of the repository whose work tree holds ``workspace`` (None: none), as
    :func:`workspace_tools.host.files.repository` decided it once for this process: only a ``.git``
    counts (a folder that merely looks like a repository is not one), and only one that stays in
    its work tree or is a worktree or submodule git made for it."""
    found = repository(workspace)
    return None if found is None else found.git_dir


def work_tree(workspace: Path) -> Path | None:
    """The top folder of the work tree holding ``workspace`` (where its ``.git`` is), as :func:`git_dir` decides."""
    found = repository(workspace)
    return None if found is None else found.work_tree


def _environment(gitdir: Path, tree: Path, base: Mapping[str, str], *, literal_pathspecs: bool = True) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith("GIT_") or k in KEPT_GIT_VARIABLES}
    env.update(
        PATH=host_path(base.get("PATH", os.defpath)),  # what git starts by name comes from the host, not a workspace folder
        GIT_DIR=str(gitdir),
        GIT_WORK_TREE=str(tree),
        GIT_CEILING_DIRECTORIES=str(tree.parent),
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_OPTIONAL_LOCKS="0",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_CONFIG_PARAMETERS="",
    )
    if literal_pathspecs:
        env["GIT_LITERAL_PATHSPECS"] = "1"
    else:
        env.pop("GIT_LITERAL_PATHSPECS", None)
    env.pop("GIT_ASKPASS", None)
    env.pop("SSH_ASKPASS", None)
    return env


#: within :func:`one_config_read`: the driver overrides read once per git dir
_shared_reads: ContextVar[dict[str, list[str]] | None] = ContextVar("cog_git_config_reads", default=None)


@contextmanager
def one_config_read() -> Iterator[None]:
    """Git processes started together (a search starts three in the same millisecond) share one
    read of the drivers the configuration names, instead of one ``git config`` each. Only for
    processes started back to back: a read is not kept beyond the block, as a test may change
    the configuration between two tool calls."""
    if _shared_reads.get() is not None:  # inside another block: its read serves
        yield
        return
    token = _shared_reads.set({})
    try:
        yield
    finally:
        _shared_reads.reset(token)


def _driver_overrides(env: Mapping[str, str], cwd: Path) -> list[str]:
    """``-c filter.X.clean=`` … for every driver the configuration names (reading config runs nothing)."""
    shared = _shared_reads.get()
    if shared is None:
        return _read_driver_overrides(env, cwd)
    key = env["GIT_DIR"]
    if key not in shared:
        shared[key] = _read_driver_overrides(env, cwd)
    return shared[key]


def _read_driver_overrides(env: Mapping[str, str], cwd: Path) -> list[str]:
    try:
        done = subprocess.run(
            [_git(), "config", "--null", "--name-only", "--get-regexp", r"^(filter|diff|merge)\..*\."],
            cwd=cwd, env=dict(env), capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitNotFound("the git command is not installed") from None
    except (OSError, subprocess.SubprocessError):
        return []
    drivers: set[tuple[str, str]] = set()
    for raw in done.stdout.split(b"\0"):
        key = raw.decode("utf-8", "replace")
        section, _, rest = key.partition(".")
        name, _, _ = rest.rpartition(".")
        if section in DRIVER_COMMANDS and name:
            drivers.add((section, name))
    args: list[str] = []
    for section, name in sorted(drivers):
        for key in DRIVER_COMMANDS[section]:
            args += ["-c", f"{section}.{name}.{key}="]
        if section == "filter":
            args += ["-c", f"{section}.{name}.required=false"]
    return args


def git_command(
    workspace: Path,
    args: Sequence[str],
    *,
    hooks: Path | None = None,
    environ: Mapping[str, str] | None = None,
    literal_pathspecs: bool = True,
) -> tuple[list[str], dict[str, str], Path]:
    """(argv, environment, working directory) for ``git ARGS`` on the repository holding
    ``workspace``. ``hooks``: a folder of hooks the person's run may run (``--commit``); none by
    default. ``literal_pathspecs=False`` lets ``:(exclude,literal)…`` magic through (every path
    the caller passes must then carry its own ``:(literal)``). Raises :class:`LookupError` when
    ``workspace`` is in no repository."""
    workspace = Path(workspace).resolve()
    repo = repository(workspace)
    if repo is None:
        raise LookupError(f"{workspace} is not in a git repository")
    env = _environment(repo.git_dir, repo.work_tree, os.environ if environ is None else environ, literal_pathspecs=literal_pathspecs)
    safe = [arg for key, value in SAFE_CONFIG for arg in ("-c", f"{key}={value}")]
    if hooks is not None:
        safe += ["-c", f"core.hooksPath={hooks}"]
    if args and args[0] in ("diff", "status"):
        # on the command line: a committed .gitmodules' ``ignore = none`` beats the config above
        args = [args[0], "--ignore-submodules=dirty", *args[1:]]
    argv = [_git(), "--no-pager", *safe, *_driver_overrides(env, workspace), *args]
    return argv, env, workspace


def run_git(
    workspace: Path,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    timeout: float = 120,
    hooks: Path | None = None,
    environ: Mapping[str, str] | None = None,
    literal_pathspecs: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` safely (see the module) from ``workspace`` and return what it did (stdout
    and stderr as bytes; the exit code is the caller's to judge). Raises :class:`LookupError`
    outside a repository, :class:`GitNotFound` without git."""
    argv, env, cwd = git_command(workspace, args, hooks=hooks, environ=environ, literal_pathspecs=literal_pathspecs)
    try:
        return subprocess.run(
            argv, cwd=cwd, env=env, input=input, capture_output=True, timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitNotFound("the git command is not installed") from None


def start_git(workspace: Path, args: Sequence[str], *, literal_pathspecs: bool = True) -> subprocess.Popen[bytes]:
    """:func:`run_git` started in the background (stdout piped, stderr dropped), so a caller can
    work while git does: read it with ``communicate()``. Raises as :func:`run_git` does."""
    argv, env, cwd = git_command(workspace, args, literal_pathspecs=literal_pathspecs)
    try:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise GitNotFound("the git command is not installed") from None
