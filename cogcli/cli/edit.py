"""``cog edit``: its options and help; the body is :func:`cogcli.commands.edit.run_edit`."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from cogcli.cli.typer_app import (
    EXIT_CODES,
    DirectoryOption,
    Format,
    FormatOption,
    JsonOption,
    OutputSchemaOption,
    WorktreeNameOption,
    WorktreeOption,
    app,
    resume_gc,
)
from typer.core import TyperCommand

from cogcli.cli.ray_option import ray_address
from cogcli.cli.setting_flags import with_settings
from cogcli.settings.options import EDIT, SettingFlags


class _EditCommand(TyperCommand):
    """``--ray`` with or without its ADDRESS (``cog edit --attempts 3 --ray "Fix add"``)."""

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        return super().parse_args(ctx, ray_address(args))


@app.command(cls=_EditCommand, epilog=EXIT_CODES)
@with_settings(EDIT)
def edit(
    instruction: Annotated[Optional[str], typer.Argument(metavar="INSTRUCTION", help="What to do, in plain words; - reads it from stdin.", show_default=False)] = None,
    json_flag: JsonOption = False,
    fmt: FormatOption = Format.text,
    thread: Annotated[Optional[str], typer.Option("--thread", metavar="ID", help="Continue this thread.", show_default=False)] = None,
    record: Annotated[Optional[Path], typer.Option("--record", metavar="PATH", help="Record the model's turns to a cassette (replay: --model replay:PATH).", show_default=False)] = None,
    directory: DirectoryOption = None,
    commit: Annotated[bool, typer.Option("--commit", help="Commit the files the run changed (message from the instruction).")] = False,
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="With --commit: run even with uncommitted changes.")] = False,
    commit_hooks: Annotated[bool, typer.Option("--commit-hooks", help="With --commit: run the repository's commit hooks (unsandboxed; only those unchanged since the run started).")] = False,
    instruction_file: Annotated[Optional[Path], typer.Option("--file", metavar="PATH", help="Read the instruction from PATH (instead of INSTRUCTION).", show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="Continue the most recent thread of this workspace.")] = False,
    plan: Annotated[bool, typer.Option("--plan", help='Plan mode: only tools that change nothing run (reads, searches); the model ends with a plan. Run it with cog edit --last "go".')] = False,
    output_schema: OutputSchemaOption = None,
    worktree: WorktreeOption = False,
    worktree_name: WorktreeNameOption = None,
    attempts: Annotated[Optional[int], typer.Option("--attempts", metavar="N", min=1, max=8, help="Best-of-N: N attempts (2 to 8) side by side, each in its own worktree; the one whose tests pass most (then the fewest changed lines, then the cost) is applied here (cog undo takes it back); the others stay as branches (docs/worktrees.md).", show_default=False)] = None,
    ray: Annotated[Optional[str], typer.Option("--ray", metavar="[ADDRESS]", help="With --attempts: run the attempts as Ray tasks: alone, on a local Ray started for them; with ADDRESS (auto, ray://head:10001), on that cluster (docs/worktrees.md).", show_default=False)] = None,
    image: Annotated[Optional[list[Path]], typer.Option("--image", metavar="PATH", help="An image (PNG, JPEG, GIF, WebP) the model sees with the instruction; again for more.", show_default=False)] = None,
    *,
    flags: SettingFlags,
) -> None:
    """Run the coding agent on INSTRUCTION in this repository.

    \b
    The repository's AGENTS.md files (root down to the current directory; AGENTS.override.md
    first, then the instruction_files of cog.toml or [tool.cog], such as CLAUDE.md) and ~/.config/cog/AGENTS.md
    are given to the model; the history it reads is compacted before it would overflow the
    model's context window (memory keeps every full result)."""
    from cogcli.commands.edit import edit_command

    code = edit_command(
        instruction=instruction, json_flag=json_flag, fmt=fmt.value, thread=thread, record=record, directory=directory,
        commit=commit, allow_dirty=allow_dirty, commit_hooks=commit_hooks, instruction_file=instruction_file, last=last,
        plan=plan, output_schema=output_schema, worktree=worktree, worktree_name=worktree_name, attempts=attempts,
        ray=ray, image=image, flags=flags, on_started=resume_gc,
    )
    raise typer.Exit(code)
