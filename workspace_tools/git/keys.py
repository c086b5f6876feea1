"""Private keys in a diff: the lines of a key block replaced by the redaction marker, also where a
hunk shows a key's body without its BEGIN or END line (redaction alone could not know them). Used
by :func:`workspace_tools.git.changes.session_change` on the diff it made; most diffs have no line that
could be a key's body and cost one regex search.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cogcli.contract.errors import ToolCallError
from workspace_tools.workspace.paths import Workspace
from workspace_tools.text.textfile import read_bytes


def hide_key_lines(workspace: Workspace, diff: str, committed: Callable[[str], bytes | None]) -> str:
    """``diff`` with the lines of private key blocks replaced by the redaction marker, also where
    a hunk shows a key's body without its BEGIN or END line (redaction alone could not know them):
    for each file whose old or new text holds a key, its key lines are worked out from that text
    (the new text as the tools open files, the old one as ``committed(path)`` gives it, None when
    the file is new)."""
    if not diff:
        return diff
    from cogcli.secrets.redactor import REDACTED, KeyLines

    pieces = split_files(diff)
    for i, piece in enumerate(pieces):
        header, _, _ = piece.partition("\n")
        rel = piece_path(piece)
        if rel is None or not header.startswith("diff --git ") or not _KEY_BODY_LINE.search(piece):
            continue  # (most diffs: no line that could be a key's body, nothing to read)
        key_lines: set[str] = set()
        texts: list[bytes] = []
        try:  # opened as the tools open files: no link followed out, a pipe refused (not waited on)
            path = workspace.resolve(rel)
            if path.stat().st_size <= MAX_KEY_SCAN_BYTES:
                texts.append(read_bytes(path, rel, root=workspace.root))
        except (ToolCallError, OSError):
            pass
        old = committed(rel)
        if old is not None:
            texts.append(old)
        for data in texts:
            if b"PRIVATE KEY" not in data:
                continue
            is_key = KeyLines()
            key_lines.update(line for line in data.decode("utf-8", "replace").splitlines() if is_key(line) and line.strip())
        if key_lines:
            pieces[i] = "".join(_hide_line(line, key_lines, REDACTED) for line in piece.splitlines(keepends=True))
    return "".join(pieces)


def _hide_line(line: str, key_lines: set[str], marker: str) -> str:
    """One line of a file's diff with a key line in it replaced: a body line, or the line of the
    file a hunk header repeats after its ``@@`` (git's function context)."""
    if line[:1] in ("+", "-", " ") and line[1:].rstrip("\n") in key_lines:
        return line[0] + marker + "\n"
    if line.startswith("@@"):
        head, sep, context = line.rstrip("\n").partition(" @@ ")
        if sep and context in key_lines:
            return f"{head} @@ {marker}\n"
    return line


#: a file bigger than this is not read to find its key lines (key files are a few KB)
MAX_KEY_SCAN_BYTES = 8_000_000
#: a diff line that may be a line of a key's body: a long run of base64 and little else
_KEY_BODY_LINE = re.compile(r"(?m)^[+\- ][\s\"'`#*/;>|]*[A-Za-z0-9+/]{40,}={0,2}[\s\"'`,;+)\\n]*$")


def piece_path(piece: str) -> str | None:
    """The workspace-relative path of one file's diff (its ``+++ b/`` or ``--- a/`` line)."""
    for line in piece.splitlines()[:8]:
        for prefix in ("+++ b/", "--- a/"):
            if line.startswith(prefix):
                return line[len(prefix):].rstrip("\t")
    return None


def split_files(diff: str) -> list[str]:
    """``diff`` cut before each ``diff --git`` line: one piece per file."""
    pieces: list[str] = []
    start = 0
    while True:
        nxt = diff.find("\ndiff --git ", start)
        if nxt == -1:
            pieces.append(diff[start:])
            return pieces
        pieces.append(diff[start : nxt + 1])
        start = nxt + 1
