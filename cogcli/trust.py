"""Commands a workspace's ``[tool.cog]`` names to run on this machine (``mcp_servers``) start only
after the person approved that exact command line.

The workspace is not trusted: a cloned repository, a test, or a model's ``write_file`` can put any
command there. So each (workspace, setting, command line) the person approves is remembered per
user, outside every repository (``~/.config/cog/trusted-commands.json``, or under
``$XDG_CONFIG_HOME``); a changed command line is a new one and is asked about again. On a terminal
cog asks; off a terminal it refuses (exit 2) naming the command and ``cog trust``. ``--yes`` does not
approve these: it approves the model's tool calls, not the workspace's start-up commands. Commands
given on the command line (``--mcp``) are the person's own and need no approval.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from cogcli.errors import ConfigError

STORE_NAME = "trusted-commands.json"


class TrustedCommand(BaseModel):
    workspace: str
    setting: str
    command: str
    approved_at: str = ""


class TrustStore(BaseModel):
    version: int = 1
    commands: list[TrustedCommand] = Field(default_factory=list)


def store_path() -> Path:
    """``$XDG_CONFIG_HOME/cog/trusted-commands.json`` (default ``~/.config/cog/…``)."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    folder = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return folder / "cog" / STORE_NAME


def load_store(path: Path | None = None) -> TrustStore:
    path = path or store_path()
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return TrustStore()
    except OSError as exc:
        raise ConfigError(f"cannot read the approved commands in {path}: {exc.strerror}") from None
    try:
        return TrustStore.model_validate_json(raw)
    except ValidationError:
        raise ConfigError(
            f"{path} is not a valid list of approved commands; fix or delete it (cog trust asks again)"
        ) from None


def save_store(store: TrustStore, path: Path | None = None) -> None:
    """Write atomically (temp file + rename), readable by the user only."""
    path = path or store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(store.model_dump(), indent=2) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_trusted(store: TrustStore, workspace: Path, setting: str, command: str) -> bool:
    key = str(Path(workspace).resolve())
    return any(c.workspace == key and c.setting == setting and c.command == command for c in store.commands)


def approve(store: TrustStore, workspace: Path, setting: str, command: str) -> None:
    if not is_trusted(store, workspace, setting, command):
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        store.commands.append(
            TrustedCommand(workspace=str(Path(workspace).resolve()), setting=setting, command=command, approved_at=now)
        )


def untrusted(workspace: Path, setting: str, commands: Sequence[str], store: TrustStore | None = None) -> list[str]:
    store = store if store is not None else load_store()
    return [c for c in commands if not is_trusted(store, workspace, setting, c)]


def _terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _ask_on_terminal(question: str) -> bool:
    sys.stderr.write(question)
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def question(workspace: Path, setting: str, command: str) -> str:
    return (
        f"cog: {workspace}/pyproject.toml [tool.cog] {setting} wants to run this command on this machine, "
        f"outside the sandbox:\n    {command}\nAllow it (remembered until the command changes)? [y/N] "
    )


def require_trusted(
    workspace: Path,
    setting: str,
    commands: Sequence[str],
    *,
    ask: Callable[[str], bool] | None = None,
    interactive: bool | None = None,
) -> None:
    """Return when every command is approved (asking on a terminal, remembering a yes); raise
    :class:`ConfigError` naming the first refused or unapprovable one otherwise."""
    store = load_store()
    pending = untrusted(workspace, setting, commands, store)
    if not pending:
        return
    interactive = _terminal() if interactive is None else interactive
    ask = ask or _ask_on_terminal
    for command in pending:
        if not interactive:
            raise ConfigError(
                f"not starting {command!r} from [tool.cog] {setting} in {workspace}/pyproject.toml: "
                "a workspace's commands run only once you approved them. Run `cog trust` in this workspace "
                "on a terminal to review and approve it, or pass the server yourself with --mcp"
            )
        if not ask(question(workspace, setting, command)):
            raise ConfigError(
                f"not starting {command!r} from [tool.cog] {setting}: not approved "
                "(approve it with `cog trust`, or remove it from pyproject.toml)"
            )
        approve(store, workspace, setting, command)
        save_store(store)
