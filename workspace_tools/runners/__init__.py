"""The test runners ``run_tests`` knows, how each is found in a workspace, and ``test_command``.

=========  =======================================  ===========================================
runner     found by                                 driven through
=========  =======================================  ===========================================
pytest     pyproject.toml, setup.py, setup.cfg,     cog's pytest plugin (JSON lines on a pipe)
           pytest.ini, tox.ini, conftest.py
go         go.mod                                   ``go test -json``
vitest     package.json: test script or devDeps     cog's vitest reporter (vitest 1, 2 and 3)
jest       package.json: test script or devDeps     cog's jest reporter
mocha      package.json: test script or devDeps     cog's mocha reporter
tape       package.json: test script or devDeps     its TAP output (:mod:`.tap_stream`)
node       package.json: ``node --test`` script     cog's ``node --test`` reporter
npm        package.json: any other test script      ``npm test`` as written, its exit code the
                                                    verdict; cog's ``node --test`` reporter
                                                    through NODE_OPTIONS, and any TAP it
                                                    prints, for the counts
cargo      Cargo.toml                               ``cargo test``'s per-test lines
=========  =======================================  ===========================================

A package's test script is driven through a runner's stream only when it is exactly one
invocation of it (``vitest run``, ``jest --ci``, ``node --test test/``, maybe after ``NAME=value``
or ``cross-env``); a script that chains commands, has ``pretest``/``posttest``, runs the tests
under ``c8``/``nyc``, or runs any other program runs as written (:class:`~.node.ScriptRunner`).
devDependencies decide only when there is no test script.

The workspace root and its folders down to :data:`MAX_DEPTH` are looked at (not hidden folders,
``node_modules``, ``target``, ``vendor``, virtualenvs, or the folders where sample projects live:
``tests``, ``fixtures``, ``testdata``, ``examples``, ``docs``…); below a folder where one
kind was found, that kind is not looked for again (a cargo or npm workspace's members run from
its root). With nothing found, pytest runs at the workspace root, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.workspace.paths import Workspace
from workspace_tools.runners.base import Runner, Selection, check_args, split_command
from workspace_tools.runners.cargo import CargoRunner
from workspace_tools.runners.plain_command import CommandRunner
from workspace_tools.runners.go import GoRunner
from workspace_tools.runners.node import JestRunner, MochaRunner, NodeRunner, NodeTestRunner, VitestRunner
from workspace_tools.runners.node_script import test_script
from workspace_tools.runners.npm import ScriptRunner
from workspace_tools.runners.pytest import MARKERS as PYTHON_MARKERS
from workspace_tools.runners.pytest import PytestRunner
from workspace_tools.runners.tap_producers import TapeRunner

#: the runners ``runner = NAME`` may force (npm's runs a script as written: it is chosen by the script)
RUNNERS: dict[str, type[Runner]] = {r.name: r for r in (PytestRunner, GoRunner, VitestRunner, JestRunner, MochaRunner, TapeRunner,
                                                         NodeTestRunner, CargoRunner)}
RUNNER_NAMES = tuple(RUNNERS)
#: how deep below the workspace root projects are looked for
MAX_DEPTH = 3
_SKIP_DIRS = {"node_modules", "target", "vendor", "venv", "env", "build", "dist", "__pycache__", "site-packages",
              # sample projects that tests or docs use are not the workspace's own projects
              "testdata", "fixtures", "__fixtures__", "test-fixtures", "examples", "example", "samples", "docs",
              "tests", "test", "spec", "third_party", "third-party", "external"}

#: every runner, in the order ``cog tools`` lists them: each declares its name, how it is found and
#: what it needs (:class:`~.base.Runner`)
ALL_RUNNERS: tuple[type[Runner], ...] = (PytestRunner, GoRunner, VitestRunner, JestRunner, MochaRunner, TapeRunner, NodeTestRunner,
                                         ScriptRunner, CargoRunner)


def overview(workspace: Workspace) -> list[str]:
    """Lines for ``cog tools``: the runners, how each is found, what it needs, and what runs here."""
    lines = ["run_tests runners (found from the project's files; [tool.cog] runner or test_command override):"]
    for runner in ALL_RUNNERS:
        lines.append(f"    {runner.name:<7} {runner.found_by}; needs {runner.needs}")
    try:
        found = ", ".join(r.label() for r in detect(workspace))
    except OSError:
        found = "?"
    lines.append(f"    here: {found}")
    return lines


def _kinds_in(folder: Path) -> list[str]:
    kinds = []
    if any((folder / m).is_file() for m in PYTHON_MARKERS):
        kinds.append("pytest")
    if (folder / "go.mod").is_file():
        kinds.append("go")
    if (folder / "package.json").is_file():
        kind = test_script(folder).kind
        if kind:
            kinds.append(kind)
    if (folder / "Cargo.toml").is_file():
        kinds.append("cargo")
    return kinds


def _is_venv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file()


def detect(workspace: Workspace) -> list[Runner]:
    """Every project in the workspace, shallowest first."""
    found: list[Runner] = []
    seen_roots: dict[str, list[Path]] = {}  # a kind -> folders where it was found
    family = {"vitest": "node", "jest": "node", "mocha": "node", "tape": "node", "node": "node", "npm": "node"}

    def walk(folder: Path, depth: int) -> None:
        for kind in _kinds_in(folder):
            fam = family.get(kind, kind)
            if any(folder == r or r in folder.parents for r in seen_roots.get(fam, [])):
                continue
            seen_roots.setdefault(fam, []).append(folder)
            found.append(_runner(workspace, folder, kind))
        if depth >= MAX_DEPTH:
            return
        try:
            children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            return
        for child in children:
            if child.name.startswith(".") or child.name in _SKIP_DIRS or _is_venv(child):
                continue
            walk(child, depth + 1)

    walk(workspace.root, 0)
    if not found:  # no project cog knows: pytest may still find test_*.py files
        fallback = PytestRunner(workspace, workspace.root)
        fallback.no_project = True
        found.append(fallback)
    return found


def _runner(workspace: Workspace, folder: Path, kind: str) -> Runner:
    """The runner for a project of ``kind`` in ``folder`` (a Node package's with its test script's words)."""
    if kind == "npm":
        return ScriptRunner(workspace, folder)
    if kind in ("vitest", "jest", "mocha", "tape", "node"):
        script = test_script(folder)
        runner_class: type[NodeRunner] = RUNNERS[kind]  # type: ignore[assignment]
        return runner_class(workspace, folder, base_args=script.args, env=script.env)
    return RUNNERS[kind](workspace, folder)


def forced(workspace: Workspace, name: str) -> list[Runner]:
    """``runner = NAME``: the projects of that kind (a package whose test script runs it among
    other commands too), else that runner at the workspace root."""
    if name not in RUNNERS:
        raise ToolCallError(f"unknown runner {name!r}: use one of {', '.join(RUNNERS)}", code=ErrorCode.TOOL_ERROR)
    chosen = [r if r.name == name else RUNNERS[name](workspace, r.root) for r in detect(workspace)
              if r.name == name or (isinstance(r, ScriptRunner) and name in r.script.inside)]
    return chosen or [RUNNERS[name](workspace, workspace.root)]


def from_command(workspace: Workspace, command: str) -> Runner:
    """The runner a ``test_command`` names, so cog can still read its results; else a plain command.

    ``pytest -q -x``, ``python -m pytest …``, ``go test ./...``, ``cargo test``, ``npx vitest run``,
    ``npx jest`` and ``node --test`` are recognised. ``npm test``, ``npm run X``, ``yarn test``,
    ``pnpm run X`` run the package's script as written (:class:`~.node.ScriptRunner`: its exit code
    the verdict, counts from the ``node --test`` runs in it); a command with pipes, ``&&``,
    redirections or variables is run as it is, by the shell.
    """
    root = workspace.root
    argv = split_command(command)
    if not argv:
        return CommandRunner(workspace, root, command)
    words = list(argv)
    if _runs_a_script(words):
        return ScriptRunner(workspace, root, command=command)
    if words[0] in ("npx", "pnpm", "yarn") and len(words) > 1 and words[1] in ("exec",):
        words = words[1:]
    if words[0] in ("npx", "exec", "pnpm", "yarn", "bunx") and len(words) > 1:
        words = words[1:]
    head = os.path.basename(words[0])
    rest = words[1:]
    if head in ("pytest", "py.test"):
        return PytestRunner(workspace, root, base_argv=rest)
    if head.startswith("python") and rest[:2] == ["-m", "pytest"]:
        return PytestRunner(workspace, root, base_argv=rest[2:])
    if head == "go" and rest[:1] == ["test"]:
        flags, packages = _go_words(rest[1:])
        return GoRunner(workspace, root, base_args=flags, default_packages=packages)
    if head == "cargo" and rest[:1] == ["test"]:
        return CargoRunner(workspace, root, base_args=[w for w in rest[1:] if w not in ("--offline",)])
    if head == "vitest":
        return VitestRunner(workspace, root, base_args=[w for w in rest if w not in ("run",)])
    if head == "jest":
        return JestRunner(workspace, root, base_args=rest)
    if head == "mocha":
        return MochaRunner(workspace, root, base_args=rest)
    if head == "tape":
        return TapeRunner(workspace, root, base_args=rest)
    if head == "node" and "--test" in rest:
        return NodeTestRunner(workspace, root, base_args=rest)
    return CommandRunner(workspace, root, command)


def _runs_a_script(words: list[str]) -> bool:
    """``npm test``, ``npm run X``, ``yarn test``, ``yarn X``, ``pnpm run X``…: a package script,
    not a runner (``npx jest``, ``yarn jest``, ``pnpm exec vitest`` name the runner itself)."""
    head = os.path.basename(words[0])
    if head == "npm":
        return len(words) > 1 and words[1] not in ("exec", "x")
    if head in ("yarn", "pnpm"):
        return len(words) > 1 and words[1] not in ("exec", "dlx", "x", "vitest", "jest", "mocha", "tape", "node")
    return False


_GO_VALUE_FLAGS = {"-run", "-skip", "-count", "-timeout", "-tags", "-p", "-parallel", "-bench", "-benchtime", "-cpu",
                   "-covermode", "-coverpkg", "-shuffle", "-failfast", "-short", "-v", "-race", "-cover"}
_GO_BOOL_FLAGS = {"-failfast", "-short", "-v", "-race", "-cover", "-json"}


def _go_words(words: list[str]) -> tuple[list[str], list[str]]:
    """``go test``'s own flags (without -json) and its packages, from a test_command."""
    flags: list[str] = []
    packages: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-"):
            if w != "-json":
                flags.append(w)
            if "=" not in w and w in _GO_VALUE_FLAGS and w not in _GO_BOOL_FLAGS and i + 1 < len(words):
                flags.append(words[i + 1])
                i += 1
        else:
            packages.append(w)
        i += 1
    return flags, packages


def route(runners: list[Runner], workspace: Workspace, paths: list[str]) -> list[tuple[Runner, list[str]]]:
    """Each path to the runner whose folder holds it (the deepest), as a path relative to that folder."""
    if not paths:
        return [(r, []) for r in runners]
    chosen: dict[int, list[str]] = {}
    for given in paths:
        file_part, sep, node = given.partition("::")
        full = workspace.resolve(file_part)
        bare = Path(str(full).removesuffix("/...")) if str(full).endswith("/...") else full
        if not bare.exists():
            raise ToolCallError(f"path {given!r} does not exist in the workspace; pass a test file, folder or package "
                                "that exists (list_files shows them)", code=ErrorCode.FILE_NOT_FOUND)
        holders = [r for r in runners if full == r.root or r.root in full.parents]
        if not holders:
            names = ", ".join(r.label() for r in runners)
            raise ToolCallError(
                f"path {given!r} is in none of the projects run_tests found ({names}); pass a path inside one of them",
                code=ErrorCode.INVALID_ARGUMENTS,
            )
        runner = max(holders, key=lambda r: len(r.root.parts))
        rel = os.path.relpath(full, runner.root)
        if rel.startswith("-"):
            rel = f"./{rel}"
        chosen.setdefault(id(runner), []).append(rel + sep + node)
    return [(r, chosen[id(r)]) for r in runners if id(r) in chosen]


__all__ = ["ALL_RUNNERS", "overview", "RUNNERS", "ScriptRunner", "RUNNER_NAMES", "Runner", "Selection", "check_args", "detect", "forced",
           "from_command", "route"]
