"""The ``cog`` application: the typer app, the options several commands share, logging, and the
start-up that keeps ``cog --help`` fast. The commands are declared in the modules beside this one
(:mod:`cogcli.cli`), their bodies live in :mod:`cogcli.commands`.

Start-up matters (``cog --help`` runs often): the ``cogcli.cli`` modules import only typer and the
standard library at top level; models, tools, git, httpx and mcp are imported inside the commands.
"""

import enum
import gc
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

# Start-up allocates much and frees little: the cyclic collector's passes over it are wasted time.
# It is off while typer is imported, and while `cog` starts a command (see main and _main).
_collecting = gc.isenabled()
gc.disable()
try:
    import typer
finally:
    if _collecting:
        gc.enable()

from cogcli.cli.lean_start import command_line, lazy_coercion, resume_gc, setup_logging

lazy_coercion()  # a parameter's pydantic coercion built only when a value needs it (cogcli.cli.lean_start)

EXIT_CODES = """\b
Exit codes:
  0    done, and the last test run (if any) passed
  1    the run finished but the task failed: an error, the step limit, failing tests,
       calls refused approval (finish status denied), a budget spent (--max-tokens,
       --max-cost: status budget_exceeded), no answer valid against --output-schema
  2    usage or configuration error (no model, unknown provider, missing API key)
  130  interrupted by Ctrl-C: the run stops, its thread is saved (continue: --thread ID)
  143  terminated by SIGTERM: the same as Ctrl-C
  141  stdout's reader went away (cog edit --json … | head -1): the run stops"""

HELP = """\
A coding agent for the command line.

\b
  cog edit "Fix the failing test"            run the agent in this repository
  cog edit --json "…" | cog render           JSON lines out, the same rows back
  cog chat                                   talk with the agent (plain cog on a terminal too)
  cog tool run_tests                         run one workspace tool, no model
  cog tools                                  the tools, with their parameters

\b
The model comes from --model, else COG_MODEL, else model in cog.toml (or under
[tool.cog] in pyproject.toml): openai:gpt-4o-mini (OPENAI_API_KEY), anthropic:claude-sonnet-4-5
(ANTHROPIC_API_KEY), ollama:llama3.1, or replay:fixtures/cassettes/calc_fix.jsonl
(the offline demo)."""

log = logging.getLogger("cogcli")

app = typer.Typer(
    name="cog",
    help=HELP,
    epilog=EXIT_CODES,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
    invoke_without_command=True,  # plain `cog`: the chat on a terminal, else the help (_no_command)
    context_settings={"help_option_names": ["-h", "--help"]},
)
thread_app = typer.Typer(help="Stored threads: list them, or redraw one as it ran.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(thread_app, name="thread")


class Format(str, enum.Enum):
    text = "text"
    jsonl = "jsonl"
    github = "github"


class Schema(str, enum.Enum):
    events = "events"
    presentation = "presentation"
    details = "details"


# --- shared bits ---------------------------------------------------------------------------

DirectoryOption = Annotated[
    Optional[Path], typer.Option("-C", "--directory", metavar="DIR", help="Run in DIR (its git top level is the workspace).", show_default=False)
]
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON event per line on stdout (same as --format jsonl).")]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="text, jsonl or github (GitHub Actions).")]
OutputSchemaOption = Annotated[
    Optional[Path],
    typer.Option("--output-schema", metavar="FILE", help="The final answer must be JSON valid against the JSON Schema in FILE (an invalid one goes back to the model, 3 tries); finish.output holds it. Never valid: exit 1, OUTPUT_SCHEMA_INVALID.", show_default=False),
]

WorktreeOption = Annotated[
    bool,
    typer.Option("--worktree", help="Run in a new git worktree, .cog/worktrees/NAME on a new branch cog/NAME; its changes are committed there at the end (cog worktree list|merge|remove).", show_default=False),
]
WorktreeNameOption = Annotated[
    Optional[str],
    typer.Option("--worktree-name", metavar="NAME", help="The new worktree's name (implies --worktree; default: cog makes one up).", show_default=False),
]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``cog: message`` on stderr (control characters escaped: it may name a workspace path)
    and exit with ``code`` (2: usage or configuration)."""
    from cogcli.shown.visible import say

    say(message)
    raise typer.Exit(code)


def workspace(directory: Path | None) -> Path:
    from cogcli.settings.load import find_workspace
    from cogcli.contract.errors import ConfigError

    try:
        return find_workspace(directory)
    except ConfigError as exc:
        fail(exc.message)


def renderer(fmt: Format, json_flag: bool, *, show_content: bool = False) -> Any:
    from cogcli.render import make_renderer

    return make_renderer("jsonl" if json_flag else fmt.value, show_content=show_content)


#: commands that list or print and end: the collector stays off while they run (`cog tool` turns it
#: on before the call, which may run long; `cog edit` once its run is under way: its first event)
BRIEF_COMMANDS = {"tools", "tool", "schema", "edit"}


def _version(value: bool) -> None:
    """``cog --version``: the package's version, with nothing but cogcli/__init__.py imported."""
    if value:
        from cogcli import __version__

        typer.echo(f"cog {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    ctx: typer.Context,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (to stderr).")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print cog's version and exit.", is_eager=True, callback=_version)] = False,
) -> None:
    setup_logging(verbose)
    if ctx.invoked_subcommand not in BRIEF_COMMANDS:
        resume_gc()
    if ctx.invoked_subcommand is None:
        _no_command(ctx)


def _no_command(ctx: typer.Context) -> NoReturn:
    """Plain ``cog``: on a terminal it opens ``cog chat``; otherwise it prints the help and exits 2."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        ctx.invoke(ctx.command.get_command(ctx, "chat"))  # type: ignore[attr-defined]
    typer.echo(ctx.get_help())
    raise typer.Exit(2)



def main() -> None:
    """The console script ``cog``, parsed by typer."""
    with command_line():
        app(prog_name="cog")
