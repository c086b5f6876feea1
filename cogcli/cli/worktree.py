"""``cog worktree list|merge|remove``: cog's git worktrees (``cog edit --worktree``, ``--attempts``);
the bodies are :mod:`cogcli.commands.worktree`."""

from typing import Annotated

import typer

from cogcli.cli.typer_app import DirectoryOption, app, workspace

worktree_app = typer.Typer(
    help="cog's git worktrees (cog edit/chat --worktree, cog edit --attempts): list, merge, remove. See docs/worktrees.md.",
    no_args_is_help=True, rich_markup_mode=None,
)
app.add_typer(worktree_app, name="worktree")
NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The worktree's name (its branch is cog/NAME).", show_default=False)]


@worktree_app.command("list")
def list_(
    directory: DirectoryOption = None,
    json_flag: Annotated[bool, typer.Option("--json", help="One JSON object per worktree.")] = False,
) -> None:
    """cog's worktrees: name, branch, commits and diff stats against where they left the current
    branch, uncommitted changes, folder."""
    from cogcli.commands.worktree import list_command

    raise typer.Exit(list_command(workspace(directory), as_json=json_flag))


@worktree_app.command()
def merge(name: NameArgument, directory: DirectoryOption = None) -> None:
    """Bring cog/NAME's commits into the current branch (fast-forward, else a merge commit).
    A conflict is refused naming its files, with nothing changed (exit 1)."""
    from cogcli.commands.worktree import merge_command

    raise typer.Exit(merge_command(workspace(directory), name))


@worktree_app.command()
def remove(
    name: NameArgument,
    directory: DirectoryOption = None,
    force: Annotated[bool, typer.Option("--force", help="Remove it even with uncommitted changes.")] = False,
) -> None:
    """Remove the worktree NAME and its branch cog/NAME (refused with uncommitted changes unless --force)."""
    from cogcli.commands.worktree import remove_command

    raise typer.Exit(remove_command(workspace(directory), name, force=force))
