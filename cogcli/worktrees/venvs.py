"""A virtualenv ``.worktreeinclude`` copied into a worktree, made the worktree's own.

Copied file by file (:mod:`cogcli.worktrees.include`), a virtualenv is two ways still the main
tree's: its interpreter links (``bin/python3 -> /usr/bin/python3``) lead out of the repository, so
the copy leaves them out and the worktree has no interpreter; and an editable install
(``pip install -e .``) names the main tree's source by its absolute path — setuptools'
``__editable__.NAME.pth`` (``/repo/src``) or its ``__editable___NAME_finder.py`` mapping, hatchling's
and pdm's ``_NAME.pth``, ``*.egg-link`` — so the worktree's tests would import the **main** tree's
code, and attempts would be graded on the wrong code.

So, in the copy only (the main tree's virtualenv is never written):

- each ``bin/python*`` link of the main virtualenv is made again: a link within ``bin/`` as it was,
  one that leads out to the interpreter it resolves to on this machine (a regular executable file
  outside the repository; anything else is left out);
- every path inside the main work tree in a ``.pth`` file, an ``.egg-link`` or a setuptools editable
  finder of its ``site-packages``, and the ``#!`` line of its ``bin/`` scripts, is rewritten to the
  same path in the worktree;

and a note says what was done (:func:`own_virtualenvs` returns it; ``cog edit --worktree`` and
``--attempts`` print it). Only regular files that really lie in the worktree are rewritten.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from pathlib import Path

log = logging.getLogger("cogcli")

#: an interpreter's name in a virtualenv's bin/
INTERPRETER = re.compile(r"^(python|pypy)[0-9.]*$")
#: the most of a file read for paths to rewrite (a larger one is left as it is)
READ_LIMIT = 16 << 20
#: the files of a site-packages that name where an editable install's source is
EDITABLE_FILES = ("*.pth", "*.egg-link", "__editable___*_finder.py")


def own_virtualenvs(top: Path, dest: Path, copied: list[str]) -> list[str]:
    """Make each virtualenv among ``copied`` (paths relative to ``top``) the worktree's; the notes."""
    top_real, dest_real = os.path.realpath(top), os.path.realpath(dest)
    notes = []
    for rel in sorted({os.path.dirname(p) for p in copied if os.path.basename(p) == "pyvenv.cfg"}):
        if not rel:
            continue
        links = _interpreters(top / rel, dest / rel, top_real)
        rewritten = _rewrite_paths(dest / rel, top_real, dest_real)
        said = f"note: {rel}/ copied into the worktree and made its own (the main tree's is untouched)"
        if links:
            said += f": its interpreter links made again ({', '.join(links)})"
        if rewritten:
            said += f"; the paths into the main tree rewritten to the worktree in {len(rewritten)} files " \
                    f"({', '.join(rewritten[:4])}{', …' if len(rewritten) > 4 else ''}), so its editable installs import " \
                    "the worktree's code"
        notes.append(said)
    return notes


def _interpreters(source_env: Path, dest_env: Path, top_real: str) -> list[str]:
    made = []
    try:
        names = sorted(os.listdir(source_env / "bin"))
    except OSError:
        return []
    for name in names:
        link = source_env / "bin" / name
        if not INTERPRETER.match(name) or not link.is_symlink() or os.path.lexists(dest_env / "bin" / name):
            continue
        target = os.readlink(link)
        if "/" not in target and INTERPRETER.match(target):  # python -> python3, within bin/
            new = target
        else:
            real = os.path.realpath(link)
            try:
                info = os.stat(real)
            except OSError:
                continue
            inside = real == top_real or real.startswith(top_real + os.sep)
            if inside or not stat.S_ISREG(info.st_mode) or not os.access(real, os.X_OK):
                continue
            new = real
        if not _really_in(dest_env / "bin", os.path.realpath(dest_env)):
            continue
        os.symlink(new, dest_env / "bin" / name)
        made.append(f"bin/{name} -> {new}")
    return made


def _rewrite_paths(dest_env: Path, top_real: str, dest_real: str) -> list[str]:
    env_real = os.path.realpath(dest_env)
    if not _really_in(dest_env, dest_real):
        return []
    candidates = [p for lib in ("lib", "lib64") for site in sorted((dest_env / lib).glob("python*/site-packages"))
                  for pattern in EDITABLE_FILES for p in sorted(site.glob(pattern))]
    scripts = sorted((dest_env / "bin").glob("*")) if (dest_env / "bin").is_dir() else []
    done = []
    for path in [*candidates, *scripts]:
        data = _read_regular(path, env_real)
        if data is None or top_real.encode() not in data:
            continue
        if path.parent.name == "bin":
            first, _, rest = data.partition(b"\n")
            if not first.startswith(b"#!" + top_real.encode() + os.sep.encode()):
                continue
            new = _moved(first, top_real, dest_real) + b"\n" + rest
        else:
            new = _moved(data, top_real, dest_real)
        if new != data:
            _write_regular(path, new)
            done.append(os.path.relpath(path, dest_env))
    return done


def _moved(data: bytes, top_real: str, dest_real: str) -> bytes:
    """Every path into the main tree (``top/…``, but never its ``.cog/``: the worktrees) moved to the worktree."""
    pattern = re.compile(re.escape(top_real.encode()) + rb"(?=[/'\"\n\r]|$)(?!/\.cog(?:/|$))")
    return pattern.sub(dest_real.encode().replace(b"\\", b"\\\\"), data)


def _really_in(path: Path, folder_real: str) -> bool:
    real = os.path.realpath(path)
    return real == folder_real or real.startswith(folder_real + os.sep)


def _read_regular(path: Path, env_real: str) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (no link) that lies in the copied env."""
    if not _really_in(path, env_real):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > READ_LIMIT:  # never written back cut short
            return None
        data = f.read(READ_LIMIT + 1)
    return data if len(data) <= READ_LIMIT else None  # (it grew since: left as it is too)


def _write_regular(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
