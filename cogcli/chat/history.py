"""The lines typed in ``cog chat``, kept per workspace in ``.cog/chat-history`` (prompt_toolkit's
file-history format: a ``# time`` line, then each line of an entry after a ``+``).

The workspace is hostile: ``.cog`` or the file itself may be a link a repository committed. The
file is read and written only through :mod:`workspace_tools.hostfiles` (no link followed on the way,
``.cog`` made if missing); a link there means no history is read or kept, said once. The file holds
what the person typed (perhaps a token pasted by mistake): it is made readable by its owner only."""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from prompt_toolkit.history import History

from cogcli.memory import COG_DIR, exclude_from_git

log = logging.getLogger("cogcli")

HISTORY_NAME = "chat-history"
#: at most this much of the end of the file is read (older entries are left unread)
MAX_READ = 512 * 1024


class WorkspaceHistory(History):
    """prompt_toolkit history in ``<root>/.cog/chat-history``, never through a link."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = Path(root).resolve()
        self.path = self.root / COG_DIR / HISTORY_NAME
        self._told = False
        self._excluded = False

    def load_history_strings(self) -> Iterable[str]:
        from workspace_tools import hostfiles

        try:
            fd = hostfiles.open_file(self.path, self.root, os.O_RDONLY)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._tell(exc)
            return []
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - MAX_READ))
            data = f.read(MAX_READ)
        return list(reversed(parse_history(data.decode("utf-8", "replace"))))

    def store_string(self, string: str) -> None:
        from workspace_tools import hostfiles

        if not self._excluded:  # .cog/ stays out of git status, as the thread store keeps it
            self._excluded = True
            try:
                exclude_from_git(self.root)
            except OSError:
                log.debug("could not add .cog/ to the repository's info/exclude", exc_info=True)
        try:
            fd = hostfiles.open_file(self.path, self.root, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600, create_dirs=True)
        except OSError as exc:
            self._tell(exc)
            return
        try:
            os.write(fd, format_entry(string).encode("utf-8", "replace"))
        except OSError as exc:
            self._tell(exc)
        finally:
            os.close(fd)

    def _tell(self, exc: OSError) -> None:
        if self._told:
            return
        self._told = True
        from cogcli.shown import say

        say(f"the chat history {self.path} cannot be used ({exc}); lines typed now are not kept")


def format_entry(text: str) -> str:
    when = datetime.datetime.now().isoformat(sep=" ", timespec="seconds")
    return f"\n# {when}\n" + "".join(f"+{line}\n" for line in text.split("\n"))


def parse_history(text: str) -> list[str]:
    """The entries of a history file, oldest first (a cut first entry, from reading only the end
    of a long file, is kept as far as it goes)."""
    entries: list[str] = []
    lines: list[str] = []
    for line in text.split("\n"):
        if line.startswith("+"):
            lines.append(line[1:])
        elif lines:
            entries.append("\n".join(lines))
            lines = []
    if lines:
        entries.append("\n".join(lines))
    return entries
