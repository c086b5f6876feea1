"""``cog chat``: its options and help; the body is :func:`cogcli.commands.chat.run_chat`."""

from typing import Annotated, Optional

import typer

from cogcli.cli.typer_app import DirectoryOption, WorktreeNameOption, WorktreeOption, app
from cogcli.cli.setting_flags import with_settings
from cogcli.settings.options import CHAT, SettingFlags


@app.command()
@with_settings(CHAT)
def chat(
    directory: DirectoryOption = None,
    thread: Annotated[Optional[str], typer.Option("--thread", metavar="ID", help="Continue this thread.", show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="Continue the most recent thread of this workspace.")] = False,
    worktree: WorktreeOption = False,
    worktree_name: WorktreeNameOption = None,
    *,
    flags: SettingFlags,
) -> None:
    """Talk with the coding agent in this repository: each line you type runs in one thread.

    \b
    Rows and approvals as with cog edit on a terminal. Enter sends; Alt-Enter or a trailing \\
    starts a new line. Ctrl-C stops a run (the thread is kept) or clears the line; twice on an
    empty line, or Ctrl-D, leaves. Lines typed are kept in your state folder (~/.local/state/cog).
    Commands: /undo /rewind /allowed /diff /jobs /model /compact /thread /new /help /exit.
    An [a]lways answer holds for the chat session (/allowed lists and drops them).
    Plain `cog` on a terminal opens the chat too."""
    from cogcli.commands.chat import chat_command

    code = chat_command(directory=directory, thread=thread, last=last, worktree=worktree, worktree_name=worktree_name, flags=flags)
    raise typer.Exit(code)
