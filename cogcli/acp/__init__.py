"""``cog acp``: cog as an Agent Client Protocol agent (JSON-RPC on stdin/stdout), so an editor that
speaks ACP (Zed, JetBrains IDEs, Neovim's CodeCompanion and avante.nvim, Emacs' agent-shell) drives
cog's runs: live text, calls with their kind, title, locations, progress and diffs, approvals.

- :mod:`cogcli.acp.agent` — :class:`~cogcli.acp.agent.CogAgent` (initialize, session/new, /load,
  /prompt, /cancel) on a :class:`cogcli.session.Session` per ACP session, and
  :func:`~cogcli.acp.agent.serve_stdio`;
- :mod:`cogcli.acp.mapping` — cog's events as ACP session updates (live and replayed);
- :mod:`cogcli.acp.permissions` — the run's ``approve`` hook as ``session/request_permission``;
- :mod:`cogcli.acp.prompt` — a prompt's content blocks as cog's instruction.

The SDK (``acp``) is imported by these modules: import them only when serving.
"""
