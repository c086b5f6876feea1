"""``cog jobs`` and ``cog jobs kill PID``: the background commands the person kept past their
session's end (chat's ``/jobs keep ID``, ``cog edit --keep-jobs``; :mod:`workspace_tools.shell.kept`)."""

from typing import Annotated

import typer

from cogcli.cli.typer_app import app

jobs_app = typer.Typer(
    help="Background commands kept past their session (chat's /jobs keep ID, cog edit --keep-jobs): list them, kill one. "
    "See docs/tools.md.",
    invoke_without_command=True, rich_markup_mode=None,
)
app.add_typer(jobs_app, name="jobs")


@jobs_app.callback()
def list_(ctx: typer.Context) -> None:
    """List the kept background commands: pid, state, command, workspace, log."""
    if ctx.invoked_subcommand is not None:
        return
    from cogcli.session.background import kept_text
    from workspace_tools.shell.kept import kept_jobs

    typer.echo(kept_text(kept_jobs()))


@jobs_app.command()
def kill(pid: Annotated[str, typer.Argument(metavar="PID", help="The kept job's pid, as cog jobs lists it.", show_default=False)]) -> None:
    """End a kept background command (its whole process group: SIGTERM, then SIGKILL)."""
    from cogcli.shown.visible import visible
    from workspace_tools.shell.kept import kill_kept

    try:
        record = kill_kept(pid)
    except LookupError as exc:
        typer.echo(f"cog: {visible(str(exc), one_line=True)}", err=True)
        raise typer.Exit(2) from None
    except ProcessLookupError as exc:
        typer.echo(f"cog: {visible(str(exc), one_line=True)}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"killed {record.id}: {visible(record.command, one_line=True)} (its log stays at {visible(record.log)})")
