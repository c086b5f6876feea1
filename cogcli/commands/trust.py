"""``cog trust``: list the workspace's start-up commands, with the workspace files each runs, and
approve them. Every command, path and file name is shown with its control characters escaped."""

from __future__ import annotations

import sys
from pathlib import Path

from cogcli.settings.load import read_config
from cogcli.contract.errors import ConfigError
from cogcli.hooks.trust import workspace_entries
from cogcli.shown.visible import say, visible
from cogcli.settings.trust import (
    Review,
    _ask_on_terminal,
    _terminal,
    approve,
    command_files,
    describe_file,
    load_store,
    question,
    review,
    save_store,
    store_path,
)

SETTINGS = ("mcp_servers",)


def _line(state: str, setting: str, checked: Review) -> str:
    line = f"{state:<13} {setting}: {visible(checked.command, one_line=True)}"
    if checked.changed:
        line += f"  (changed since approved: {', '.join(visible(p, one_line=True) for p in checked.changed)})"
    files = "".join(f"\n                runs {describe_file(path, fp)}" for path, fp in checked.files.items())
    return line + files + "\n"


def trust(root: Path, *, approve_all: bool = False, list_only: bool = False) -> int:
    """0 all approved, 1 some left unapproved, 2 bad configuration. ``list_only``: ask nothing."""
    try:
        config = read_config(root)
        store = load_store()
    except ConfigError as exc:
        say(exc.message)
        return 2
    listed = [(setting, command) for setting in SETTINGS for command in getattr(config, setting)]
    listed += [(f"mcp_servers.{name}", server.url) for name, server in config.remote_servers.items()]  # its URL approved
    listed += list(workspace_entries(config.hooks))  # its hooks: approved with their event, matcher, timeout and pass_env
    if not listed:
        sys.stdout.write(
            f"{visible(str(root), one_line=True)}: neither cog.toml nor pyproject.toml ([tool.cog]) names commands to run (mcp_servers, hooks); nothing to approve.\n"
        )
        return 0
    interactive = _terminal() and not list_only
    left = 0
    changed = False
    for setting, command in listed:
        checked = review(store, root, setting, command)
        if checked.approved:
            sys.stdout.write(_line("approved", setting, checked))
            continue
        if (approve_all and not list_only) or (interactive and _ask_on_terminal(question(root, setting, command, checked, source=config.sources.get("remote_servers" if setting.startswith("mcp_servers.") else setting.split(".")[0], "pyproject.toml")))):
            if command_files(root, command) != checked.files:  # changed while the person read the question
                left += 1
                sys.stdout.write(_line("NOT approved", setting, checked))
                say(f"the files {command!r} runs changed while you were asked; run cog trust again to review them")
                continue
            approve(store, root, setting, command, checked.files)
            changed = True
            sys.stdout.write(_line("approved now", setting, checked))
        else:
            left += 1
            sys.stdout.write(_line("NOT approved", setting, checked))
    if changed:
        save_store(store)
    if left:
        how = (
            "answer y" if interactive else "run cog trust to approve" if list_only
            else "run cog trust on a terminal, or cog trust --approve"
        )
        say(f"{left} command(s) not approved; cog will not start them ({how}). Approvals: {store_path()}")
        return 1
    return 0
