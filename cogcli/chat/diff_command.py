"""``/diff`` in ``cog chat``: what this session changed — per file its runs wrote, the file as it
was before the session's first change to it (from the runs' undo journals, ``.cog/journal/``)
against the file now. A run undone since shows nothing; an edit the person made to such a file
meanwhile shows too (the file now is what counts). Files nobody but the person touched are not
shown: the session did not change them."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def session_diff(root: Path, message_ids: Sequence[str]) -> str:
    """The unified diff of the files the runs ``message_ids`` (in order) changed, "" when none differs."""
    from cogcli.contract.errors import CogError
    from workspace_tools.text.diffs import file_header, format_hunks, text_blocks
    from workspace_tools.files.journal import read_journal
    from workspace_tools.workspace.paths import Workspace

    before: dict[str, bytes | None] = {}
    for message_id in message_ids:
        for change in read_journal(root, message_id) or []:
            before.setdefault(change.path, change.before)  # the first change: as the session found it
    workspace = Workspace(root)
    out: list[str] = []
    for rel in sorted(before):
        try:
            path = workspace.resolve(rel)
            now: bytes | None = path.read_bytes()
        except FileNotFoundError:
            now = None
        except (OSError, CogError) as exc:
            out.append(f"# {rel}: cannot be read now ({getattr(exc, 'message', None) or exc})\n")
            continue
        old = before[rel]
        if old == now:
            continue
        old_text = (old or b"").decode("utf-8", "replace")
        new_text = (now or b"").decode("utf-8", "replace")
        hunks = format_hunks(text_blocks(old_text, new_text))
        if old is None:
            out.append(file_header(rel, new_mode=0o644, empty=not hunks) + hunks)
        elif now is None:
            out.append(f"diff --git a/{rel} b/{rel}\ndeleted file\n--- a/{rel}\n+++ /dev/null\n" + hunks)
        else:
            out.append(file_header(rel) + hunks)
    return "".join(out)


def coloured_diff(text: str) -> str:
    """Added lines green, removed red — only on a terminal without ``NO_COLOR``."""
    from cogcli.render.text import _RESET, _STYLES, wants_color

    if not wants_color(sys.stdout):
        return text
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("+") and not line.startswith("+++"):
            line = f"{_STYLES['green']}{line.rstrip(chr(10))}{_RESET}\n"
        elif line.startswith("-") and not line.startswith("---"):
            line = f"{_STYLES['red']}{line.rstrip(chr(10))}{_RESET}\n"
        out.append(line)
    return "".join(out)
