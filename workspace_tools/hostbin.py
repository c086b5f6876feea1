"""The programs cog itself starts on the host (git, bwrap, ip, the python that sets up the sandbox's
network), found where nothing the sandbox can write may stand in for them.

Tests run with the workspace writable, so a test can write ``.venv/bin/git`` or ``bin/bwrap``. A
person who works with the project's virtualenv activated (or direnv's ``PATH_add bin``) has such a
folder on ``PATH``, and a plain ``shutil.which("git")`` would then start the test's program on the
host, unsandboxed, the next time a read-only tool looks at the repository. So a program is looked
up on ``PATH`` skipping every folder that is relative, inside a git work tree (a workspace, or any
other repository), or inside a virtualenv; only the system's and the person's own install folders
(``/usr/bin``, ``/usr/local/bin``, ``~/.local/bin``, pyenv's, Homebrew's …) count.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path


def host_program(name: str) -> str | None:
    """The absolute path of ``name`` on ``PATH`` in a folder no workspace can have planted it
    in (see the module), or None."""
    return _lookup(name, os.environ.get("PATH", os.defpath))


def host_path(path: str | None = None) -> str:
    """``PATH`` (default: cog's own) without the folders :func:`host_program` skips."""
    entries = (path if path is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep)
    return os.pathsep.join(e for e in entries if _trusted_dir(e))


def is_host_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (a program cog is about to start) lies outside every work tree and virtualenv."""
    return _trusted_dir(os.path.dirname(os.path.realpath(path)))


@functools.lru_cache(maxsize=64)
def _lookup(name: str, path: str) -> str | None:
    return shutil.which(name, path=host_path(path))


@functools.lru_cache(maxsize=256)
def _trusted_dir(entry: str) -> bool:
    if not entry or not os.path.isabs(entry):
        return False
    here = Path(os.path.realpath(entry))
    for folder in (here, *here.parents):
        if os.path.lexists(folder / ".git") or os.path.lexists(folder / "pyvenv.cfg"):
            return False
    return True


def in_virtualenv(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies in a virtualenv (a folder above it holds ``pyvenv.cfg``)."""
    here = Path(os.path.realpath(path))
    return any(os.path.lexists(folder / "pyvenv.cfg") for folder in here.parents)
