"""What the sandbox shows of the host for the project's Python (:mod:`workspace_tools.sandbox.python`).

Nothing is taken from a workspace file's text (a ``home =`` in ``pyvenv.cfg`` is an attacker's to
write): the base installation is what the env's interpreter, resolved on the host
(``os.path.realpath``), reports when run isolated by its real path — and only when that real
path is named like a Python, lies in no virtualenv and is a host file (outside every work tree) or
one of the person's tool installations (pyenv, asdf, mise, uv: :func:`~workspace_tools.host.programs.tool_roots`).
An interpreter that is a file in the workspace (``venv --copies``) is never run on the host.
Whatever is bound passes :func:`bind_allowed`: never ``$HOME``, ``/tmp``, ``/run``, ``/var/tmp``,
``/dev/shm`` or a folder above one of them.

The one exception, as DESIGN.md's security model allows it: the project's environment found
outside the workspace (a poetry or pipenv env in ``~/.cache`` or ``~/.local/share``, an activated
``$VIRTUAL_ENV``, a ``.venv`` linked to ``~/.virtualenvs/x``, a conda env) is shown read-only when
the host confirms it is a Python environment (:func:`confirmed_env`: its own interpreter answers,
``pyvenv.cfg`` beside it) — that folder alone (:func:`~workspace_tools.sandbox.view.env_bind_refusal`).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

from workspace_tools.sandbox.python_tools import TOOL_TIMEOUT
from workspace_tools.host.files import resolves_inside
from workspace_tools.host.programs import host_path, in_virtualenv, is_host_file, tool_roots
from workspace_tools.sandbox.interpreter import FIX, ProjectPython

_PYTHON_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def bind_allowed(path: str | os.PathLike[str], workspace: Path | None = None) -> bool:
    """Whether the sandbox may show the folder ``path`` read-only: the sandbox's one guard
    (:func:`workspace_tools.sandbox.view.bind_refusal`: never the home, ``/tmp``, ``/run``, ``/var/tmp``,
    ``/dev/shm``, the home's ``.ssh``/``.config``/…, nor a folder above one of them)."""
    from workspace_tools.sandbox.view import bind_refusal

    raw = os.fspath(path)
    if not raw or not os.path.isabs(raw) or _CONTROL.search(raw) or not os.path.isdir(raw):
        return False
    return not bind_refusal(Path(raw), workspace)


@functools.lru_cache(maxsize=32)
def _base_prefix(real: str, stamp: int) -> str | None:
    """``sys.base_prefix`` as the host interpreter at ``real`` reports it, run isolated (no site,
    no environment variables, no current folder), or None."""
    try:
        done = subprocess.run([real, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"], cwd="/",
                              env={"PATH": host_path(), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=TOOL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    text = done.stdout.decode("utf-8", "replace").strip()
    if not text or "\n" in text or not os.path.isabs(text) or _CONTROL.search(text):
        return None
    return text


def _owned(path: str) -> bool:
    """Owned by root or this user and writable by no one else (no other user planted or can swap it)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_uid in (0, os.geteuid()) and not st.st_mode & 0o022


def _host_interpreter(real: str) -> bool:
    """Whether the file at ``real`` (links followed) may be run on the host to ask its base
    installation: named like a Python, in no virtualenv, owned by root or this user and writable by
    no one else, and a host file (outside every work tree) or one of pyenv's or asdf's installations."""
    if not _PYTHON_NAME.match(os.path.basename(real)) or in_virtualenv(real):
        return False
    if not os.path.isfile(real) or not os.access(real, os.X_OK) or not (_owned(real) and _owned(os.path.dirname(real))):
        return False
    return is_host_file(real) or any(resolves_inside(real, root) for root in tool_roots())


def sandbox_paths(project: ProjectPython, workspace: Path) -> tuple[list[Path], list[str]]:
    """(host folders the sandbox must show read-only for ``project``'s interpreter to start,
    notes when something cannot be shown). The environment's own folder, when it lies outside the
    workspace (a poetry env in ``~/.cache``, a ``.venv`` linked to ``~/.virtualenvs/x``), is in
    :func:`environments` (it passes its own guard); every other folder passes :func:`bind_allowed`."""
    found: list[Path] = []
    notes: list[str] = []
    if project.fallback:
        return found, notes  # cog's own: the sandbox shows sys.prefix and sys.base_prefix itself
    real = project.real
    if resolves_inside(real, workspace):
        notes.append(
            f"The project's Python ({project.python}) is a file inside the workspace (a venv made with --copies?): "
            "cog does not run it on the host to learn its base installation, so the sandbox shows that only when it "
            f"is outside $HOME and /tmp. If it cannot start there, recreate the environment with links: {FIX}"
        )
    elif not _host_interpreter(real):
        if not (project.env is not None and resolves_inside(real, project.env)):  # a conda env's own python: the env is shown
            notes.append(
                f"The project's Python ({project.python}) resolves to {real}, which is not an interpreter installed on "
                "the host (it lies in a work tree or virtualenv, or is not named like python): cog does not run it to "
                "learn its base installation."
            )
    else:
        try:
            stamp = os.stat(real).st_mtime_ns
        except OSError:
            stamp = 0
        base = _base_prefix(real, stamp)
        if base is not None:
            found.append(Path(os.path.realpath(base)))
        install = Path(real).parent.parent  # …/bin/python3.11 -> its installation
        if base is None or not resolves_inside(real, Path(base)):
            found.append(install)
    shown = [p for p in dict.fromkeys(found) if bind_allowed(p, workspace)]
    return shown, notes


def environments(project: ProjectPython, workspace: Path) -> tuple[list[Path], list[str]]:
    """(the project's environment folder when it lies outside the workspace and the host confirmed
    it, for the sandbox to show read-only; a note when it cannot be shown, saying why)."""
    env = project.env
    if env is None or project.fallback:
        return [], []
    try:
        real = Path(os.path.realpath(env))
    except OSError:
        return [], []
    if resolves_inside(real, workspace):
        return [], []
    why = confirmed_env(real)
    if not why:
        from workspace_tools.sandbox.view import env_bind_refusal

        why = env_bind_refusal(real, workspace)
    if why:
        return [], [f"The project's environment {real} ({project.source}) is not shown to the tests: {why}."]
    return [real], []


#: asked of an environment's own interpreter, isolated and without site: it answers when it can start
_ANSWER = "import sys; print(sys.base_prefix)"


def confirmed_env(env: Path) -> str:
    """Why ``env`` (resolved, outside the workspace) is not confirmed a Python environment by the
    host ("" when it is): it holds ``pyvenv.cfg`` (or ``conda-meta/``) beside ``bin/python``, lies
    in no git work tree, is owned by root or this user and writable by no one else, and its own
    interpreter answers, run isolated (``-I -S``, from ``/``)."""
    from workspace_tools.sandbox.view import is_env_folder

    if not env.is_dir() or not is_env_folder(env):
        return "it is not a Python environment (no pyvenv.cfg nor conda-meta/ in it)"
    python = env / "bin" / "python"
    if not os.path.isfile(python) or not os.access(python, os.X_OK):
        return "it has no bin/python"
    if any(os.path.lexists(folder / ".git") for folder in (env, *env.parents)):
        return "it lies in a git work tree (another project's files, not an environment of the person's)"
    if not (_owned(str(env)) and _owned(str(env / "bin"))):
        return "it is not owned by you (or root), or others may write to it"
    try:
        stamp = os.stat(python).st_mtime_ns
    except OSError:
        return "it has no bin/python"
    if _env_answer(str(python), stamp) is None:
        return f"its interpreter ({python}) does not start"
    return ""


@functools.lru_cache(maxsize=32)
def _env_answer(python: str, stamp: int) -> str | None:
    try:
        done = subprocess.run([python, "-I", "-S", "-c", _ANSWER], cwd="/", env={"PATH": host_path(), "LANG": "C.UTF-8"},
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=TOOL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.decode("utf-8", "replace").strip()
    return text if done.returncode == 0 and os.path.isabs(text) and "\n" not in text else None
