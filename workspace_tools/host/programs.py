"""The programs cog itself starts on the host (git, bwrap, ip, the python that sets up the sandbox's
network), found where nothing the sandbox can write may stand in for them.

Tests run with the workspace writable, so a test can write ``.venv/bin/git`` or ``bin/bwrap``. A
person who works with the project's virtualenv activated (or direnv's ``PATH_add bin``) has such a
folder on ``PATH``, and a plain ``shutil.which("git")`` would then start the test's program on the
host, unsandboxed, the next time a read-only tool looks at the repository. So a program is looked
up on ``PATH`` skipping every folder that is relative, inside a git work tree (a workspace, or any
other repository), or inside a virtualenv; only the system's and the person's own install folders
(``/usr/bin``, ``/usr/local/bin``, ``~/.local/bin``, pyenv's, Homebrew's …) count, and the
person's own tool installations (:func:`tool_roots`: pipx's and Poetry's installer's virtualenvs,
uv's tools and Pythons, pyenv, asdf and mise, whose roots are git checkouts): they live in the
home, which the sandbox hides, or where the person's own variables say.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path


def host_program(name: str) -> str | None:
    """The absolute path of ``name`` on ``PATH`` in a folder no workspace can have planted it
    in (see the module), or None."""
    return _lookup(name, os.environ.get("PATH", os.defpath))


def host_path(path: str | None = None) -> str:
    """``PATH`` (default: cog's own) without the folders :func:`host_program` skips."""
    entries = (path if path is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep)
    roots = tool_roots()
    return os.pathsep.join(e for e in entries if _trusted_dir(e, roots))


def is_host_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (a program cog is about to start) lies outside every work tree and virtualenv."""
    return _trusted_dir(os.path.dirname(os.path.realpath(path)))


def _lookup(name: str, path: str) -> str | None:
    return _which(name, path, tool_roots())


@functools.lru_cache(maxsize=64)
def _which(name: str, path: str, roots: tuple[Path, ...]) -> str | None:
    return shutil.which(name, path=host_path(path))


def tool_roots() -> tuple[Path, ...]:
    """Where the person's own Python tools install themselves (resolved): pipx (``PIPX_HOME``,
    ``~/.local/pipx``, ``~/.local/share/pipx``), Poetry's installer (``POETRY_HOME``,
    ``~/.local/share/pypoetry``), uv (``UV_TOOL_DIR``, ``UV_PYTHON_INSTALL_DIR``,
    ``~/.local/share/uv``), pyenv (``PYENV_ROOT``, ``~/.pyenv``), asdf (``ASDF_DATA_DIR``,
    ``~/.asdf``), mise (``MISE_DATA_DIR``, ``~/.local/share/mise``). A program there is the person's
    although it lies in a virtualenv or a git checkout."""
    home = os.path.expanduser("~")
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    raw = [
        os.environ.get("PIPX_HOME") or os.path.join(home, ".local", "pipx"), os.path.join(data, "pipx"),
        os.environ.get("POETRY_HOME") or os.path.join(data, "pypoetry"),
        os.environ.get("UV_TOOL_DIR") or os.path.join(data, "uv", "tools"),
        os.environ.get("UV_PYTHON_INSTALL_DIR") or os.path.join(data, "uv", "python"),
        os.environ.get("PYENV_ROOT") or os.path.join(home, ".pyenv"),
        os.environ.get("ASDF_DATA_DIR") or os.path.join(home, ".asdf"),
        os.environ.get("MISE_DATA_DIR") or os.path.join(data, "mise"),
    ]
    return _resolved(tuple(raw))


@functools.lru_cache(maxsize=16)
def _resolved(raw: tuple[str | None, ...]) -> tuple[Path, ...]:
    """The folders ``raw`` names, resolved (once per set of names: each is a few ``lstat`` calls)."""
    return tuple(dict.fromkeys(Path(os.path.realpath(r)) for r in raw if r and os.path.isabs(r) and r != "/"))


def _trusted_dir(entry: str, roots: tuple[Path, ...] | None = None) -> bool:
    return _trusted(entry, tool_roots() if roots is None else roots)


@functools.lru_cache(maxsize=256)
def _trusted(entry: str, roots: tuple[Path, ...]) -> bool:
    if not entry or not os.path.isabs(entry):
        return False
    here = Path(os.path.realpath(entry))
    for folder in (here, *here.parents):
        if folder in roots and folder != Path("/"):
            return True  # the person's tool installation (a virtualenv, a git checkout of pyenv)
        if os.path.lexists(folder / ".git") or os.path.lexists(folder / "pyvenv.cfg"):
            return False
    return True


def in_virtualenv(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies in a virtualenv (a folder above it holds ``pyvenv.cfg``)."""
    here = Path(os.path.realpath(path))
    return any(os.path.lexists(folder / "pyvenv.cfg") for folder in here.parents)


def trusted_python() -> str:
    """A python this user can run that no test could have written (cog's own when it can), or "":
    what runs with capabilities, in the sandbox or beside it (the sandbox's network set-up, :mod:`workspace_tools.sandbox.shared_net`)."""
    # cog installed in the project's own virtualenv: its python is a workspace file, so the interpreter it links to
    own = os.path.realpath(sys.executable)
    python = own if os.access(own, os.X_OK) and is_host_file(own) else host_program("python3") or ""
    if not python and os.access(own, os.X_OK) and not in_virtualenv(own):
        python = own  # e.g. pyenv's interpreter (a git checkout in the home, which no test can write)
    return python if python and os.access(python, os.X_OK) else ""
