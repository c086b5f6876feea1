"""The ``cog`` command line. Commands are thin: parse, call the library, render.

Start-up matters (``cog --help`` runs often): this module imports only typer and the standard
library at top level; models, tools, git, httpx and mcp are imported inside the commands.
"""

import enum
import gc
import json
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

EXIT_CODES = """\b
Exit codes:
  0    done, and the last test run (if any) passed
  1    the run finished but the task failed: an error, the step limit, failing tests,
       or calls refused approval (finish status denied)
  2    usage or configuration error (no model, unknown provider, missing API key)
  130  interrupted by Ctrl-C: the run stops, its thread is saved (continue: --thread ID)
  143  terminated by SIGTERM: the same as Ctrl-C
  141  stdout's reader went away (cog edit --json … | head -1): the run stops"""

HELP = """\
A coding agent for the command line.

\b
  cog edit "Fix the failing test"            run the agent in this repository
  cog edit --json "…" | cog render           JSON lines out, the same rows back
  cog tool run_tests                         run one workspace tool, no model
  cog tools                                  the tools, with their parameters

\b
The model comes from --model, else COG_MODEL, else model under [tool.cog] in
pyproject.toml: openai:gpt-4o-mini (OPENAI_API_KEY), anthropic:claude-sonnet-4-5
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
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
thread_app = typer.Typer(help="Stored threads: list them, or redraw one as it ran.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(thread_app, name="thread")


class Format(str, enum.Enum):
    text = "text"
    jsonl = "jsonl"
    github = "github"


class Sandbox(str, enum.Enum):
    auto = "auto"
    on = "on"
    off = "off"


class ApprovalMode(str, enum.Enum):
    ask = "ask"
    auto = "auto"
    stdin = "stdin"


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
SandboxOption = Annotated[
    Optional[Sandbox],
    typer.Option(
        "--sandbox",
        help="Run tests under bubblewrap: auto (when it works here; default), on (required, else exit 2), off. "
        "Default: COG_SANDBOX, then [tool.cog] sandbox, then auto.",
        show_default=False,
    ),
]

AllowSecretOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--allow-secret",
        metavar="PATH",
        help="Let the tools read PATH although it looks like a secret (.env, *.pem, id_rsa, …; repeatable).",
        show_default=False,
    ),
]

PassEnvOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--pass-env",
        metavar="NAME",
        help="Give the tests the variable NAME too (repeatable). Tests get an allow-list (PATH, HOME, LANG, "
        "the virtualenv's, CI, …) and never credential-named variables unless passed here.",
        show_default=False,
    ),
]
SandboxWritableOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--sandbox-writable",
        metavar="PATH",
        help="Let tests in the sandbox write PATH too (repeatable; also COG_SANDBOX_WRITABLE=PATH:PATH).",
        show_default=False,
    ),
]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``cog: message`` on stderr (control characters escaped: it may name a workspace path)
    and exit with ``code`` (2: usage or configuration)."""
    from cogcli.shown import say

    say(message)
    raise typer.Exit(code)


class _VisibleFormatter(logging.Formatter):
    """``cog: message``, every control character escaped (log lines carry names and paths from
    the workspace, the model and MCP servers)."""

    def format(self, record: logging.LogRecord) -> str:
        from cogcli.shown import visible

        return visible(super().format(record))


def _setup_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("cog: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose else logging.WARNING)
    log.propagate = False


def _workspace(directory: Path | None) -> Path:
    from cogcli.config import find_workspace
    from cogcli.errors import ConfigError

    try:
        return find_workspace(directory)
    except ConfigError as exc:
        fail(exc.message)


def _renderer(fmt: Format, json_flag: bool, *, show_content: bool = False) -> Any:
    from cogcli.render import make_renderer

    return make_renderer("jsonl" if json_flag else fmt.value, show_content=show_content)


#: commands that list or print and end: the collector stays off while they run (`cog tool` turns it
#: on before the call, which may run long)
BRIEF_COMMANDS = {"tools", "tool", "schema"}
_gc_paused = False


def _resume_gc() -> None:
    """Turn the collector back on if :func:`main` turned it off for start-up."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.enable()


@app.callback()
def _main(ctx: typer.Context, verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (to stderr).")] = False) -> None:
    _setup_logging(verbose)
    if ctx.invoked_subcommand not in BRIEF_COMMANDS:
        _resume_gc()


# --- cog edit ------------------------------------------------------------------------------


@app.command(epilog=EXIT_CODES)
def edit(
    instruction: Annotated[Optional[str], typer.Argument(metavar="INSTRUCTION", help="What to do, in plain words; - reads it from stdin.", show_default=False)] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", metavar="PROVIDER:MODEL", help="provider:model (default: COG_MODEL, then [tool.cog] model).", show_default=False)] = None,
    json_flag: JsonOption = False,
    fmt: FormatOption = Format.text,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, metavar="N", help="Stop after this many model turns (default 25).", show_default=False)] = None,
    test_command: Annotated[Optional[str], typer.Option("--test-command", metavar="COMMAND", help="The command run_tests runs (default: pytest).", show_default=False)] = None,
    thread: Annotated[Optional[str], typer.Option("--thread", metavar="ID", help="Continue this thread.", show_default=False)] = None,
    record: Annotated[Optional[Path], typer.Option("--record", metavar="PATH", help="Record the model's turns to a cassette (replay: --model replay:PATH).", show_default=False)] = None,
    directory: DirectoryOption = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", min=0.001, metavar="SECONDS", help="Seconds each tool call may take.", show_default=False)] = None,
    commit: Annotated[bool, typer.Option("--commit", help="Commit the files the run changed (message from the instruction).")] = False,
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="With --commit: run even with uncommitted changes.")] = False,
    commit_hooks: Annotated[bool, typer.Option("--commit-hooks", help="With --commit: run the repository's commit hooks (unsandboxed; only those unchanged since the run started).")] = False,
    mcp: Annotated[Optional[list[str]], typer.Option("--mcp", metavar="COMMAND", help='Add the tools of an MCP server: --mcp "CMD ARGS" (repeatable).', show_default=False)] = None,
    sandbox: SandboxOption = None,
    allow_secret: AllowSecretOption = None,
    pass_env: PassEnvOption = None,
    sandbox_writable: SandboxWritableOption = None,
    approval: Annotated[
        Optional[ApprovalMode],
        typer.Option(
            "--approval",
            help="Before a call that writes files or runs code: ask (prompt y/n/a on the terminal), auto (run it), "
            'stdin (read {"type":"approval","toolCallId":…,"approved":true} lines). Default: ask on a terminal; '
            "otherwise auto when CI is set, else such calls are refused.",
            show_default=False,
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every call (the same as --approval auto).")] = False,
    instruction_file: Annotated[Optional[Path], typer.Option("--file", metavar="PATH", help="Read the instruction from PATH (instead of INSTRUCTION).", show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="Continue the most recent thread of this workspace.")] = False,
    no_instructions: Annotated[bool, typer.Option("--no-instructions", help="Read no AGENTS.md (nor ~/.config/cog/AGENTS.md).")] = False,
    context_window: Annotated[Optional[int], typer.Option("--context-window", min=1024, max=10_000_000, metavar="TOKENS", help="The model's context window, 1024 to 10,000,000 tokens (default: COG_CONTEXT_WINDOW, context_window in cog.toml or [tool.cog], else known models' own or what the server reports).", show_default=False)] = None,
) -> None:
    """Run the coding agent on INSTRUCTION in this repository.

    \b
    The repository's AGENTS.md files (root down to the current directory; AGENTS.override.md
    first, then [tool.cog] instruction_files such as CLAUDE.md) and ~/.config/cog/AGENTS.md
    are given to the model; the history it reads is compacted before it would overflow the
    model's context window (memory keeps every full result)."""
    from cogcli.commands.edit import EditOptions, run_edit

    code = run_edit(
        EditOptions(
            instruction=instruction,
            root=_workspace(directory),
            model=model,
            format="jsonl" if json_flag else fmt.value,
            max_steps=max_steps,
            test_command=test_command,
            thread=thread,
            record=record,
            timeout=timeout,
            commit=commit,
            allow_dirty=allow_dirty,
            commit_hooks=commit_hooks,
            mcp=list(mcp or []),
            sandbox=sandbox.value if sandbox else None,
            approval=_approval_mode(approval, yes),
            allow_secrets=list(allow_secret or []),
            pass_env=list(pass_env or []),
            sandbox_writable=list(sandbox_writable or []),
            instruction_file=instruction_file,
            last=last,
            cwd=(directory or Path.cwd()).expanduser().resolve(),
            context_window=context_window,
            no_instructions=no_instructions,
        )
    )
    raise typer.Exit(code)


def _approval_mode(approval: ApprovalMode | None, yes: bool) -> str | None:
    if yes and approval not in (None, ApprovalMode.auto):
        fail(f"--yes means --approval auto; it cannot go with --approval {approval.value}")  # type: ignore[union-attr]
    return "auto" if yes else approval.value if approval else None


# --- cog tool / cog tools ------------------------------------------------------------------


@app.command("tool", epilog=EXIT_CODES)
def tool_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The tool's name (see cog tools).", show_default=False)],
    assignments: Annotated[Optional[list[str]], typer.Argument(metavar="KEY=VALUE", help="key=value arguments; values are JSON when they parse as JSON.", show_default=False)] = None,
    args: Annotated[Optional[str], typer.Option("--args", metavar="JSON", help="The arguments as one JSON object.", show_default=False)] = None,
    json_flag: JsonOption = False,
    fmt: FormatOption = Format.text,
    directory: DirectoryOption = None,
    test_command: Annotated[Optional[str], typer.Option("--test-command", metavar="COMMAND", help="The command run_tests runs.", show_default=False)] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", min=0.001, metavar="SECONDS", help="Seconds the call may take.", show_default=False)] = None,
    sandbox: SandboxOption = None,
    allow_secret: AllowSecretOption = None,
    pass_env: PassEnvOption = None,
    sandbox_writable: SandboxWritableOption = None,
) -> None:
    """Call one workspace tool directly (no model), drawn like a call in a run.

    \b
      cog tool read_file path=calc/ops.py
      cog tool run_tests
      cog tool run_tests paths=tests/test_a.py -- -x --lf     (after --: the test runner's own options)
      cog tool edit_file --args '{"path": "a.py", "old_text": "x", "new_text": "y"}'
    """
    from cogcli.commands.tool import call_tool

    root = _workspace(directory)
    options = (test_command, timeout, sandbox.value if sandbox else None, allow_secret, pass_env, sandbox_writable)
    # only the tool called is made (and its module imported); all of them when there is no such
    # tool, so that the error lists them
    tools = _workspace_tools(root, *options, only=[name]) or _workspace_tools(root, *options)
    assignments, passed_through = _split_pass_through(assignments or [])
    arguments = _tool_arguments(name, assignments, args, tools)
    if passed_through:
        if name != "run_tests":
            fail(f"only run_tests takes arguments after -- (the test runner's own options); {name} does not")
        arguments["args"] = [*arguments.get("args", []), *passed_through]
    renderer = _renderer(fmt, json_flag, show_content=True)
    _resume_gc()
    raise typer.Exit(call_tool(name, arguments, tools, renderer, timeout=timeout))


def _split_pass_through(assignments: list[str]) -> tuple[list[str], list[str]]:
    """``cog tool run_tests a=b -- -x --lf``: click drops the ``--`` and puts what follows it at the
    end of the positional arguments; the command line says how many there were."""
    argv = sys.argv[1:]
    if "--" not in argv:
        return assignments, []
    after = len(argv) - argv.index("--") - 1
    if after <= 0:
        return assignments, []
    return assignments[:-after], assignments[-after:]


def _workspace_tools(
    root: Path,
    test_command: str | None,
    timeout: float | None,
    sandbox: str | None,
    allow_secrets: list[str] | None = None,
    pass_env: list[str] | None = None,
    sandbox_writable: list[str] | None = None,
    only: list[str] | None = None,
) -> list[Any]:
    from cogcli.config import load_settings
    from cogcli.errors import ConfigError
    from cogcli.commands.common import make_tools

    try:
        settings = load_settings(
            root, test_command=test_command, timeout=timeout, sandbox=sandbox, allow_secrets=allow_secrets,
            pass_env=pass_env, sandbox_writable=sandbox_writable,
        )
        return make_tools(settings, only=only)
    except ConfigError as exc:
        fail(exc.message)


def _tool_arguments(name: str, assignments: list[str], args: str | None, tools: list[Any]) -> dict[str, Any]:
    """``--args`` JSON, then ``key=value`` pairs on top. A value is JSON when it parses as JSON,
    except for parameters the tool declares as strings, which take the text as it is."""
    arguments: dict[str, Any] = {}
    if args:
        try:
            parsed = json.loads(args)
        except json.JSONDecodeError as exc:
            fail(f"--args is not valid JSON ({exc.msg} at position {exc.pos}); pass one JSON object, e.g. --args '{{\"path\": \"a.py\"}}'")
        except RecursionError:
            fail("--args is nested too deeply to read; pass one flat JSON object, e.g. --args '{\"path\": \"a.py\"}'")
        if not isinstance(parsed, dict):
            fail("--args must be a JSON object, e.g. --args '{\"path\": \"a.py\"}'")
        arguments.update(parsed)
    schema = next((t.input_schema() for t in tools if t.name == name), {})
    properties = schema.get("properties", {})
    for item in assignments:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            fail(f"expected key=value, got {item!r} (e.g. cog tool read_file path=src/a.py)")
        if properties.get(key, {}).get("type") == "string":
            arguments[key] = raw
            continue
        try:
            arguments[key] = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            arguments[key] = raw
    return arguments


@app.command("tools")
def tools_command(
    json_flag: Annotated[bool, typer.Option("--json", help="Names, descriptions and parameter JSON Schemas as JSON.")] = False,
    directory: DirectoryOption = None,
) -> None:
    """List the workspace tools a run can use."""
    root = _workspace(directory)
    tools = _workspace_tools(root, None, None, "off")  # listed, not run: no sandbox check
    if json_flag:
        specs = [{"name": t.name, "description": t.description, "parameters": t.input_schema()} for t in tools]
        sys.stdout.write(json.dumps(specs, indent=2, ensure_ascii=False) + "\n")
        return
    for t in tools:
        schema = t.input_schema()
        required = set(schema.get("required", []))
        params = ", ".join(p if p in required else p + "?" for p in schema.get("properties", {}))
        sys.stdout.write(f"{t.name}({params})\n")
        for line in t.description.strip().splitlines()[:1]:
            sys.stdout.write(f"    {line}\n")
    if any(t.name == "run_tests" for t in tools):
        from cogcli.shown import visible
        from workspace_tools.paths import Workspace
        from workspace_tools.runners import overview

        sys.stdout.write("\n" + visible("\n".join(overview(Workspace(root)))) + "\n")  # names folders of the workspace


# --- cog render / schema / thread ----------------------------------------------------------


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
        from cogcli.shown import say

        say(f"line {number}: {message}; skipped", prefix="cog render: ")

    renderer = _renderer(fmt, False)
    with stream:
        try:
            for event in read_events(stream, problem):
                renderer.handle(event)
        except KeyboardInterrupt:
            renderer.close()
            raise typer.Exit(130) from None
    renderer.close()


@app.command("schema")
def schema_command(which: Annotated[Schema, typer.Argument(metavar="events|presentation|details", help="events, presentation or details.")]) -> None:
    """Print the JSON Schema of the wire events, of a tool presentation or of the workspace tools' details."""
    if which is Schema.events:
        from cogcli.events import events_json_schema

        schema = events_json_schema()
    elif which is Schema.details:
        from cogcli.details import details_json_schema

        schema = details_json_schema()
    else:
        from cogcli.presentation import presentation_json_schema

        schema = presentation_json_schema()
    sys.stdout.write(json.dumps(schema, indent=2) + "\n")


@thread_app.command("list")
def thread_list(
    directory: DirectoryOption = None,
    json_flag: Annotated[bool, typer.Option("--json", help="As JSON.")] = False,
) -> None:
    """List the stored threads of this workspace, newest first."""
    from cogcli.commands.thread import list_command

    raise typer.Exit(list_command(_workspace(directory), json_flag))


@thread_app.command("show")
def thread_show(
    thread_id: Annotated[str, typer.Argument(metavar="ID", help="The thread's id (see cog thread list).")],
    json_flag: JsonOption = False,
    fmt: FormatOption = Format.text,
    directory: DirectoryOption = None,
) -> None:
    """Redraw a stored thread with the same rows as the live run."""
    from cogcli.commands.thread import show_command

    raise typer.Exit(show_command(_workspace(directory), thread_id, _renderer(fmt, json_flag)))


# --- cog undo ------------------------------------------------------------------------------


@app.command("undo")
def undo_cmd(
    thread_id: Annotated[Optional[str], typer.Argument(metavar="[THREAD_ID]", help="The thread whose last run to undo (default: the last run here).", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the reverse diff; change nothing.")] = False,
    directory: DirectoryOption = None,
) -> None:
    """Put back the files a run changed, from its write-ahead journal (else the diffs its thread kept).

    \b
    Exit codes: 0 reverted, 1 refused (a file changed since the run; nothing
    was written), 2 no such thread or nothing to undo.
    """
    from cogcli.commands.undo import undo_command

    raise typer.Exit(undo_command(_workspace(directory), thread_id, dry_run=dry_run))


# --- cog trust -----------------------------------------------------------------------------


@app.command("trust")
def trust_command(
    directory: DirectoryOption = None,
    approve_all: Annotated[bool, typer.Option("--approve", help="Approve every listed command without asking.")] = False,
    list_only: Annotated[bool, typer.Option("--list", help="Only list the commands, the files they run and whether they are approved; ask nothing.")] = False,
) -> None:
    """List the commands this workspace's [tool.cog] would run on this machine (mcp_servers) and
    approve them: asked one by one on a terminal, or all with --approve.

    \b
    A workspace's commands start only once approved, by their exact command line and the sha256
    of each workspace file they run (script, package, program); approvals are kept in
    ~/.config/cog/trusted-commands.json and asked again when a command or one of its files changes.
    Exit codes: 0 all approved, 1 some left unapproved, 2 bad configuration.
    """
    from cogcli.commands.trust import trust

    if approve_all and list_only:
        fail("--list only lists; it cannot go with --approve")
    raise typer.Exit(trust(_workspace(directory), approve_all=approve_all, list_only=list_only))


# --- cog mcp -------------------------------------------------------------------------------


@app.command("mcp")
def mcp_command(
    directory: DirectoryOption = None,
    http: Annotated[Optional[int], typer.Option("--http", metavar="PORT", help="Serve over streamable HTTP on PORT instead of stdio.", show_default=False)] = None,
) -> None:
    """Serve the workspace tools over MCP (stdio by default)."""
    from cogcli.errors import ConfigError
    from cogcli.mcp.server import serve

    try:
        serve(_workspace(directory), http)
    except ConfigError as exc:  # a busy port, a bad workspace
        fail(exc.message)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


# --- cog serve -----------------------------------------------------------------------------


@app.command("serve")
def serve_command(
    directory: DirectoryOption = None,
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="Address to listen on; anything but loopback is reachable from other machines (a warning says so).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port to listen on (0: one the system picks).")] = 0,
    model: Annotated[Optional[str], typer.Option("--model", "-m", metavar="PROVIDER:MODEL", help="Model for runs that name none (default: COG_MODEL, then [tool.cog] model).", show_default=False)] = None,
) -> None:
    """Serve runs over HTTP with server-sent events, and the Studio page that draws them.

    \b
    The first line on stdout is the URL to open, with a fresh token:
      http://127.0.0.1:PORT/?token=TOKEN
    Every /api/ request needs "Authorization: Bearer TOKEN". Ctrl-C aborts
    the runs in flight (each still ends with its finish) and stops.
    """
    from cogcli.commands.serve import run_serve

    raise typer.Exit(run_serve(_workspace(directory), host=host, port=port, model=model))


def main() -> None:
    """The console script ``cog``."""
    try:
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        pass
    global _gc_paused
    if gc.isenabled():  # back on in _main, before any command that may run long
        gc.disable()
        _gc_paused = True
    try:
        app(prog_name="cog")
    finally:
        _quiet_broken_stdout()
        # The process ends now. Freezing what is alive keeps the interpreter's last collections
        # from walking everything typer, pydantic and the tools built (tens of ms of every `cog`);
        # files are closed, atexit handlers and weakref finalizers still run.
        gc.freeze()


def _quiet_broken_stdout() -> None:
    """When stdout's reader went away (``cog … | head``), say nothing more about it at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
