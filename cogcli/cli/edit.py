"""``cog edit``: its options and help; the body is :func:`cogcli.commands.edit.run_edit`."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from cogcli.cli.app import (
    EXIT_CODES,
    AllowSecretOption,
    ApprovalMode,
    DirectoryOption,
    Format,
    FormatOption,
    JsonOption,
    MaxCostOption,
    MaxTokensOption,
    OutputSchemaOption,
    AllowOption,
    CommandNetworkOption,
    PassEnvOption,
    SandboxOption,
    SandboxWritableOption,
    app,
    fail,
    workspace,
)


@app.command(epilog=EXIT_CODES)
def edit(
    instruction: Annotated[Optional[str], typer.Argument(metavar="INSTRUCTION", help="What to do, in plain words; - reads it from stdin.", show_default=False)] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", metavar="PROVIDER:MODEL", help="provider:model (default: COG_MODEL, then model in cog.toml or [tool.cog]).", show_default=False)] = None,
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
    mcp: Annotated[Optional[list[str]], typer.Option("--mcp", metavar="COMMAND", help='Add the tools of an MCP server: --mcp "CMD ARGS", or its URL for one over HTTP (repeatable).', show_default=False)] = None,
    sandbox: SandboxOption = None,
    allow_secret: AllowSecretOption = None,
    pass_env: PassEnvOption = None,
    sandbox_writable: SandboxWritableOption = None,
    allow: AllowOption = None,
    command_network: CommandNetworkOption = None,
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
    plan: Annotated[bool, typer.Option("--plan", help='Plan mode: only tools that change nothing run (reads, searches); the model ends with a plan. Run it with cog edit --last "go".')] = False,
    plan_allow: Annotated[Optional[list[str]], typer.Option("--plan-allow", metavar="TOOL", help="With --plan: let this tool run too though it is not read-only, e.g. run_tests (repeatable; COG_PLAN_ALLOW=a,b).", show_default=False)] = None,
    context_window: Annotated[Optional[int], typer.Option("--context-window", min=1024, max=10_000_000, metavar="TOKENS", help="The model's context window, 1024 to 10,000,000 tokens (default: COG_CONTEXT_WINDOW, context_window in cog.toml or [tool.cog], else known models' own or what the server reports).", show_default=False)] = None,
    output_schema: OutputSchemaOption = None,
    max_tokens: MaxTokensOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Run the coding agent on INSTRUCTION in this repository.

    \b
    The repository's AGENTS.md files (root down to the current directory; AGENTS.override.md
    first, then the instruction_files of cog.toml or [tool.cog], such as CLAUDE.md) and ~/.config/cog/AGENTS.md
    are given to the model; the history it reads is compacted before it would overflow the
    model's context window (memory keeps every full result)."""
    from cogcli.commands.edit import EditOptions, run_edit
    from cogcli.plan_mode import plan_allow_names

    code = run_edit(
        EditOptions(
            instruction=instruction,
            root=workspace(directory),
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
            allow=list(allow or []),
            command_network=command_network,
            instruction_file=instruction_file,
            last=last,
            cwd=(directory or Path.cwd()).expanduser().resolve(),
            context_window=context_window,
            no_instructions=no_instructions,
            output_schema=output_schema,
            max_tokens=max_tokens,
            max_cost=max_cost,
            plan=plan,
            plan_allow=plan_allow_names(plan_allow),
        )
    )
    raise typer.Exit(code)


def _approval_mode(approval: ApprovalMode | None, yes: bool) -> str | None:
    if yes and approval not in (None, ApprovalMode.auto):
        fail(f"--yes means --approval auto; it cannot go with --approval {approval.value}")  # type: ignore[union-attr]
    return "auto" if yes else approval.value if approval else None


