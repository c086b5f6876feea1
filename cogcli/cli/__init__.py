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
- :mod:`cogcli.cli.worktree` — ``cog worktree list|merge|remove``.

Each module declares its commands on :data:`app` when imported; they are imported here in the
order ``cog --help`` lists them. The bodies of the commands live in :mod:`cogcli.commands`.
"""

from cogcli.cli.typer_app import app, main
from cogcli.cli.batch import batch_app  # noqa: E402 (`cog batch`, after `cog thread`: declared in its own module)

app.add_typer(batch_app, name="batch")
from cogcli.cli import edit, chat, tool, thread, serve, mcp_app, acp, settings, worktree  # noqa: F401,E402 (declare the commands, in this order)

__all__ = ["app", "main"]
