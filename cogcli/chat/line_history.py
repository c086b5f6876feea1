"""The lines typed in ``cog chat``, kept per workspace in the person's state folder
(``$XDG_STATE_HOME/cog/workspaces/<workspace>/chat-history``, :mod:`cogcli.settings.person_state`), in
prompt_toolkit's file-history format: a ``# time`` line, then each line of an entry after a ``+``.

The history is the person's, not the workspace's: what they typed (a token pasted by mistake)
must never land in a file a repository tracks or a link leads elsewhere, and lines a repository
planted must never come back up under the arrow key. So it is kept outside the workspace, at mode
0600, opened without following a link. An older cog kept it in ``.cog/chat-history``: on first use
that file is moved over (read without following a link, then removed) unless git tracks it — a
history that came with a repository is not the person's and is left alone, said once."""

from __future__ import annotations

import datetime
import functools
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.history import History

if TYPE_CHECKING:
    from workspace_tools.files.journal_key import KeyUnusable

log = logging.getLogger("cogcli")

HISTORY_NAME = "chat-history"
#: at most this much of the end of the file is read (older entries are left unread)
MAX_READ = 512 * 1024
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC


class WorkspaceHistory(History):
    """prompt_toolkit history of one workspace, in the person's state folder, never through a link."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = Path(root).resolve()
        self._told = False

    @functools.cached_property
    def _place(self) -> tuple[Path, KeyUnusable | None]:
        """Where the file is, or why none is kept — found on first use, once the prompt is drawn
        (the person's state folder is named by :mod:`workspace_tools`' journal key, slow to import)."""
        from workspace_tools.files.journal_key import KeyUnusable

        try:
            return history_path(self.root), None
        except KeyUnusable as exc:  # the state folder would be inside the workspace: no history kept
            return self.root / ".cog" / "no-history", exc  # never opened: _tell'd, and every use refuses

    @property
    def path(self) -> Path:
        return self._place[0]

    @property
    def _refused(self) -> KeyUnusable | None:
        return self._place[1]

    def load_history_strings(self) -> Iterable[str]:
        if self._refused is not None:
            self._tell(self._refused)
            return []
        try:
            self._migrate()
            fd = os.open(self.path, os.O_RDONLY | _OPEN)
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
        if self._refused is not None:
            self._tell(self._refused)
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _OPEN, 0o600)
        except OSError as exc:
            self._tell(exc)
            return
        try:
            os.fchmod(fd, 0o600)  # a file made by hand, or by an older cog at 0644
            os.write(fd, format_entry(string).encode("utf-8", "replace"))
        except OSError as exc:
            self._tell(exc)
        finally:
            os.close(fd)

    def _migrate(self) -> None:
        """Move an older cog's ``.cog/chat-history`` here once (unless git tracks it)."""
        if os.path.lexists(self.path):
            return
        from workspace_tools.host import files as hostfiles
        from workspace_tools.workspace.envdirs import COG_DIR

        old = self.root / COG_DIR / HISTORY_NAME
        try:
            fd = hostfiles.open_file(old, self.root, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError:  # a link: not the person's history
            return
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return
            data = f.read()
        from cogcli.threads.store import is_tracked  # the thread store's module: only when there is an old history

        if is_tracked(self.root, f"{COG_DIR}/{HISTORY_NAME}"):
            from cogcli.shown.visible import say

            say(f"{old} is tracked by git: it came with the repository, so it is not used as your chat history")
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        try:
            os.unlink(old)
        except OSError:
            log.debug("could not remove the old chat history %s", old, exc_info=True)

    def _tell(self, exc: OSError | KeyUnusable) -> None:
        if self._told:
            return
        self._told = True
        from cogcli.shown.visible import say
        from workspace_tools.files.journal_key import KeyUnusable

        if isinstance(exc, KeyUnusable):
            say(f"no chat history is kept: {exc}")
            return
        say(f"the chat history {self.path} cannot be used ({exc}); lines typed now are not kept")


def history_path(root: Path) -> Path:
    """Where the chat history of the workspace at ``root`` is kept."""
    from cogcli.settings.person_state import workspace_state

    return workspace_state(root, create=False) / HISTORY_NAME


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
