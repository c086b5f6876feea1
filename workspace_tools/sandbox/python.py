"""The project's Python: which interpreter runs the workspace's tests, found the way the
project's own tools find it. What the sandbox must show for it: :mod:`workspace_tools.sandbox.python_binds`.

First match wins, in the runner's folder and then the workspace root:

1. ``.venv`` or ``venv`` (their ``bin/python``; a link to a venv outside is followed, and the
   sandbox shows it when the host confirms it), else any folder there holding ``pyvenv.cfg``; a tox
   or nox environment (``.tox/<env>``, ``.nox/<env>``) that has pytest when there is none of those,
   or when it has no pytest (then the project runs its tests through tox or nox);
2. uv: with ``uv.lock``, the person's ``UV_PROJECT_ENVIRONMENT`` (uv's default, ``.venv``, is 1.);
3. an activated ``$VIRTUAL_ENV`` that is not cog's own (``sys.prefix``), or ``$CONDA_PREFIX``;
4. the person's tools, declared once in :mod:`workspace_tools.sandbox.python_tools` (Poetry, Pipenv, Hatch, PDM,
   conda), asked only when installed on the host, never when the workspace would steer them; the
   environment a tool itself runs the tests in first (Hatch's ``hatch-test``, when made and holding pytest);
5. when the project names its Python version (``.python-version``, ``.tool-versions``): the
   person's own ``python3`` on their PATH, if pytest is installed for it (pyenv, asdf and mise shims
   pick that version as in their shell), with a note saying no project environment was found;
6. else cog's own interpreter, with a note saying so (:meth:`ProjectPython.fallback_note`).

No workspace file picks the program (every tool is the person's, found by
:func:`~workspace_tools.host.programs.host_program`) or the answer (an answer is a path the person's
tool printed, checked to hold an interpreter, and shown to the sandbox only once the host confirmed it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from workspace_tools.sandbox import python_tools as envtools
from workspace_tools.sandbox.python_tools import _answers  # noqa: F401 (the tools' answers, cleared by tests)
from workspace_tools.host.programs import in_virtualenv, is_host_file, tool_roots  # noqa: F401 (kept importable from here)
from workspace_tools.sandbox.interpreter import FIX, ProjectPython
from workspace_tools.sandbox.python_binds import bind_allowed, confirmed_env, environments, sandbox_paths  # noqa: F401

#: in-project folders tried first, in this order
VENV_NAMES = (".venv", "venv")
#: folders holding one environment per folder (tox's, nox's)
ENV_FARMS = (".tox", ".nox")
#: folders searched for a ``pyvenv.cfg`` folder (beyond .venv/venv) at most
SCAN_LIMIT = 500
#: the environment variable the runner passes the workspace's packages to the pytest plugin in
PACKAGES_ENV = "COGCLI_WORKSPACE_PACKAGES"


# -- finding the environment -------------------------------------------------------------------


def _python_in(env: Path) -> Path | None:
    candidate = env / "bin" / "python"
    try:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    except OSError:
        return None
    return None


def _has_pytest(env: Path) -> bool:
    return any((lib / "site-packages" / "pytest").is_dir() for lib in (env / "lib").glob("python*"))


def _in_project(base: Path) -> ProjectPython | None:
    """``.venv``, ``venv`` or a ``pyvenv.cfg`` folder; a tox or nox env that has pytest when there is
    none, or when that one lacks pytest (the project runs its tests through tox or nox)."""
    own = _own_env(base)
    if own is not None and own.env is not None and _has_pytest(own.env):
        return own
    return _farm_env(base) or own


def _own_env(base: Path) -> ProjectPython | None:
    for name in VENV_NAMES:
        found = _python_in(base / name)
        if found is not None:
            return ProjectPython(str(found), name, base / name)
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)[:SCAN_LIMIT]
    except OSError:
        return None
    for entry in entries:
        if entry.name in VENV_NAMES or entry.name in (".git", ".cog", "node_modules", *ENV_FARMS):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        env = Path(entry.path)
        if (env / "pyvenv.cfg").is_file():
            found = _python_in(env)
            if found is not None:
                return ProjectPython(str(found), "pyvenv.cfg", env)
    return None


def _farm_env(base: Path) -> ProjectPython | None:
    """tox's and nox's envs: the first (by name) that has pytest."""
    for farm in ENV_FARMS:
        try:
            envs = sorted((e for e in os.scandir(base / farm) if e.is_dir(follow_symlinks=False)), key=lambda e: e.name)
        except OSError:
            continue
        for entry in envs[:SCAN_LIMIT]:
            env = Path(entry.path)
            found = _python_in(env)
            if found is not None and (env / "pyvenv.cfg").is_file() and _has_pytest(env):
                return ProjectPython(str(found), farm.lstrip("."), env)
    return None


def _uv(base: Path) -> ProjectPython | None:
    """``uv.lock`` with the person's ``UV_PROJECT_ENVIRONMENT`` (relative: to the project)."""
    setting = os.environ.get("UV_PROJECT_ENVIRONMENT", "").strip()
    if not setting or not (base / "uv.lock").is_file():
        return None
    env = Path(setting).expanduser()
    env = env if env.is_absolute() else base / env
    found = _python_in(env)
    return ProjectPython(str(found), "uv", env, trusted_env=True) if found is not None else None


def _activated() -> ProjectPython | None:
    """An activated virtualenv (or conda env) that is not the one cog runs in."""
    own = (os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix))
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        raw = os.environ.get(variable, "").strip()
        if not raw or not os.path.isabs(raw) or os.path.realpath(raw) in own:
            continue
        if variable == "CONDA_PREFIX" and os.environ.get("CONDA_DEFAULT_ENV", "") == "base":
            continue  # conda's base, active in every shell: not the project's
        found = _python_in(Path(raw))
        if found is not None:
            return ProjectPython(str(found), f"${variable}", Path(raw), trusted_env=True)
    return None


def _ask_tools(base: Path, notes: list[str]) -> ProjectPython | None:
    for tool in envtools.TOOLS:
        if not tool.applies(base):
            continue
        if tool.program() is None:
            if (note := tool.skipped_note() or tool.missing_note(base)) is not None:
                notes.append(note)
            continue
        if tool.steering(base):
            notes.append(tool.refused_note())
            continue
        for made in envtools.ask_test_envs(tool, base):  # where the tool itself runs the tests (hatch test)
            env = Path(made)
            if (env / "pyvenv.cfg").is_file() and _has_pytest(env):
                return ProjectPython(str(env / "bin" / "python"), tool.name, env, trusted_env=True)
        answer = envtools.ask(tool, base)
        if answer is None:
            continue
        if tool.answers_python:
            if not (os.path.isfile(answer) and os.access(answer, os.X_OK)):
                continue
            env = Path(answer).parent.parent
            if (env / "pyvenv.cfg").is_file():
                return ProjectPython(answer, tool.name, env, trusted_env=True)
            return ProjectPython(answer, tool.name)  # a bare interpreter (PDM's PEP 582 mode)
        found = _python_in(Path(answer))
        if found is not None:
            return ProjectPython(str(found), tool.name, Path(answer), trusted_env=True)
    return None


#: files by which a project names its Python version for pyenv, asdf and mise shims
VERSION_FILES = (".python-version", ".tool-versions")


def _person_python(base: Path) -> ProjectPython | None:
    """The person's ``python3`` when the project names its version for their shims (``.python-version``)."""
    if not any((base / name).is_file() for name in VERSION_FILES):
        return None
    answer = envtools.person_python(base)
    if answer is None or not os.path.isfile(answer):
        return None
    if os.path.realpath(answer) == os.path.realpath(sys.executable) and sys.prefix == sys.base_prefix:
        return None  # cog's own interpreter: the fallback says so
    return ProjectPython(answer, "PATH")


def find_project_python(root: Path, workspace_root: Path | None = None, *, ask: bool = True) -> ProjectPython:
    """The interpreter that runs the tests of the project in ``root`` (see the module). ``ask=False``:
    no program is run to find it (steps 1–3 only), for what needs it cheaply."""
    bases = list(dict.fromkeys([Path(root), Path(workspace_root or root)]))
    for base in bases:
        found = _in_project(base)
        if found is not None:
            return found
    for base in bases:
        found = _uv(base)
        if found is not None:
            return found
    found = _activated()
    if found is not None:
        return found
    notes: list[str] = []
    if not ask:
        return ProjectPython(sys.executable, "cog", None)
    for base in bases:
        found = _ask_tools(base, notes)
        if found is not None:
            return ProjectPython(found.python, found.source, found.env, found.trusted_env, tuple(notes))
    found = _person_python(bases[0])
    if found is not None:
        return ProjectPython(found.python, found.source, notes=tuple(notes))
    return ProjectPython(sys.executable, "cog", None, notes=tuple(notes))


def interpreter_homes(workspace: Path) -> list[Path]:
    """What the sandbox shows for the workspace's own Python (its root's environment), found
    without running any program (:func:`find_project_python` with ``ask=False``)."""
    workspace = Path(workspace)
    return sandbox_paths(find_project_python(workspace, workspace, ask=False), workspace)[0]


# -- the workspace's own packages ------------------------------------------------------------------


def workspace_packages(roots: Iterable[Path], limit: int = 200) -> dict[str, list[str]]:
    """Top-level packages of the workspace's code: ``src/<name>/`` and ``<name>/`` holding
    ``__init__.py`` in each of ``roots`` (real folders, not links), name -> their folders."""
    found: dict[str, list[str]] = {}
    for root in dict.fromkeys(Path(r) for r in roots):
        for parent in (root / "src", root):
            try:
                entries = sorted(os.scandir(parent), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if len(found) >= limit:
                    return found
                name = entry.name
                if not name.isidentifier() or name.startswith("."):
                    continue
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                if (Path(entry.path) / "__init__.py").is_file():
                    paths = found.setdefault(name, [])
                    if entry.path not in paths:
                        paths.append(entry.path)
    return found
