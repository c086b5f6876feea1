"""The key that signs cog's undo records, kept in the person's state folder, out of the workspace.

The journal (:mod:`workspace_tools.files.journal`) lives in the workspace's ``.cog/journal/``, which a
test run without the sandbox (or any program in the repository) can write. So every record cog
writes carries an HMAC-SHA256 made with this key, and undo acts only on records whose MAC checks:
a record planted there names a file the run never touched, and it is ignored.

The key is ``$XDG_STATE_HOME/cog/journal.key`` (default ``~/.local/state/cog/journal.key``):
32 random bytes, mode 0600 in a 0700 folder, owned by the person, made on first use, opened
without following a link. A key another user could read (or a link there) is refused with the fix.

The state folder is never inside the workspace cog works on (where a tool, a command or a test
could read the key, or plant one): an ``$XDG_STATE_HOME`` inside it is set aside for the default,
with a warning; when the default is inside it too (the workspace is your home), the key is refused
with the fix (set ``XDG_STATE_HOME`` outside the workspace). The person's config is kept out of the
workspace the same way (:func:`cogcli.settings.person_file.read_person_config`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

from workspace_tools.host.files import resolves_inside

KEY_NAME = "journal.key"
KEY_BYTES = 32
_cache: dict[str, bytes] = {}
_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()
log = logging.getLogger("cogcli")


class KeyUnusable(Exception):
    """The key cannot be made or read; the message names the file and the fix."""


def state_home(workspace: Path | None = None) -> Path:
    """``$XDG_STATE_HOME`` (when absolute), else ``~/.local/state``: the person's, not the workspace's.
    With ``workspace``: never inside it — an ``$XDG_STATE_HOME`` there gives way to the default (said
    once), and a default there too is :class:`KeyUnusable`."""
    default = Path.home() / ".local" / "state"
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    chosen = Path(base) if base and os.path.isabs(base) else default
    if workspace is None or not resolves_inside(chosen / "cog", workspace):
        return chosen
    if chosen != default and not resolves_inside(default / "cog", workspace):
        if (str(chosen), str(workspace)) not in _warned:
            _warned.add((str(chosen), str(workspace)))
            log.warning(
                "XDG_STATE_HOME=%s is inside the workspace %s, where a tool, a command or a test could read cog's state: "
                "cog keeps it in %s instead (set XDG_STATE_HOME to a folder outside the workspace)", base, workspace, default,
            )
        return default
    raise KeyUnusable(
        f"cog's state folder {chosen} is inside the workspace {workspace}, where a tool, a command or a test could read "
        f"cog's undo key and history: set XDG_STATE_HOME to a folder of yours outside the workspace"
    )


#: one folder per workspace under the person's state folder (:mod:`cogcli.settings.person_state`)
WORKSPACES = "workspaces"


def workspace_key(root: Path) -> str:
    """The folder name for a workspace: its last path part (safe characters only, at most 40)
    and the first 16 hex digits of the sha256 of its real path."""
    import hashlib
    import re

    real = os.path.realpath(root)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real) or "root")[:40].lstrip(".") or "root"
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    return f"{name}-{digest}"


def key_path(workspace: Path | None = None) -> Path:
    return state_home(workspace) / "cog" / KEY_NAME


def journal_key(workspace: Path | None = None) -> bytes:
    """The person's journal key (made on first use), never from inside ``workspace``. Raises
    :class:`KeyUnusable` when it cannot be."""
    path = key_path(workspace)
    with _lock:
        found = _cache.get(str(path))
        if found is None:
            found = _cache[str(path)] = _load_or_make(path)
        return found


def sign(key: bytes, fields: dict[str, Any]) -> str:
    """The MAC of ``fields`` (canonical JSON: sorted keys, no spaces)."""
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def verify(key: bytes, fields: dict[str, Any], mac: object) -> bool:
    return isinstance(mac, str) and hmac.compare_digest(sign(key, fields), mac)


def _load_or_make(path: Path) -> bytes:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise KeyUnusable(f"cannot make {path.parent} for cog's undo key ({exc.strerror or exc}): make it a writable folder, or set XDG_STATE_HOME") from None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        fd = _make(path)
        if fd is None:
            fd = os.open(path, flags)  # made by another cog meanwhile
    except OSError as exc:
        why = "it is a symbolic link" if os.path.islink(path) else (exc.strerror or str(exc))
        raise KeyUnusable(f"cannot read cog's undo key {path} ({why}): remove it and cog makes a new one") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyUnusable(f"cog's undo key {path} is not a regular file: remove it and cog makes a new one")
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise KeyUnusable(
                f"cog's undo key {path} can be read or written by others (mode {stat.S_IMODE(info.st_mode):o}, owner {info.st_uid}): "
                f"remove it (cog makes a new one; older runs can then no longer be undone) or `chmod 600` it"
            )
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise KeyUnusable(f"cog's undo key {path} is not {KEY_BYTES} bytes: remove it and cog makes a new one")
    return data


def _make(path: Path) -> int | None:
    """Write a new key (O_EXCL, 0600, fsync'd); the open descriptor of it, None when one appeared meanwhile."""
    tmp = path.with_name(f".{KEY_NAME}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, os.urandom(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # appears whole, and never replaces a key another cog made first
        except FileExistsError:
            return None
        finally:
            os.unlink(tmp)
    except OSError as exc:
        raise KeyUnusable(f"cannot write cog's undo key {path} ({exc.strerror or exc}): make {path.parent} writable, or set XDG_STATE_HOME") from None
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
