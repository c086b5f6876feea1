"""``cog chat``: its options and help; the body is :func:`cogcli.commands.chat.run_chat`."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from cogcli.cli.app import DirectoryOption, MaxCostOption, MaxTokensOption, app, workspace


@app.command()
def chat(
    directory: DirectoryOption = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", metavar="PROVIDER:MODEL", help="provider:model (default: COG_MODEL, then model in cog.toml or [tool.cog]); /model changes it.", show_default=False)] = None,
    thread: Annotated[Optional[str], typer.Option("--thread", metavar="ID", help="Continue this thread.", show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="Continue the most recent thread of this workspace.")] = False,
    context_window: Annotated[Optional[int], typer.Option("--context-window", min=1024, max=10_000_000, metavar="TOKENS", help="The model's context window in tokens (as for cog edit).", show_default=False)] = None,
    no_instructions: Annotated[bool, typer.Option("--no-instructions", help="Read no AGENTS.md (nor ~/.config/cog/AGENTS.md).")] = False,
    max_tokens: MaxTokensOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Talk with the coding agent in this repository: each line you type runs in one thread.

    \b
    Rows and approvals as with cog edit on a terminal. Enter sends; Alt-Enter or a trailing \\
    starts a new line. Ctrl-C stops a run (the thread is kept) or clears the line; twice on an
    empty line, or Ctrl-D, leaves. Lines typed are kept in your state folder (~/.local/state/cog).
    Commands: /undo /rewind /allowed /diff /model /compact /thread /new /help /exit.
    An [a]lways answer holds for the chat session (/allowed lists and drops them).
    Plain `cog` on a terminal opens the chat too."""
    from cogcli.commands.chat import ChatOptions, run_chat

    if thread and last:
        from cogcli.cli.app import fail

        fail("--thread and --last both name a thread to continue; give one")
    code = run_chat(
        ChatOptions(
            root=workspace(directory),
            cwd=(directory or Path.cwd()).expanduser().resolve(),
            model=model,
            thread=thread,
            last=last,
            context_window=context_window,
            no_instructions=no_instructions,
            max_tokens=max_tokens,
            max_cost=max_cost,
        )
    )
    raise typer.Exit(code)
