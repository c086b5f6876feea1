"""The checkers diagnostics runs, each declared once: which files it checks, how its project is
found, where its program comes from, the command, and the reader of its output.

=============  ==========  =============================================  ===============================
source         kind        runs when                                      program from
=============  ==========  =============================================  ===============================
ruff           lint        a Python file changed (always)                 the project's env, cog's, PATH
mypy           types       the project configures mypy                    the project's env, cog's, PATH
pyright        types       pyrightconfig.json or ``[tool.pyright]``       the project's env, PATH
basedpyright   types       ``[tool.basedpyright]``                        the project's env, PATH
tsc            types       tsconfig.json                                  node_modules/.bin
eslint         lint        an ESLint config file                          node_modules/.bin
go-vet         lint        go.mod                                         PATH (the Go toolchain)
gopls          types       go.mod and gopls installed                     PATH
cargo-check    types       Cargo.toml                                     PATH (the Rust toolchain)
=============  ==========  =============================================  ===============================

A source's environment is its test runner's (:mod:`workspace_tools.runners`): the project's Python
for the Python checkers, Go's module and build caches offline, cargo offline. Its project is the
nearest folder above the changed file holding one of its ``markers``, inside the workspace.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from workspace_tools.diagnostics import parsers
from workspace_tools.host.programs import host_program
from workspace_tools.runners.base import Invocation, Selection, find_tool
from workspace_tools.workspace.paths import Workspace

PYTHON_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", "mypy.ini", ".mypy.ini", "pyrightconfig.json", "ruff.toml", ".ruff.toml")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


@dataclass
class Found:
    """A source ready to run in one project: its program and the environment its runner gives."""

    program: str
    invocation: Invocation
    #: the project's Python, for a type checker that needs its packages
    python: str | None = None


class Source:
    name: ClassVar[str] = ""
    #: lint (fast: always worth running) or types (a type checker or a build: may be slow)
    kind: ClassVar[str] = "lint"
    suffixes: ClassVar[tuple[str, ...]] = ()
    markers: ClassVar[tuple[str, ...]] = ()
    #: the host toolchain the sandbox shows for it (go, cargo, node); None: Python's
    toolchain: ClassVar[str | None] = None
    #: files: it is given the changed files; project: it checks its whole project (tsc, cargo)
    scope: ClassVar[str] = "files"
    read: ClassVar[parsers.Reader]
    found_by: ClassVar[str] = ""

    def configured(self, root: Path) -> bool:
        return True

    def find(self, workspace: Workspace, root: Path) -> Found | None:
        raise NotImplementedError

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        raise NotImplementedError


class _PythonSource(Source):
    suffixes = (".py", ".pyi")
    markers = PYTHON_MARKERS
    #: whether cog's own environment may supply it (cog's dev tools: ruff, mypy)
    from_cog: ClassVar[bool] = True

    def find(self, workspace: Workspace, root: Path) -> Found | None:
        from workspace_tools.runners.pytest import PytestRunner
        from workspace_tools.sandbox.python import find_project_python

        project = find_project_python(root, workspace.root)
        candidates = []
        if project.env is not None:
            candidates.append(project.env / "bin" / self.name)
        if self.from_cog:
            candidates.append(Path(sys.prefix) / "bin" / self.name)
        program = next((str(c) for c in candidates if c.is_file() and os.access(c, os.X_OK)), None) or host_program(self.name)
        if program is None:
            return None
        runner = PytestRunner(workspace, root)
        inv = runner.invocation(Selection())  # the project's Python as the sandbox shows it for the tests
        runner.close()
        inv.readable.append(Path(program).parent)
        env = {}
        if project.env is not None and (project.env / "bin").is_dir():  # first on PATH, as an activated venv puts it
            env = {"PATH": f"{project.env / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(project.env)}
        return Found(program=program, invocation=Invocation(argv=[], env=env, readable=inv.readable, environments=inv.environments),
                     python=project.python)


class Ruff(_PythonSource):
    name = "ruff"
    found_by = "a Python file changed; ruff in the project's environment, cog's, or on PATH"
    read = staticmethod(parsers.ruff_json)

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        # --no-cache: a check leaves no .ruff_cache in the person's tree
        return [found.program, "check", "--output-format", "json", "--no-fix", "--exit-zero", "--quiet", "--no-cache",
                *map(str, files)]


class Mypy(_PythonSource):
    name = "mypy"
    kind = "types"
    found_by = "mypy.ini, .mypy.ini, [tool.mypy] in pyproject.toml or [mypy] in setup.cfg"
    read = staticmethod(parsers.mypy_json)

    def configured(self, root: Path) -> bool:
        return ((root / "mypy.ini").is_file() or (root / ".mypy.ini").is_file() or "[tool.mypy]" in _text(root / "pyproject.toml")
                or "[mypy]" in _text(root / "setup.cfg"))

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        argv = [found.program, "-O", "json", "--no-error-summary", "--no-pretty", "--show-column-numbers"]
        if not (root / ".mypy_cache").is_dir():  # the project's own cache is used; else none is left in the tree
            argv.append(f"--cache-dir={os.devnull}")
        if found.python:
            argv += ["--python-executable", found.python]
        return [*argv, *map(str, files)]


class Pyright(_PythonSource):
    name = "pyright"
    kind = "types"
    from_cog = False
    found_by = "pyrightconfig.json or [tool.pyright] in pyproject.toml"
    read = staticmethod(parsers.pyright_json)

    def configured(self, root: Path) -> bool:
        return (root / "pyrightconfig.json").is_file() or "[tool.pyright]" in _text(root / "pyproject.toml")

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        return [found.program, "--outputjson", *(["--pythonpath", found.python] if found.python else []), *map(str, files)]


class BasedPyright(Pyright):
    name = "basedpyright"
    found_by = "[tool.basedpyright] in pyproject.toml"

    def configured(self, root: Path) -> bool:
        return "[tool.basedpyright]" in _text(root / "pyproject.toml")


class _NodeSource(Source):
    suffixes = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
    toolchain = "node"

    def find(self, workspace: Workspace, root: Path) -> Found | None:
        program = find_tool(self.name, root, workspace.root)
        if program is None or host_program("node") is None:
            return None
        return Found(program=program, invocation=Invocation(argv=[]))


class Tsc(_NodeSource):
    name = "tsc"
    kind = "types"
    markers = ("tsconfig.json",)
    scope = "project"
    found_by = "tsconfig.json, with typescript in node_modules"
    read = staticmethod(parsers.tsc_text)

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        return [found.program, "--noEmit", "--pretty", "false", "-p", str(root / "tsconfig.json")]


class Eslint(_NodeSource):
    name = "eslint"
    markers = ("eslint.config.js", "eslint.config.mjs", "eslint.config.cjs", "eslint.config.ts", ".eslintrc.js", ".eslintrc.cjs",
               ".eslintrc.json", ".eslintrc.yml", ".eslintrc.yaml", ".eslintrc")
    found_by = "an ESLint config file, with eslint in node_modules"
    read = staticmethod(parsers.eslint_json)

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        return [found.program, "-f", "json", "--no-warn-ignored", *map(str, files)]


class GoVet(Source):
    name = "go-vet"
    suffixes = (".go",)
    markers = ("go.mod",)
    toolchain = "go"
    found_by = "go.mod (go vet on the changed files' packages)"
    program_name: ClassVar[str] = "go"
    read = staticmethod(parsers.go_text)

    def find(self, workspace: Workspace, root: Path) -> Found | None:
        from workspace_tools.runners.go import GoRunner

        program = host_program(self.program_name)
        if program is None or host_program("go") is None:
            return None
        inv = GoRunner(workspace, root).invocation(Selection())  # offline, its module and build caches
        return Found(program=program, invocation=inv)

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        folders = sorted({os.path.relpath(f.parent, root) for f in files})
        return [found.program, "vet", *["." if rel == "." else f"./{rel}" for rel in folders]]


class Gopls(GoVet):
    name = "gopls"
    kind = "types"
    found_by = "go.mod, with gopls installed (gopls check on the changed files)"
    program_name = "gopls"

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        return [found.program, "check", *map(str, files)]


class CargoCheck(Source):
    name = "cargo-check"
    kind = "types"
    suffixes = (".rs",)
    markers = ("Cargo.toml",)
    toolchain = "cargo"
    scope = "project"
    found_by = "Cargo.toml (cargo check --message-format=json, offline)"
    read = staticmethod(parsers.cargo_json)

    def find(self, workspace: Workspace, root: Path) -> Found | None:
        from workspace_tools.runners.cargo import CargoRunner

        program = host_program("cargo")
        if program is None:
            return None
        return Found(program=program, invocation=CargoRunner(workspace, root).invocation(Selection()))

    def argv(self, found: Found, root: Path, files: list[Path]) -> list[str]:
        return [found.program, "check", "--offline", "--message-format=json", "--color", "never", "--all-targets"]


#: every source, in the order they run and are listed
SOURCES: tuple[Source, ...] = (Ruff(), Mypy(), Pyright(), BasedPyright(), Eslint(), Tsc(), GoVet(), Gopls(), CargoCheck())
SOURCE_NAMES = tuple(s.name for s in SOURCES)


def project_root(source: Source, file: Path, workspace_root: Path) -> Path | None:
    """The nearest folder above ``file`` (inside the workspace) holding one of the source's markers;
    for a Python file with none, the workspace root."""
    here = file.parent
    while True:
        if any((here / m).is_file() for m in source.markers):
            return here
        if here == workspace_root or workspace_root not in here.parents:
            break
        here = here.parent
    return workspace_root if isinstance(source, Ruff) else None
