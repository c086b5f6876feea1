"""``cog thread import FILE``: another agent's session (an ATIF trajectory, a Claude Code
transcript, a Codex CLI session file; read by :mod:`cogcli.threads.import_readers`) as a new
thread that ``cog edit --thread`` and ``cog chat --thread`` continue.

What the thread holds, and why:

- one ``user`` entry first, a note telling the model where the conversation came from; it carries
  the **origin** (:class:`ImportOrigin`: the format, the agent, its session id and working folder,
  the file, what was skipped, cut and redacted) in its ``imported`` field, which
  ``cog thread show`` draws as the thread's first line;
- the conversation as plain ``user`` and ``assistant`` entries, consecutive pieces of one side
  joined (up to :data:`STRETCH_CHARS` a message). **Tool calls and their results are text**
  (``[Claude Code's tool call, not run here: Bash (toolu_1)]`` and the arguments; ``[result of
  Claude Code's Bash (toolu_1)]`` and what it returned), both on the assistant's side: no call is
  ever run again, the other agent's tool names never reach the model as calls it could make (its
  own tools are the only ones it is offered), and the user's side holds only the person's words —
  which compaction keeps verbatim, while the agent's side it summarizes;
- thinking and reasoning are left out: their signatures belong to another provider's model;
- every text is cleaned (control characters other than newline and tab removed, carriage returns
  made newlines, lone surrogates replaced), redacted with cog's redactor (the same one as every
  tool result) and bounded: a message over :data:`MESSAGE_CHARS` keeps its head and tail with a
  note of what was left out; past :data:`TOTAL_CHARS` the oldest messages after the first go, with
  a note. The context budget then compacts what is left as for any long thread;
- a ``run_end`` entry (status ``completed``, no steps): the import is one run of the thread, with
  no files changed.

The file is read only if it is a regular file (not a link, a FIFO or a device) of at most
:data:`MAX_FILE_BYTES`; nothing read from it is ever used as a path.
"""

from __future__ import annotations

import os
import re
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel

from cogcli.contract.errors import ConfigError
from cogcli.threads.entries import (
    AssistantEntry,
    Entry,
    RunEndEntry,
    StoredEntry,
    UserEntry,
)
from cogcli.threads.import_readers import (
    AGENTS,
    FORMATS,
    ImportFormatError,
    Piece,
    Read,
    read,
    sniff,
)

#: the largest file read (Claude Code sessions holding pasted images run to tens of megabytes)
MAX_FILE_BYTES = 256 * 1024 * 1024
#: one message's text at most (a tool result, a call's arguments, a said text), head and tail kept
MESSAGE_CHARS = 20_000
#: consecutive pieces of one side are joined into one message up to this size (past it, a new
#: message of the same side starts, so compaction can summarize the older part of a long stretch)
STRETCH_CHARS = 2 * MESSAGE_CHARS
#: the whole conversation at most: older messages after the first go past it
TOTAL_CHARS = 1_000_000
#: text redacted around a cut, so a credential across it is found whole
_MARGIN = 10_000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class ImportOrigin(BaseModel):
    """Where an imported thread came from (kept in its first entry's ``imported`` field)."""

    format: str
    agent: str
    session_id: str | None = None
    cwd: str | None = None
    file: str
    messages: int = 0
    calls: int = 0
    #: lines that were not records it could read, skipped
    skipped_lines: int = 0
    #: images and other parts with no text, left out
    left_out: int = 0
    #: messages cut to MESSAGE_CHARS; messages dropped past TOTAL_CHARS
    cut: int = 0
    dropped: int = 0
    redacted: int = 0


@dataclass
class Imported:
    """A conversation read from another agent's session file."""
    origin: ImportOrigin
    #: (role, text) in order, ready to store
    messages: list[tuple[str, str]]


def open_session_file(path: Path) -> BinaryIO:
    """``path`` opened for reading: a regular file, no link, at most :data:`MAX_FILE_BYTES`, or a
    :class:`ConfigError` naming what it is instead."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(f"{path} is a symbolic link; cog thread import reads a regular file only (not through a link): give the file it points to")
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
        raise ConfigError(f"{path} is {what}; cog thread import reads a session file (a regular file)")
    if st.st_size > MAX_FILE_BYTES:
        raise ConfigError(f"{path} is {st.st_size:,} bytes; cog thread import reads at most {MAX_FILE_BYTES:,}: cut the session first")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the look and the open
        os.close(fd)
        raise ConfigError(f"{path} changed while it was opened and is no regular file now; try again")
    return os.fdopen(fd, "rb")


def _lines(stream: BinaryIO) -> Iterator[str]:
    """The file's lines (split at ``\\n`` only), decoded, read no further than :data:`MAX_FILE_BYTES`."""
    total = 0
    for raw in stream:
        total += len(raw)
        if total > MAX_FILE_BYTES:
            raise ConfigError(f"the file grew past {MAX_FILE_BYTES:,} bytes while it was read; cut the session first")
        yield raw.decode("utf-8", errors="replace")


def import_file(path: Path, fmt: str | None = None) -> Imported:
    """Read the session file at ``path`` (its format sniffed when ``fmt`` is None) into what a thread keeps."""
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    with open_session_file(path) as stream:
        try:
            found = fmt or sniff(stream.read(64 * 1024).decode("utf-8", errors="replace"))
            stream.seek(0)
            got = read(found, _lines(stream))
        except ImportFormatError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    done = conversation(got, found, str(path))
    if not done.messages:
        skipped = f" ({got.malformed} malformed lines skipped)" if got.malformed else ""
        raise ConfigError(f"{path} holds no conversation to import{skipped}: no message of the person or the agent was found in it as {found}")
    return done


def conversation(got: Read, fmt: str, file: str) -> Imported:
    """What a reader found, cleaned, redacted, bounded and joined into messages."""
    from cogcli.secrets.redactor import env_forms

    forms = env_forms()
    origin = ImportOrigin(format=fmt, agent=_short(got.agent or AGENTS[fmt], forms) or AGENTS[fmt], session_id=_short(got.session_id, forms),
                          cwd=_short(got.cwd, forms), file=_short(file, forms) or "", skipped_lines=got.malformed, left_out=got.left_out)
    messages: list[tuple[str, str]] = []
    for piece in got.pieces:
        text = _piece_text(piece, origin, forms)
        role = piece.role if piece.kind == "text" else "assistant"  # what the agent did and saw: its side
        if messages and messages[-1][0] == role and len(messages[-1][1]) + len(text) <= STRETCH_CHARS:
            messages[-1] = (role, messages[-1][1] + "\n\n" + text)
        else:
            messages.append((role, text))
    messages = _within_total(messages, origin)
    origin.messages = len(messages)
    return Imported(origin, messages)


def _piece_text(piece: Piece, origin: ImportOrigin, forms: tuple[str, ...]) -> str:
    body = _bounded(piece.text, origin, forms)
    if piece.kind == "text":
        return body
    name = _short(piece.name, forms, 100) or "tool"
    ref = f" ({_short(piece.call_id, forms, 100)})" if piece.call_id else ""
    if piece.kind == "call":
        origin.calls += 1
        return f"[{origin.agent}'s tool call, not run here: {name}{ref}]\n{body}"
    return f"[{'error from' if piece.error else 'result of'} {origin.agent}'s {name}{ref}]\n{body}"


def clean(text: str) -> str:
    """``text`` without control characters (newline and tab kept, a carriage return made a newline) or lone surrogates."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", text))


def _bounded(text: str, origin: ImportOrigin, forms: tuple[str, ...]) -> str:
    """``text`` cleaned and redacted, its head and tail kept when it is over :data:`MESSAGE_CHARS`."""
    from cogcli.secrets.redactor import redact

    text = clean(text)
    if len(text) <= MESSAGE_CHARS:
        kept, n = redact(text, forms=forms)
        origin.redacted += n
        return kept
    head_n = MESSAGE_CHARS * 2 // 3
    tail_n = MESSAGE_CHARS - head_n
    head, n1 = redact(text[: head_n + _MARGIN], forms=forms)
    tail, n2 = redact(text[-(tail_n + _MARGIN):], forms=forms)
    origin.redacted += n1 + n2
    origin.cut += 1
    left = len(text) - head_n - tail_n
    return f"{head[:head_n]}\n[… {left:,} characters left out on import …]\n{tail[-tail_n:]}"


def _short(value: str | None, forms: tuple[str, ...], limit: int = 300) -> str | None:
    """A field shown on one line (a session id, a folder, a tool name): cleaned, redacted, bounded."""
    from cogcli.secrets.redactor import redact

    if not value:
        return None
    text = " ".join(clean(value[: limit * 4]).split())
    text = redact(text, forms=forms)[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _within_total(messages: list[tuple[str, str]], origin: ImportOrigin) -> list[tuple[str, str]]:
    """The first message and the newest that fit in :data:`TOTAL_CHARS`, with a note of how many went."""
    total = sum(len(text) for _, text in messages)
    if total <= TOTAL_CHARS or len(messages) < 3:
        return messages
    first, rest = messages[0], messages[1:]
    kept: list[tuple[str, str]] = []
    size = len(first[1])
    for message in reversed(rest):
        if size + len(message[1]) > TOTAL_CHARS:
            break
        kept.append(message)
        size += len(message[1])
    kept.reverse()
    origin.dropped = len(rest) - len(kept)
    note = ("user", f"[… {origin.dropped:,} earlier messages of {origin.agent}'s session left out on import, to keep it within {TOTAL_CHARS:,} characters …]")
    return [first, note, *kept]


def note(origin: ImportOrigin) -> str:
    """What the model reads first in an imported thread."""
    where = ", ".join(p for p in (f"session {origin.session_id}" if origin.session_id else "",
                                   f"working folder {origin.cwd}" if origin.cwd else "") if p)
    return (
        f"[cog] The conversation below was brought over from {origin.agent}{f' ({where})' if where else ''} with cog thread import. "
        "Its tool calls ran there, earlier, and are written out as text; none was run again here. That agent's tools are not "
        "yours: use your own tools, and read files again before relying on what its results showed. Its thinking was left out."
    )


def entries(imported: Imported) -> list[Entry]:
    """The thread's entries: the note (with the origin), the conversation, the run's end."""
    from cogcli.wire.events import RunStatus

    mid = f"imp_{uuid.uuid4().hex[:20]}"
    # the origin in an extra field: a cog from before import reads the thread as ever
    out: list[Entry] = [UserEntry.model_validate({"content": note(imported.origin), "message_id": mid,
                                                  "imported": imported.origin.model_dump(exclude_none=True)})]
    for role, text in imported.messages:
        out.append(AssistantEntry(content=text) if role == "assistant" else UserEntry(content=text, message_id=mid))
    out.append(RunEndEntry(message_id=mid, status=RunStatus.COMPLETED, steps=0))
    return out


def title(imported: Imported) -> str:
    first = next((text for role, text in imported.messages if role == "user" and not text.startswith("[")), "")
    return f"imported from {imported.origin.agent}: {first}" if first else f"imported from {imported.origin.agent}"


def origin_of(stored: list[StoredEntry]) -> ImportOrigin | None:
    """The origin of an imported thread (None for a thread cog ran)."""
    if not stored or not isinstance(stored[0].entry, UserEntry):
        return None
    data: Any = (stored[0].entry.model_extra or {}).get("imported")
    try:
        return ImportOrigin.model_validate(data) if isinstance(data, dict) else None
    except ValueError:
        return None


def origin_line(origin: ImportOrigin) -> str:
    """``── imported from Claude Code · session … · in /home/… · 42 messages ──`` for ``cog thread show``."""
    parts = [f"imported from {origin.agent}"]
    parts += [f"session {origin.session_id}"] if origin.session_id else []
    parts += [f"in {origin.cwd}"] if origin.cwd else []
    parts.append(f"{origin.messages} message{'' if origin.messages == 1 else 's'}, {origin.calls} tool call{'' if origin.calls == 1 else 's'} as text")
    for count, what in ((origin.skipped_lines, "malformed lines skipped"), (origin.cut, "cut"), (origin.dropped, "older left out"),
                        (origin.redacted, "credentials redacted")):
        if count:
            parts.append(f"{count} {what}")
    return "── " + " · ".join(parts) + " ──"
