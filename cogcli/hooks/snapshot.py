"""A workspace hook's private copy: the workspace files its approval covers, copied into the
person's state folder when a session starts, each checked against the sha256 that was approved as
it is copied. The hook runs there — its working directory and ``COG_PROJECT_DIR`` — so nothing a
test, a sandboxed command or the model writes into the workspace later changes what it runs.

Why a copy and not a check before each run: a check leaves a gap between reading the file and the
interpreter reading it again (and a Python hook imports, a shell hook sources, long after it
started), and the sandbox's processes, or calls running beside the hook, write the workspace in
that gap. The copy has no gap: its bytes are the approved ones, in a folder only the person can
write (0700, never reached through a link, never inside the workspace).

What is in it: every file the approval fingerprints (the script, files the command line names, a
Python command's workspace imports, a shell script's sourced files), at the same relative paths;
a link out of the workspace the approval recorded, as that link. Nothing else: a file the hook
loads from the workspace that the approval did not cover is simply not there (its import or
``source`` fails). A workspace virtualenv is not copied, so a hook run by one is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cogcli.contract.errors import ConfigError
from workspace_tools.host.files import resolves_inside

#: the folder of copies, in the person's state folder for the workspace
SNAPSHOTS = "hook-copies"
SHA = "sha256:"
OUTSIDE = "outside:"
VENV = " (virtualenv)"


def snapshot(root: Path, command: str, files: Mapping[str, str]) -> Path:
    """The folder the workspace hook ``command`` runs in: the approved ``files`` (path → fingerprint,
    as :func:`cogcli.settings.trust.review` reports them for an approved command) copied byte for
    byte. Raises :class:`ConfigError` when a file no longer has its approved bytes, or the command
    runs a workspace virtualenv."""
    shown = json.dumps(command)
    for rel in files:
        if rel.endswith(VENV):
            raise ConfigError(
                f"not running the workspace hook {shown}: it runs the workspace virtualenv {rel[: -len(VENV)]}, and a workspace "
                "hook runs only from a private copy of the files you approved, which cannot hold a virtualenv. Run it with a "
                "python outside the workspace (python3 hooks/x.py), or put the hook in your own ~/.config/cog/config.toml"
            )
    base = _private_folder(root)
    key = hashlib.sha256(json.dumps([command, sorted(files.items())]).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    final = base / key
    if _intact(final, files):
        return final
    made = Path(tempfile.mkdtemp(prefix=".new-", dir=base))
    try:
        for rel, fingerprint in files.items():
            _place(root, made, rel, fingerprint, shown)
        if os.path.lexists(final):
            shutil.rmtree(final)  # a damaged copy (a file removed or changed): made again
        os.rename(made, final)
    except BaseException:
        shutil.rmtree(made, ignore_errors=True)
        raise
    return final


def _private_folder(root: Path) -> Path:
    """``<state>/workspaces/<key>/hook-copies``: made 0700, refused if it is a link or lies inside
    the workspace (an ``XDG_STATE_HOME`` pointing there)."""
    from cogcli.settings.person_state import workspace_state
    from workspace_tools.files.journal_key import KeyUnusable

    try:  # an XDG_STATE_HOME inside the workspace gives way to the default; a default inside it too is refused
        folder = workspace_state(root) / SNAPSHOTS
    except KeyUnusable as exc:
        raise ConfigError(str(exc)) from None
    if resolves_inside(folder.parent, root):
        raise ConfigError(
            f"cog keeps the approved copies of workspace hooks in {folder.parent}, which is inside the workspace (where a "
            "test or the model could rewrite them); set XDG_STATE_HOME to a folder outside it"
        )
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    for place in (folder.parent, folder):
        if stat.S_ISLNK(os.lstat(place).st_mode):
            raise ConfigError(f"{place} is a link; cog keeps approved hook copies only in a folder of its own. Remove the link")
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise ConfigError(f"{folder} is not a folder of yours; remove it (cog makes it again)")
    os.chmod(folder, 0o700)
    return folder


def _safe(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and ".." not in parts and "" not in parts[:-1] and "\x00" not in rel


def _place(root: Path, into: Path, rel: str, fingerprint: str, shown: str) -> None:
    """Copy one approved entry into ``into``; a file is checked against its sha256 while copied."""
    if not _safe(rel.rstrip("/")) or not (fingerprint.startswith(SHA) or fingerprint.startswith(OUTSIDE)):
        return  # absent names, folders, "not executable": nothing to copy (absent stays absent)
    target = into / rel
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if fingerprint.startswith(OUTSIDE):  # the person's own file, reached through a link the approval recorded
        os.symlink(fingerprint[len(OUTSIDE):], target)
        return
    source = os.path.realpath(os.path.join(root, rel))
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _changed(shown, rel, exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _changed(shown, rel, "no longer a file")
        mode = 0o700 if info.st_mode & 0o111 else 0o600
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        digest = hashlib.sha256()
        with os.fdopen(out, "wb") as f:
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
                f.write(chunk)
    finally:
        os.close(fd)
    if SHA + digest.hexdigest() != fingerprint:
        raise _changed(shown, rel, "its bytes are not the ones you approved")


def _changed(shown: str, rel: str, why: str) -> ConfigError:
    return ConfigError(
        f"not running the workspace hook {shown}: {json.dumps(rel)} changed while cog copied it ({why}). Something is "
        "writing the workspace: review the change, then run `cog trust` in this workspace"
    )


def _intact(folder: Path, files: Mapping[str, str]) -> bool:
    """Whether an earlier copy still holds exactly the approved entries."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    for rel, fingerprint in files.items():
        if not _safe(rel.rstrip("/")):
            continue
        path = folder / rel
        if fingerprint.startswith(OUTSIDE):
            if not path.is_symlink() or os.readlink(path) != fingerprint[len(OUTSIDE):]:
                return False
        elif fingerprint.startswith(SHA):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                return False
            digest = hashlib.sha256()
            with os.fdopen(fd, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
            if SHA + digest.hexdigest() != fingerprint:
                return False
    return True
