"""The workspace boundary: every path a tool is given goes through :meth:`Workspace.resolve`.

A path is refused — before anything is read or written — when it holds a NUL byte, starts
with ``~``, is absolute outside the root, climbs out with ``..``, passes through a symlink
that leads outside, names cog's own state (``.cog/``, at any depth: chat history, threads,
undo journals — refused to every tool, read or write, with ``COG_STATE``), or (for writes)
points into ``.git/``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import NoReturn

from cogcli.contract.errors import ConfigError, ErrorCode, ToolCallError
from workspace_tools.workspace.envdirs import COG_DIR
from workspace_tools.host.files import repository

#: the longest path Linux accepts; a longer one is refused before it is resolved (and never echoed whole)
PATH_MAX = 4096


class Workspace:
    """A directory the tools may read and write; nothing outside it is reachable through them."""

    root: Path

    def __init__(self, root: str | Path) -> None:
        given = Path(root).expanduser()
        if not given.is_dir():
            raise ConfigError(f"workspace root {str(given)!r} is not a directory")
        self.root = given.resolve()
        # the root as the caller spelled it (absolute): an absolute path under it is inside too,
        # even when the root itself sits behind a symlink (macOS /tmp, a symlinked checkout)
        self._given = Path(os.path.abspath(given))
        # whether it is a git repository is decided now, before any test ran, and kept (a .git
        # a test writes later is just a file): see workspace_tools.host.files
        repository(self.root)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str, *, for_write: bool = False) -> Path:
        """The absolute, symlink-free path of ``path`` inside the workspace.

        Raises :class:`ToolCallError` with code ``PATH_OUTSIDE_WORKSPACE`` naming the path and
        why it was refused. The path need not exist (a file to be created).
        """
        if not isinstance(path, str):
            raise ToolCallError(f"path must be a string, got {type(path).__name__}", code=ErrorCode.INVALID_ARGUMENTS)
        if path.strip() == "":
            raise ToolCallError(
                "path is empty; give a path relative to the workspace root", code=ErrorCode.INVALID_ARGUMENTS
            )
        if len(path) > PATH_MAX:
            raise ToolCallError(
                f"path is {len(path):,} characters long (it starts {path[:40]!r}); no path is longer than "
                f"{PATH_MAX:,} characters: give the path of a file in the workspace, relative to its root",
                code=ErrorCode.INVALID_ARGUMENTS,
            )
        if "\x00" in path:
            self._refuse(path, "it contains a NUL byte")
        if path.startswith("~"):
            self._refuse(path, "'~' (a home directory) is outside the workspace")

        candidate = Path(path)
        if candidate.is_absolute():
            candidate = self._under_root(candidate)
        else:
            candidate = self.root / candidate
        try:
            real = Path(os.path.realpath(candidate))
        except (OSError, ValueError) as exc:
            self._refuse(path, f"it cannot be resolved ({exc})")
        if not _is_within(real, self.root):
            self._refuse(path, self._why_outside(path, candidate))
        if _names_cog_state(real.relative_to(self.root).parts) or _names_cog_state(PurePosixPath(os.path.normpath(path)).parts):
            raise ToolCallError(
                f"path {path.replace(chr(0), '')!r} refused: {COG_DIR}/ holds cog's own state (chat history, "
                "threads, undo journals), which no tool reads or writes; work on the project's files instead",
                code=ErrorCode.COG_STATE,
            )

        if for_write:
            parts = real.relative_to(self.root).parts
            if any(part.lower() == ".git" for part in parts):
                self._refuse(path, "files in .git/ belong to git; change the repository with git, not by writing there", fix="")
        return real

    def relative(self, path: Path) -> str:
        """``path`` as a posix path relative to the root (``.`` for the root itself)."""
        try:
            rel = Path(path).relative_to(self.root)
        except ValueError:
            try:
                rel = Path(path).relative_to(self._given)
            except ValueError:
                return Path(path).as_posix()
        return rel.as_posix() if rel.parts else "."

    def display(self, path: str) -> str:
        """How a client shows a path argument: relative to the root when it resolves, else as given."""
        try:
            return self.relative(self.resolve(path))
        except ToolCallError:
            return path if len(path) <= 200 else path[:200] + "…"

    # -- helpers ---------------------------------------------------------------------------

    def _under_root(self, absolute: Path) -> Path:
        normal = Path(os.path.normpath(absolute))
        for base in (self.root, self._given):
            if _is_within(normal, base):
                return self.root / normal.relative_to(base)
        self._refuse(str(absolute), "it is an absolute path outside the workspace")
        raise AssertionError  # unreachable

    def _why_outside(self, path: str, candidate: Path) -> str:
        if ".." in PurePosixPath(path).parts and not _is_within(Path(os.path.normpath(candidate)), self.root):
            return "'..' leads out of the workspace"
        # find the first symlink in the chain that points outside
        current = self.root
        for part in candidate.relative_to(self.root).parts:
            current = current / part
            try:
                is_link = current.is_symlink()
            except (OSError, ValueError):
                break
            if is_link:
                target = Path(os.path.realpath(current))
                if not _is_within(target, self.root):
                    return f"{self.relative(current)} is a symlink to {target}, outside the workspace"
        return "it resolves outside the workspace"

    def _refuse(self, path: str, why: str, *, fix: str | None = None) -> NoReturn:
        shown = path.replace("\x00", "\\0")
        if fix is None:
            fix = f" Use a path inside the workspace {str(self.root)!r}, relative to it."
        raise ToolCallError(f"path {shown!r} refused: {why}.{fix}", code=ErrorCode.PATH_OUTSIDE_WORKSPACE)


def _names_cog_state(parts: tuple[str, ...]) -> bool:
    # case-folded: on a case-insensitive file system .COG is the same folder
    return any(part.lower() == COG_DIR for part in parts)


def _is_within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


_CONTROL_IN_NAME = re.compile(r"[\x00-\x1f\x7f]")


def shown_name(rel: str) -> str:
    """A workspace path as a line of a tool's text shows it: as it is, or JSON-quoted when it
    holds a newline or another control character (``"nl\\nname.txt"``), so one name never reads
    as two, as git quotes such names."""
    return json.dumps(rel, ensure_ascii=False) if _CONTROL_IN_NAME.search(rel) else rel
