"""``cog acp``: cog as an Agent Client Protocol agent for editors; the body is :mod:`cogcli.acp`."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from cogcli.cli.app import (
    AllowSecretOption,
    MaxCostOption,
    MaxTokensOption,
    PassEnvOption,
    SandboxOption,
    SandboxWritableOption,
    app,
    fail,
)


@app.command("acp")
def acp_command(
    directory: Annotated[
        Optional[Path],
        typer.Option("-C", "--directory", metavar="DIR", help="Start in DIR (a session's workspace is the git repository of the cwd the editor gives).", show_default=False),
    ] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", metavar="PROVIDER:MODEL", help="provider:model (default: COG_MODEL, then model in cog.toml or [tool.cog]).", show_default=False)] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, metavar="N", help="Stop a turn after this many model turns (default 25).", show_default=False)] = None,
    test_command: Annotated[Optional[str], typer.Option("--test-command", metavar="COMMAND", help="The command run_tests runs (default: pytest).", show_default=False)] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", min=0.001, metavar="SECONDS", help="Seconds each tool call may take.", show_default=False)] = None,
    mcp: Annotated[Optional[list[str]], typer.Option("--mcp", metavar="COMMAND", help='Add the tools of an MCP server: --mcp "CMD ARGS" (repeatable; the editor\'s MCP servers are added too).', show_default=False)] = None,
    sandbox: SandboxOption = None,
    allow_secret: AllowSecretOption = None,
    pass_env: PassEnvOption = None,
    sandbox_writable: SandboxWritableOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Run every call without asking (default: the editor asks before a call that writes files or runs code).")] = False,
    no_instructions: Annotated[bool, typer.Option("--no-instructions", help="Read no AGENTS.md (nor ~/.config/cog/AGENTS.md).")] = False,
    context_window: Annotated[Optional[int], typer.Option("--context-window", min=1024, max=10_000_000, metavar="TOKENS", help="The model's context window in tokens (default: as cog edit).", show_default=False)] = None,
    max_tokens: MaxTokensOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim).

    \b
    The editor starts `cog acp` and talks JSON-RPC to it; stdout carries nothing else, and
    logs go to stderr. Each session runs in the git repository of the folder the editor opens,
    with the same settings, tools, sandbox and instructions as cog edit; its id is the id of the
    thread it continues (cog thread list). Calls that write files or run code are asked about in
    the editor unless --yes is given."""
    import os

    if directory is not None:
        try:
            os.chdir(directory.expanduser())
        except OSError as exc:
            fail(f"cannot start in {str(directory)!r}: {exc.strerror or exc}")

    import sys

    import anyio

    from cogcli.acp.agent import AcpOptions, serve_stdio

    if sys.stdin.isatty():
        from cogcli.shown import say

        say("cog acp speaks JSON-RPC on stdin and stdout: an editor starts it (Ctrl-D ends it)")

    options = AcpOptions(
        model=model,
        max_steps=max_steps,
        test_command=test_command,
        timeout=timeout,
        mcp=list(mcp or []),
        sandbox=sandbox.value if sandbox else None,
        allow_secrets=list(allow_secret or []),
        pass_env=list(pass_env or []),
        sandbox_writable=list(sandbox_writable or []),
        context_window=context_window,
        no_instructions=no_instructions,
        yes=yes,
        budget=(max_tokens, max_cost),
    )
    received = anyio.run(serve_stdio, options)
    raise typer.Exit(128 + received if received else 0)
