"""The ``cog`` command line. Commands are thin: parse, call the library (a
:class:`cogcli.session.Session` for anything that runs), render.

- :mod:`cogcli.cli.typer_app` — the typer app, shared options, logging, start-up, :func:`main`;
- :mod:`cogcli.cli.edit` — ``cog edit``;
- :mod:`cogcli.cli.chat` — ``cog chat`` (and plain ``cog`` on a terminal);
- :mod:`cogcli.cli.tool` — ``cog tool``, ``cog tools``;
- :mod:`cogcli.cli.thread` — ``cog render``, ``cog schema``, ``cog thread``, ``cog undo``;
- :mod:`cogcli.cli.serve` — ``cog trust``, ``cog serve``;
- :mod:`cogcli.cli.mcp_app` — ``cog mcp`` (serving) and its servers: ``add``, ``list``, ``remove``, ``login``, ``logout``;
- :mod:`cogcli.cli.acp` — ``cog acp``;
- :mod:`cogcli.cli.settings` — ``cog config``;
- :mod:`cogcli.cli.worktree` — ``cog worktree list|merge|remove``;
- :mod:`cogcli.cli.jobs` — ``cog jobs [kill PID]``: background commands kept past their session.

Each module declares its commands on the typer app when imported (:func:`declare`, in the order
``cog --help`` lists them). :data:`app` (``from cogcli.cli import app``) is the app with every
command declared. :func:`main`, the console script, declares only the module of the command on its
command line when it names one (``cog tools``, ``cog edit …``): typer builds the parameters of
every declared command at start, and a one-off command should not pay for the others (issue 53).
Before that, ``cog edit``, ``cog chat``, ``cog tool`` and ``cog tools`` skip typer altogether when
their command line is one :func:`cogcli.cli.lean_start.quick_main` understands.
Anything else (``cog``, ``cog --help``, a mistyped name) gets every command. The bodies of the
commands live in :mod:`cogcli.commands`.
"""

import sys
from typing import Any

#: the first word of a command line -> the module of cogcli.cli that declares it
MODULE_OF = {
    "batch": "batch", "edit": "edit", "chat": "chat", "tool": "tool", "tools": "tool",
    "render": "thread", "schema": "thread", "thread": "thread", "undo": "thread",
    "trust": "serve", "serve": "serve", "mcp": "mcp_app", "acp": "acp", "config": "settings",
    "worktree": "worktree", "jobs": "jobs",
}
#: ``cog``'s own options, before the command's name (the eager ones print and end: every command)
_FLAGS = {"-v", "--verbose"}
_declared: set[str] = set()


def declare(names: set[str] | None = None) -> None:
    """Import the modules of cogcli.cli that declare ``names`` (the modules' names; None: all),
    in ``cog --help``'s order. Each is declared once."""
    from cogcli.cli.typer_app import app

    order = ("batch", "edit", "chat", "tool", "thread", "serve", "mcp_app", "acp", "settings", "worktree", "jobs")
    for name in order:
        if name in _declared or (names is not None and name not in names):
            continue
        _declared.add(name)
        if name == "batch":
            from cogcli.cli.batch import batch_app

            app.add_typer(batch_app, name="batch")  # after `cog thread` in the help: declared in its own module
        else:
            __import__(f"cogcli.cli.{name}")


def invoked(argv: list[str]) -> str | None:
    """The module declaring the command ``argv`` names (``cog -v tools``: ``tool``), or None."""
    for word in argv:
        if word in _FLAGS:
            continue
        return MODULE_OF.get(word)
    return None


def main() -> None:
    """The console script ``cog``: only the invoked command declared (see the module's doc)."""
    from cogcli.cli.lean_start import no_pydantic_plugins, quick_main

    no_pydantic_plugins()  # cog's models use none: pydantic reads no distribution's metadata for them
    code = quick_main(sys.argv[1:])  # `cog edit|chat|tool|tools …` without typer when its words are all known
    if code is not None:
        raise SystemExit(code)
    from cogcli.cli import typer_app

    module = invoked(sys.argv[1:])
    declare(None if module is None else {module})
    typer_app.main()


def __getattr__(name: str) -> Any:
    if name == "app":  # every command declared
        from cogcli.cli.typer_app import app

        declare()
        return app
    raise AttributeError(name)


__all__ = ["app", "main", "declare"]
