"""``cog trust``: list the workspace's start-up commands and approve them."""

from __future__ import annotations

import sys
from pathlib import Path

from cogcli.config import read_config
from cogcli.errors import ConfigError
from cogcli.trust import _ask_on_terminal, _terminal, approve, is_trusted, load_store, question, save_store, store_path

SETTINGS = ("mcp_servers",)


def trust(root: Path, *, approve_all: bool = False) -> int:
    try:
        config = read_config(root)
        store = load_store()
    except ConfigError as exc:
        sys.stderr.write(f"cog: {exc.message}\n")
        return 2
    listed = [(setting, command) for setting in SETTINGS for command in getattr(config, setting)]
    if not listed:
        sys.stdout.write(f"{root}/pyproject.toml names no commands to run ([tool.cog] mcp_servers); nothing to approve.\n")
        return 0
    interactive = _terminal()
    left = 0
    changed = False
    for setting, command in listed:
        if is_trusted(store, root, setting, command):
            sys.stdout.write(f"approved      {setting}: {command}\n")
            continue
        if approve_all or (interactive and _ask_on_terminal(question(root, setting, command))):
            approve(store, root, setting, command)
            changed = True
            sys.stdout.write(f"approved now  {setting}: {command}\n")
        else:
            left += 1
            sys.stdout.write(f"NOT approved  {setting}: {command}\n")
    if changed:
        save_store(store)
    if left:
        how = "answer y" if interactive else "run cog trust on a terminal, or cog trust --approve"
        sys.stderr.write(f"cog: {left} command(s) not approved; cog will not start them ({how}). Approvals: {store_path()}\n")
        return 1
    return 0
