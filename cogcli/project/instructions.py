"""Project instructions: the ``AGENTS.md`` files a repository keeps for every coding agent.

Read as Codex reads them (``codex-rs/core/src/project_doc.rs``): from the workspace root down to
the current directory, in each directory the first of ``AGENTS.override.md``, ``AGENTS.md`` and
then the extra names configured (``[tool.cog] instruction_files = ["CLAUDE.md"]``); joined root
first. A personal file (``~/.config/cog/AGENTS.md``) comes first of all. One byte budget (32 KiB
by default, ``0`` turns instruction files off) is spent in that order, so the files nearest the
current directory are the ones cut, with a visible note saying so.

A directory below the current one may hold its own file: :class:`NearbyInstructions` tells the
model about it once, the first time a tool touches a path under that directory (nearest file
wins for its subtree).

Everything read here is redacted like any file a tool returns: a token pasted into an
``AGENTS.md`` never reaches the model. And an instruction file is a workspace file like any other:
one the tools keep away from (``.env``, keys, ``secret_globs``: :mod:`workspace_tools.workspace.secret_files`,
decided by the same :meth:`SecretPolicy.check <workspace_tools.workspace.secret_files.SecretPolicy.check>` as
``read_file``; ``--allow-secret`` lets one through) is left out, so is a link that leads out of the
workspace; :attr:`ProjectInstructions.left_out` and the notes say which and why.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.secrets.redactor import redact

if TYPE_CHECKING:
    from workspace_tools.workspace.paths import Workspace
    from workspace_tools.workspace.secret_files import SecretPolicy

#: per directory, the first of these that exists is read (then the configured extra names)
DEFAULT_NAMES = ("AGENTS.override.md", "AGENTS.md")
#: bytes of instructions read, in total, when nothing else is configured (as Codex)
DEFAULT_BUDGET = 32 * 1024
#: the personal file, read before every project's own
PERSONAL_FILE = Path("~/.config/cog/AGENTS.md")
#: how a note about a subdirectory's instruction file starts (compaction keeps such notes)
NOTE_PREFIX = "[Instructions from "


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file as loaded: where it is, how big it is, what the model reads of it."""

    #: the path shown to people: relative to the workspace root (``AGENTS.md``, ``pkg/AGENTS.md``)
    #: or ``~/…`` for the personal file
    path: str
    #: its size on disk, in bytes
    size: int
    #: what the model reads (redacted; cut to the budget)
    text: str
    #: bytes left out because the budget ran out (0: read whole)
    cut: int = 0
    #: the directory it governs, relative to the root ("" the root; None the personal file)
    directory: str | None = None
    #: credentials replaced by ``[REDACTED]``
    redacted: int = 0
    #: why the model was not given it (None: it was): it looks like a secret, or leads out of the workspace
    left_out: str | None = None

    def info(self) -> dict[str, Any]:
        """What the ``start`` event says about it: ``{path, size}``, ``cut`` when cut, ``left_out``
        (why) when the model was not given it."""
        out: dict[str, Any] = {"path": self.path, "size": self.size}
        if self.cut:
            out["cut"] = self.cut
        if self.left_out:
            out["left_out"] = self.left_out
        return out


@dataclass
class ProjectInstructions:
    """The instruction files given to the model, with notes about them."""
    files: list[InstructionFile] = field(default_factory=list)
    #: notes for the model and for people (a file cut, a file skipped)
    notes: list[str] = field(default_factory=list)
    #: files found but not given to the model, each with its ``left_out`` reason (no text)
    left_out: list[InstructionFile] = field(default_factory=list)

    def prompt_section(self) -> str:
        """The instructions as they follow the system prompt ("" when there are none)."""
        if not self.files:
            return ""
        parts = [
            "The user and this repository give these instructions (from AGENTS.md and similar files, root first; "
            "a file deeper in the tree wins for its directory). Follow them unless the task says otherwise."
        ]
        for f in self.files:
            where = "your personal instructions" if f.directory is None else f"for {f.directory or 'the repository root'}"
            body = f.text.rstrip("\n")
            if f.cut:
                body += f"\n[… {f.cut:,} more bytes of {f.path} cut: the instruction budget ran out]"
            parts.append(f"# {f.path} ({where})\n\n{body}")
        left_out = [n for n in self.notes if " not read: " in n]
        if left_out:
            parts.append("[" + "; ".join(left_out) + "]")
        return "\n\n".join(parts)


def instruction_names(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The names looked for in each directory, in order: the defaults, then ``extra`` (deduplicated)."""
    names: list[str] = list(DEFAULT_NAMES)
    for name in extra:
        if name and name not in names:
            names.append(name)
    return tuple(names)


class _Gate:
    """The rules a workspace's instruction file passes before it is read, as ``read_file``'s:
    resolved by :meth:`Workspace.resolve` (a link out of the workspace is refused) and checked by
    :meth:`SecretPolicy.check` (the name as found and the file it leads to)."""

    def __init__(self, root: Path, secrets: SecretPolicy | None) -> None:
        from workspace_tools.workspace.paths import Workspace
        from workspace_tools.workspace.secret_files import SecretPolicy

        self.workspace: Workspace = Workspace(root)
        self.secrets = secrets if secrets is not None else SecretPolicy()

    def pick(self, directory: Path, names: Sequence[str]) -> tuple[tuple[Path, Path] | None, list[InstructionFile]]:
        """(the first of ``names`` in ``directory`` that may be read: its path as found and
        resolved, or None) and the files before it that were left out, each saying why."""
        from workspace_tools.workspace.paths import shown_name

        left_out: list[InstructionFile] = []
        where = self.workspace.relative(directory)
        governs = "" if where == "." else where
        for name in names:
            candidate = directory / name
            try:
                if not os.path.lexists(candidate):
                    continue
                rel = self.workspace.relative(candidate)
                try:
                    real = self.workspace.resolve(rel)
                except ToolCallError:
                    target = shown_name(os.path.realpath(candidate))  # the link's text is the workspace's: escaped
                    left_out.append(InstructionFile(
                        path=rel, size=0, text="", directory=governs, left_out=f"it is a link to {target}, outside the workspace: not followed"
                    ))
                    continue
                if not (real.is_file() and real.stat().st_size > 0):
                    continue
                try:
                    self.secrets.check(self.workspace, rel, real)
                except ToolCallError as exc:
                    if exc.code != ErrorCode.SECRET_FILE:
                        raise
                    left_out.append(InstructionFile(path=rel, size=real.stat().st_size, text="", directory=governs, left_out=(
                        f"it looks like a secret (.env files, keys, tokens, secret_globs), so the model is not given it; "
                        f"--allow-secret {shown_name(rel)} lets it through"
                    )))
                    continue
            except (OSError, ValueError):
                continue
            return (candidate, real), left_out
        return None, left_out

    def read(self, real: Path, limit: int, environ: Mapping[str, str] | None) -> tuple[str, int, int, int]:
        """:func:`_read` of a workspace file, opened without following a link (a folder or the
        file swapped for one after the check is refused: ``ToolCallError``, an ``OSError``)."""
        from workspace_tools.text.textfile import open_in_workspace

        fd = open_in_workspace(real, self.workspace.root)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OSError(0, "not a regular file")
            return _read_open(fh, limit, environ)


def chain(root: Path, cwd: Path) -> list[Path]:
    """The directories from ``root`` down to ``cwd`` (just ``root`` when ``cwd`` is outside it)."""
    root, cwd = root.resolve(), cwd.resolve()
    try:
        rel = cwd.relative_to(root)
    except ValueError:
        return [root]
    dirs = [root]
    for part in rel.parts:
        dirs.append(dirs[-1] / part)
    return dirs


def _read(path: Path, limit: int, environ: Mapping[str, str] | None) -> tuple[str, int, int, int]:
    """(text, size, bytes cut, credentials redacted) of ``path``, reading at most ``limit`` bytes;
    the cut falls on a line boundary when one is near, never inside a UTF-8 character."""
    with path.open("rb") as fh:
        return _read_open(fh, limit, environ)


def _read_open(fh: BinaryIO, limit: int, environ: Mapping[str, str] | None) -> tuple[str, int, int, int]:
    size = os.fstat(fh.fileno()).st_size
    data = fh.read(limit)
    cut = max(0, size - len(data))
    if cut:
        newline = data.rfind(b"\n")
        if newline >= len(data) // 2:
            cut += len(data) - newline - 1
            data = data[: newline + 1]
    text = data.decode("utf-8", errors="ignore" if cut else "replace")
    text, redacted = redact(text, environ=environ)
    return text, size, cut, redacted


def _show(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        home = Path.home()
        try:
            return "~/" + path.relative_to(home).as_posix()
        except ValueError:
            return str(path)


def personal_file(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/cog/AGENTS.md``, else ``~/.config/cog/AGENTS.md``."""
    from cogcli.settings.person_file import config_home

    return config_home(environ) / "AGENTS.md"


def load_instructions(
    root: Path,
    cwd: Path | None = None,
    *,
    names: Sequence[str] = DEFAULT_NAMES,
    budget: int = DEFAULT_BUDGET,
    personal: Path | None = None,
    environ: Mapping[str, str] | None = None,
    secrets: SecretPolicy | None = None,
) -> ProjectInstructions:
    """The instruction files for a run in ``cwd`` (default: ``root``) of the workspace ``root``:
    ``personal`` first, then root → ``cwd``, ``budget`` bytes in all (0: none at all).

    The workspace's files pass ``read_file``'s rules first: ``secrets`` (default: the built-in
    secret files) decides which look like secrets, and a link out of the workspace is not
    followed; such a file is left out (``left_out``, a note) and the next name in its directory
    is looked for."""
    found = ProjectInstructions()
    if budget <= 0:
        return found
    root = root.resolve()
    gate = _Gate(root, secrets)
    candidates: list[tuple[Path, Path | None, str | None]] = []  # (path found, resolved in the workspace, directory)
    if personal is not None and personal.is_file():
        candidates.append((personal, None, None))
    for directory in chain(root, cwd or root):
        picked, left_out = gate.pick(directory, names)
        for f in left_out:
            found.left_out.append(f)
            found.notes.append(f"{f.path} not read: {f.left_out}")
        if picked is not None:
            rel = directory.relative_to(root).as_posix()
            candidates.append((picked[0], picked[1], "" if rel == "." else rel))
    left = budget
    for path, real, directory in candidates:
        shown = _show(path, root)
        if left <= 0:
            size = _size(path)
            found.files.append(InstructionFile(path=shown, size=size, text="", cut=size, directory=directory))
            found.notes.append(f"{shown} ({size:,} bytes) not read: the {budget:,}-byte instruction budget was spent")
            continue
        try:
            text, size, cut, redacted = _read(path, left, environ) if real is None else gate.read(real, left, environ)
        except (OSError, ToolCallError) as exc:
            found.notes.append(f"{shown} could not be read: {getattr(exc, 'strerror', None) or exc}")
            continue
        left = 0 if cut else left - size  # a file cut spends the rest: nothing deeper is read
        found.files.append(InstructionFile(path=shown, size=size, text=text, cut=cut, directory=directory, redacted=redacted))
        if cut:
            found.notes.append(f"{shown} cut: {cut:,} of its {size:,} bytes left out (instruction budget {budget:,} bytes)")
    found.files = [f for f in found.files if f.text]
    return found


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class NearbyInstructions:
    """Instruction files in directories the run did not start in, told to the model once each.

    ``notice(arguments)`` is asked after every call: when the call's ``path`` lies under a
    directory (below the root) with its own instruction file that was not loaded at the start
    and not told yet, it returns a note with that file's text (cut to the budget), the nearest
    last: it wins for its subtree."""

    def __init__(
        self,
        root: Path,
        loaded: Iterable[InstructionFile] = (),
        *,
        names: Sequence[str] = DEFAULT_NAMES,
        budget: int = DEFAULT_BUDGET,
        environ: Mapping[str, str] | None = None,
        secrets: SecretPolicy | None = None,
    ) -> None:
        self.root = root.resolve()
        self._gate = _Gate(self.root, secrets)
        #: files found below the start but not told (secret-looking, links out), each saying why
        self.left_out: list[InstructionFile] = []
        self.names = tuple(names)
        self.budget = budget
        self.environ = environ
        #: directories (relative, "" the root) whose file the model has: loaded or told
        self.known: set[str] = {f.directory for f in loaded if f.directory is not None}
        #: directories already looked at (told or found to hold nothing)
        self._seen: set[str] = set(self.known)
        self.told: list[InstructionFile] = []

    def notice(self, arguments: Any) -> str | None:
        """The note to add to a call's result, or None."""
        if self.budget <= 0 or not isinstance(arguments, dict):
            return None
        paths = [arguments.get(k) for k in ("path", "file", "directory")]
        target = next((p for p in paths if isinstance(p, str) and p.strip()), None)
        if target is None:
            return None
        directory = self._directory_of(target)
        if directory is None:
            return None
        notes: list[InstructionFile] = []
        for d in chain(self.root, directory)[1:]:  # the root's own file was read at the start
            rel = d.relative_to(self.root).as_posix()
            if rel in self._seen:
                continue
            self._seen.add(rel)
            picked, left_out = self._gate.pick(d, self.names)
            self.left_out += left_out
            if picked is None:
                continue
            path = picked[0]
            try:
                text, size, cut, redacted = self._gate.read(picked[1], self.budget, self.environ)
            except (OSError, ToolCallError):
                continue
            loaded = InstructionFile(path=_show(path, self.root), size=size, text=text, cut=cut, directory=rel, redacted=redacted)
            self.known.add(rel)
            self.told.append(loaded)
            notes.append(loaded)
        if not notes:
            return None
        parts = []
        for f in notes:
            body = f.text.rstrip("\n")
            if f.cut:
                body += f"\n[… {f.cut:,} more bytes cut]"
            parts.append(
                f"{NOTE_PREFIX}{f.path}: they apply to {f.directory}/ and below and win over the files above it "
                f"there; follow them when working in that directory]\n{body}"
            )
        return "\n\n".join(parts)

    def _directory_of(self, target: str) -> Path | None:
        """The directory a tool's path names (the path itself when it is one), inside the root."""
        candidate = (self.root / target).resolve() if not os.path.isabs(target) else Path(target).resolve()
        try:
            candidate.relative_to(self.root)
        except ValueError:
            return None
        if candidate.is_dir():
            return candidate
        parent = candidate.parent
        return parent if parent.is_dir() else None

    def annotate(self, arguments: Any, read: str) -> str:
        """``read`` (what the model reads of a call) with the note appended when there is one."""
        note = self.notice(arguments)
        return read if note is None else f"{read}\n\n{note}"


def instruction_note(content: str) -> str:
    """The instruction notes :meth:`NearbyInstructions.annotate` added to ``content`` ("" when
    none): compaction keeps them when it drops the rest of a result."""
    at = content.find("\n\n" + NOTE_PREFIX)
    return content[at + 2 :] if at >= 0 else ""
