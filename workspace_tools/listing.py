"""The files of the workspace as a person would list them: .gitignore respected, junk skipped."""

from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path

from workspace_tools.paths import Workspace

#: folders never listed outside a git repository (inside one, .gitignore decides)
JUNK_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".nox", ".eggs", ".idea", ".cache"}
)
JUNK_SUFFIXES = (".pyc", ".pyo")
JUNK_NAMES = frozenset({".DS_Store", "Thumbs.db"})


def workspace_files(workspace: Workspace, base: Path) -> list[str]:
    """Files under ``base`` (a resolved path inside the workspace), as sorted posix paths
    relative to the workspace root. Uses ``git ls-files`` in a repository, a walk otherwise."""
    if base.is_file():
        return [workspace.relative(base)]
    if not base.is_dir():
        return []
    listed = _git_files(workspace, base)
    if listed is None:
        listed = _walk(base)
    prefix = workspace.relative(base)
    prefix = "" if prefix == "." else prefix + "/"
    return sorted({prefix + rel for rel in listed if (base / rel).is_file() or (base / rel).is_symlink()})


def _git_files(workspace: Workspace, base: Path) -> list[str] | None:
    from workspace_tools.gitrun import GitNotFound, run_git

    rel = workspace.relative(base)
    try:
        out = run_git(workspace.root, ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", rel])
    except (LookupError, GitNotFound, OSError, subprocess.SubprocessError):
        return None  # not a repository (a folder that only looks like one is not): walk instead
    if out.returncode != 0:
        return None  # git refused it: walk instead
    prefix = "" if rel == "." else rel.rstrip("/") + "/"
    return [os.fsdecode(p)[len(prefix) :] for p in out.stdout.split(b"\0") if p and os.fsdecode(p).startswith(prefix)]


def _walk(base: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d not in JUNK_DIRS and not d.endswith(".egg-info")]
        rel = Path(folder).relative_to(base)
        for name in files:
            if name in JUNK_NAMES or name.endswith(JUNK_SUFFIXES):
                continue
            found.append((rel / name).as_posix())
    return found


@lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex over posix paths: ``*`` and ``?`` stay within one folder, ``**`` spans
    folders (``**/`` may match none), ``[...]`` is a character class."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = pattern.find("]", i + 2)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = close + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def matches_glob(rel: str, pattern: str, *, base: str = "") -> bool:
    """Whether ``rel`` (relative to the workspace) matches ``pattern``: a pattern without ``/``
    is matched against the file name, one with ``/`` against the path from the workspace root
    or from ``base``."""
    regex = glob_regex(pattern.lstrip("/") if "/" in pattern else pattern)
    if "/" not in pattern:
        return regex.match(rel.rsplit("/", 1)[-1]) is not None
    if regex.match(rel):
        return True
    if base and base != "." and rel.startswith(base + "/"):
        return regex.match(rel[len(base) + 1 :]) is not None
    return False
