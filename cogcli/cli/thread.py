"""``cog render``, ``cog schema``, ``cog thread list|show|export|import`` and ``cog undo``: what runs left
behind, drawn again, described or put back."""

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from cogcli.cli.typer_app import (
    DirectoryOption,
    Format,
    FormatOption,
    JsonOption,
    Schema,
    app,
    fail,
    renderer,
    thread_app,
    workspace,
)


@app.command("render")
def render_command(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A JSON-lines event stream (from --json); - for stdin.")] = "-",
    fmt: Annotated[Format, typer.Option("--format", "-f", help="text or github.")] = Format.text,
) -> None:
    """Draw a saved event stream (cog edit --json …) as the live run drew it.

    Unknown event types are skipped; a malformed line is reported on stderr with its line
    number and skipped.
    """
    from cogcli.render.jsonl import read_events

    if fmt is Format.jsonl:
        fail("cog render draws text or github; the input already is JSON lines")
    if file == "-":
        stream = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False)
    else:
        try:
            stream = open(file, encoding="utf-8", errors="replace")
        except OSError as exc:
            fail(f"cannot read {file}: {exc.strerror}")

    def problem(number: int, message: str) -> None:
        from cogcli.shown.visible import say

        say(f"line {number}: {message}; skipped", prefix="cog render: ")

    out = renderer(fmt, False)
    with stream:
        try:
            for event in read_events(stream, problem):
                out.handle(event)
        except KeyboardInterrupt:
            out.close()
            raise typer.Exit(130) from None
    out.close()


@app.command("schema")
def schema_command(which: Annotated[Schema, typer.Argument(metavar="events|presentation|details", help="events, presentation or details.")]) -> None:
    """Print the JSON Schema of the wire events, of a tool presentation or of the workspace tools' details."""
    if which is Schema.events:
        from cogcli.wire.events import events_json_schema

        schema = events_json_schema()
    elif which is Schema.details:
        from cogcli.contract.details import details_json_schema

        schema = details_json_schema()
    else:
        from cogcli.contract.presentation import presentation_json_schema

        schema = presentation_json_schema()
    sys.stdout.write(json.dumps(schema, indent=2) + "\n")


@thread_app.command("list")
def thread_list(
    directory: DirectoryOption = None,
    json_flag: Annotated[bool, typer.Option("--json", help="As JSON.")] = False,
) -> None:
    """List the stored threads of this workspace, newest first."""
    from cogcli.commands.thread import list_command

    raise typer.Exit(list_command(workspace(directory), json_flag))


@thread_app.command("show")
def thread_show(
    thread_id: Annotated[str, typer.Argument(metavar="ID", help="The thread's id (see cog thread list).")],
    json_flag: JsonOption = False,
    fmt: FormatOption = Format.text,
    directory: DirectoryOption = None,
) -> None:
    """Redraw a stored thread with the same rows as the live run."""
    from cogcli.commands.thread import show_command

    raise typer.Exit(show_command(workspace(directory), thread_id, renderer(fmt, json_flag)))


@thread_app.command("export")
def thread_export(
    thread_id: Annotated[Optional[str], typer.Argument(metavar="[ID]", help="The thread's id or a unique prefix (default with --last: the most recent).", show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="atif|jsonl", help="atif: an ATIF trajectory (Harbor's format, one JSON document); jsonl: its events, one a line.")] = "atif",
    last: Annotated[bool, typer.Option("--last", help="The most recent thread of this workspace.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="Write it to FILE instead of stdout.", show_default=False)] = None,
    directory: DirectoryOption = None,
) -> None:
    """Export a stored thread for another tool: an ATIF trajectory (Harbor, Terminal-Bench) or its events."""
    from cogcli.commands.thread import export_command

    if fmt not in ("atif", "jsonl"):
        fail(f"--format must be atif or jsonl, got {fmt!r}")
    if bool(thread_id) == last:
        fail("name the thread: cog thread export ID, or cog thread export --last")
    raise typer.Exit(export_command(workspace(directory), thread_id, fmt, output))


@thread_app.command("import")
def thread_import(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A session file: an ATIF trajectory, a Claude Code transcript (~/.claude/projects/…/*.jsonl) or a Codex session (~/.codex/sessions/…/rollout-*.jsonl).")],
    fmt: Annotated[Optional[str], typer.Option("--format", "-f", metavar="atif|claude-code|codex", help="The file's format (default: recognised from its content).", show_default=False)] = None,
    json_flag: Annotated[bool, typer.Option("--json", help="Print the new thread's id and origin as JSON.")] = False,
    directory: DirectoryOption = None,
) -> None:
    """Bring another agent's session over as a new thread, to continue with cog edit --thread or cog chat --thread.

    Messages, tool calls and their results are kept as text (no call is run again); thinking is
    left out; credentials are redacted and long messages cut on the way in (docs/threads.md).
    """
    from cogcli.commands.thread import import_command

    raise typer.Exit(import_command(workspace(directory), file, fmt, json_flag))


@app.command("undo")
def undo_cmd(
    thread_id: Annotated[Optional[str], typer.Argument(metavar="[THREAD_ID]", help="Walk back this thread only (default: every run here, across threads, newest first).", show_default=False)] = None,
    to: Annotated[Optional[str], typer.Option("--to", metavar="RUN", help="Walk back every run from the newest to this one (its number in `cog undo --list`, with a THREAD_ID in `cog thread show`; or its message id).", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the reverse diff; change nothing.")] = False,
    list_runs: Annotated[bool, typer.Option("--list", help="List the runs undo walks, newest first, with their numbers; change nothing.")] = False,
    conversation: Annotated[bool, typer.Option("--conversation", help="Also rewind the conversation: the model no longer reads the undone runs.")] = False,
    conversation_only: Annotated[bool, typer.Option("--conversation-only", help="Rewind the conversation only; leave the files as they are.")] = False,
    directory: DirectoryOption = None,
) -> None:
    """Put back the files the newest run not yet undone changed; again walks further back, run by run.

    Without a THREAD_ID it walks the runs of this workspace across their threads (each `cog edit`
    starts one), newest first; --list shows them. Acts only on the undo records cog signed for the
    run. A file changed since (by you, or a run not undone) is refused, showing what differs, and
    nothing is written. By default the next run is told what was undone; --conversation drops the
    undone runs from what the model reads.

    \b
    Exit codes: 0 reverted, 1 refused (a file changed since the run; nothing
    was written), 2 no such thread or run, or nothing to undo.
    """
    from cogcli.commands.undo import list_command, undo_command

    if list_runs:
        if to or dry_run or conversation or conversation_only:
            fail("--list only lists the runs; give --to, --dry-run or --conversation without it")
        raise typer.Exit(list_command(workspace(directory), thread_id))
    if conversation and conversation_only:
        fail("--conversation and --conversation-only: pick one (--conversation puts the files back too)")
    raise typer.Exit(undo_command(workspace(directory), thread_id, to=to, dry_run=dry_run, code=not conversation_only, conversation=conversation or conversation_only))
