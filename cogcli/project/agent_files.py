"""Markdown files that extend the agent: custom commands (``NAME.md``), skills (``NAME/SKILL.md``) and named agents (``agents/NAME.md``),
from the workspace's ``.agents/`` folder and the person's ``~/.config/cog/`` (``$XDG_CONFIG_HOME``).

The workspace's are hostile text: its folders and files are opened without following a link
(:func:`workspace_tools.host.files.open_dir`, ``O_NOFOLLOW``), only regular files are read, each
at most :data:`MAX_FILE_BYTES`, at most :data:`MAX_ENTRIES` per folder, names held to
:data:`NAME_RE`; what is skipped is said in a note. The person's files are theirs (links followed)
but bounded the same way. Front matter is the ``---`` block of ``key: value`` lines at the top
(one line per value; quotes stripped); nothing in it is ever run.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: a command's or a skill's name: what follows ``/`` in ``/NAME`` (lower case when matched)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: the most of one file read (a command, a SKILL.md): more is left out with a note
MAX_FILE_BYTES = 64 * 1024
#: the most entries of one folder looked at
MAX_ENTRIES = 200
#: where the workspace keeps them, relative to its root
WORKSPACE_DIR = ".agents"

_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK


@dataclass(frozen=True)
class AgentFile:
    """One file found: its name (the command's or skill's), text and where it came from."""

    name: str
    text: str
    #: "workspace" (hostile text) or "personal" (the person's own)
    source: str
    #: shown to people: ``.agents/commands/review.md`` or ``~/.config/cog/commands/review.md``
    shown: str
    #: the folder it is in (a skill's own folder), as opened: for the person's, a path; for the workspace's, relative
    folder: str = ""


@dataclass
class Found:
    """The AGENTS.md files found, and notes about those left out."""
    files: list[AgentFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def personal_dir(kind: str, environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/cog/<kind>``, else ``~/.config/cog/<kind>``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".config") / "cog" / kind


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """``({key: value}, body)`` of a Markdown file with a ``---`` block at its top (``({}, text)``
    without one). Keys are lower case; a value's surrounding quotes are stripped."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta: dict[str, str] = {}
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return meta, "".join(lines[i + 1:])
        key, sep, value = line.partition(":")
        if sep and key.strip() and not line[:1].isspace():
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            meta[key.strip().lower()] = value
    return {}, text  # no closing ---: no front matter


def _decode(data: bytes, shown: str, notes: list[str]) -> str | None:
    if len(data) > MAX_FILE_BYTES:
        notes.append(f"{shown} not read: over {MAX_FILE_BYTES // 1024} KiB")
        return None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        notes.append(f"{shown} not read: not UTF-8 text")
        return None


def _read_fd(fd: int) -> bytes | None:
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read(MAX_FILE_BYTES + 1)


class _Folder:
    """One folder to read files from: the workspace's, opened link by link without following any;
    or the person's, as a path."""

    def __init__(self, fd: int | None, path: Path | None, shown: str) -> None:
        self.fd, self.path, self.shown = fd, path, shown

    def names(self) -> list[str]:
        try:
            found = os.listdir(self.fd if self.fd is not None else self.path)  # type: ignore[arg-type]
        except OSError:
            return []
        return sorted(found)[:MAX_ENTRIES]

    def read(self, name: str, notes: list[str]) -> str | None:
        from workspace_tools.host.files import LinkRefused, open_at

        shown = f"{self.shown}/{name}"
        try:
            if self.fd is not None:
                data = _read_fd(open_at(self.fd, name, _FLAGS, where=shown))
            else:
                data = _read_fd(os.open(self.path / name, _FLAGS))  # type: ignore[operator]
        except LinkRefused:
            notes.append(f"{shown} not read: it is a link, and cog does not follow links in the workspace's .agents/")
            return None
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            notes.append(f"{shown} not read: {exc.strerror or exc}")
            return None
        if data is None:
            return None
        return _decode(data, shown, notes)

    def sub(self, name: str, notes: list[str]) -> _Folder | None:
        from workspace_tools.host.files import LinkRefused, open_below

        shown = f"{self.shown}/{name}"
        if self.fd is None:
            path = self.path / name  # type: ignore[operator]
            return _Folder(None, path, shown) if path.is_dir() else None
        try:
            return _Folder(open_below(self.fd, name), None, shown)
        except LinkRefused:
            notes.append(f"{shown} not read: it is a link, and cog does not follow links in the workspace's .agents/")
        except OSError:
            pass
        return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _workspace_folder(root: Path, kind: str, notes: list[str]) -> _Folder | None:
    from workspace_tools.host.files import LinkRefused, open_dir

    rel = f"{WORKSPACE_DIR}/{kind}"
    root = root.resolve()
    try:
        return _Folder(open_dir(root / rel, root), None, rel)
    except LinkRefused as exc:
        notes.append(f"{rel} not read: {exc}")
    except OSError:
        pass
    return None


def _folders(root: Path | None, kind: str, environ: Mapping[str, str] | None, notes: list[str]) -> Iterator[tuple[str, _Folder]]:
    """The person's folder first, then the workspace's."""
    mine = personal_dir(kind, environ)
    if mine.is_dir():
        home = str(Path.home())
        shown = "~" + str(mine)[len(home):] if str(mine).startswith(home + os.sep) else str(mine)
        yield "personal", _Folder(None, mine, shown)
    if root is not None:
        found = _workspace_folder(root, kind, notes)
        if found is not None:
            try:
                yield "workspace", found
            finally:
                found.close()


def _valid(stem: str, shown: str, notes: list[str]) -> bool:
    if NAME_RE.fullmatch(stem):
        return True
    from cogcli.shown.visible import visible

    notes.append(f"{visible(shown, one_line=True)} left out: a name is letters, digits, '_', '-' or '.' (at most 64)")
    return False


def command_files(root: Path | None, environ: Mapping[str, str] | None = None, kind: str = "commands") -> Found:
    """Every ``NAME.md`` in the person's ``commands`` folder, then the workspace's ``.agents/commands``
    (``kind="agents"``: the named agents' files, ``agents/``)."""
    found = Found()
    for source, folder in _folders(root, kind, environ, found.notes):
        for name in folder.names():
            if not name.endswith(".md") or name.startswith("."):
                continue
            stem = name[:-3]
            if not _valid(stem, f"{folder.shown}/{name}", found.notes):
                continue
            text = folder.read(name, found.notes)
            if text is not None:
                found.files.append(AgentFile(stem, text, source, f"{folder.shown}/{name}"))
    return found


def skill_files(root: Path | None, environ: Mapping[str, str] | None = None) -> Found:
    """Every ``NAME/SKILL.md`` in the person's ``skills`` folder, then the workspace's ``.agents/skills``."""
    found = Found()
    for source, folder in _folders(root, "skills", environ, found.notes):
        for name in folder.names():
            if name.startswith(".") or not _valid(name, f"{folder.shown}/{name}", found.notes):
                continue
            inner = folder.sub(name, found.notes)
            if inner is None:
                continue
            try:
                text = inner.read("SKILL.md", found.notes)
            finally:
                inner.close()
            if text is not None:
                where = str(folder.path / name) if folder.path is not None else f"{folder.shown}/{name}"
                found.files.append(AgentFile(name, text, source, f"{folder.shown}/{name}/SKILL.md", folder=where))
    return found
