"""Which workspace files look like secrets: the one place that decides.

``read_file`` and ``edit_file`` refuse them (code ``SECRET_FILE``), ``search_text`` and
``list_files`` leave them out and count them, ``write_file`` will not replace one. A person lets
the tools at one with ``--allow-secret PATH``.

A pattern without ``/`` matches the file's name or any folder name on its path (``.env``,
``*.pem``); one ending in ``/`` matches a folder name (``.ssh/``); one with ``/`` inside matches
the path from the workspace root (``config/*.json``; ``**`` spans folders). Matching ignores case.
``.env.example`` and other templates are secrets too (``.env.*``): allow them by path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.workspace.listing import glob_regex, linear_regex

if TYPE_CHECKING:
    from workspace_tools.workspace.paths import Workspace

DEFAULT_SECRET_GLOBS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "id_dsa*",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".envrc",
    ".pgpass",
    ".htpasswd",
    "*.p12",
    "*.pfx",
    ".aws/",
    ".gnupg/",
    ".ssh/",
)


@dataclass(frozen=True)
class SecretPolicy:
    """Secret-looking paths: :data:`DEFAULT_SECRET_GLOBS` plus ``globs``, except the ``allowed``
    paths (workspace-relative posix paths; a folder allows what is under it)."""

    globs: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()

    @classmethod
    def for_workspace(cls, workspace: Workspace, globs: Iterable[str] = (), allow: Iterable[str] = ()) -> SecretPolicy:
        """A policy whose ``allow`` paths (relative to the workspace, or absolute inside it) are
        resolved as the tools resolve paths, so ``./.env`` and ``sub/../.env`` allow ``.env``."""
        allowed = []
        for path in allow:
            try:
                allowed.append(workspace.relative(workspace.resolve(str(path))))
            except ToolCallError:
                allowed.append(PurePosixPath(str(path)).as_posix())
        return cls(tuple(g for g in globs if g.strip()), tuple(allowed))

    @cached_property
    def _rules(self) -> list[tuple[str, re.Pattern[str]]]:
        rules = []
        for glob in (*DEFAULT_SECRET_GLOBS, *self.globs):
            glob = glob.strip()
            if glob.endswith("/"):
                rules.append(("folder", _compile(glob.rstrip("/"))))
            elif "/" in glob:
                rules.append(("path", _compile(glob.lstrip("/"))))
            else:
                rules.append(("name", _compile(glob)))
        return rules

    def is_allowed(self, rel: str) -> bool:
        return any(rel == a or a == "." or rel.startswith(a + "/") for a in self.allowed)

    @cached_property
    def _combined(self) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None, re.Pattern[str] | None]:
        """One regex per kind of rule (path, folder name, file or folder name): a listing of
        thousands of files asks once per path and once per distinct name."""
        def union(kind: str) -> re.Pattern[str] | None:
            parts = [regex.pattern for k, regex in self._rules if k == kind]
            return linear_regex("|".join(f"(?:{p})" for p in parts), ignore_case=True) if parts else None

        return union("path"), union("folder"), union("name")

    @cached_property
    def _name_memo(self) -> dict[tuple[str, bool], bool]:
        return {}

    def _part_matches(self, part: str, *, folder: bool) -> bool:
        key = (part, folder)
        found = self._name_memo.get(key)
        if found is None:
            _, folder_rule, name_rule = self._combined
            found = bool(
                (name_rule is not None and name_rule.match(part))
                or (folder and folder_rule is not None and folder_rule.match(part))
            )
            if len(self._name_memo) < 100_000:
                self._name_memo[key] = found
        return found

    def matches(self, rel: str) -> bool:
        """Whether ``rel`` (a workspace-relative posix path) looks like a secret, allowed or not."""
        path_rule = self._combined[0]
        if path_rule is not None and path_rule.match(rel):
            return True
        if "//" in rel or "./" in rel:
            rel = "/".join(PurePosixPath(rel).parts)
        folder, _, name = rel.rpartition("/")
        return self._folder_matches(folder) or self._part_matches(name, folder=False)

    def _folder_matches(self, folder: str) -> bool:
        """Whether any folder name on ``folder`` (a workspace-relative path, '' for the root) matches."""
        if not folder:
            return False
        key = (folder + "/", True)
        found = self._name_memo.get(key)
        if found is None:
            parent, _, name = folder.rpartition("/")
            found = self._folder_matches(parent) or self._part_matches(name, folder=True)
            if len(self._name_memo) < 100_000:
                self._name_memo[key] = found
        return found

    def is_secret(self, rel: str) -> bool:
        """Whether the tools keep away from ``rel``: it looks like a secret and is not allowed."""
        return self.matches(rel) and not self.is_allowed(rel)

    def check(self, workspace: Workspace, given: str, resolved: Path) -> None:
        """Raise ``SECRET_FILE`` when the path as given, or the file it resolves to (through a
        symlink), is a secret."""
        rel = workspace.relative(resolved)
        named = _given_relative(workspace, given)
        for candidate in (rel, named):
            if candidate is not None and self.is_secret(candidate):
                raise ToolCallError(refusal(candidate), code=ErrorCode.SECRET_FILE)


def refusal(rel: str) -> str:
    return (
        f"{rel} looks like a secret (keys, tokens, .env files), so cog's tools keep it from you. "
        f"Do not try to read it another way; if the task needs it, ask the person to run cog "
        f"with --allow-secret {rel}"
    )


def _compile(glob: str) -> re.Pattern[str]:
    return glob_regex(glob, ignore_case=True)


def _given_relative(workspace: Workspace, given: str) -> str | None:
    """``given`` without resolving symlinks: the name the model used (a link named ``.env``)."""
    path = Path(given)
    if path.is_absolute():
        try:
            path = path.relative_to(workspace.root)
        except ValueError:
            return None
    parts = [p for p in PurePosixPath(path.as_posix()).parts if p not in (".", "")]
    return "/".join(parts) or None
