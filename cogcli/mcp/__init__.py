"""MCP in both directions, over the official ``mcp`` SDK.

- :mod:`cogcli.adapters.mcp_server` — ``cog mcp``: serve cog's tools to any MCP client. Content goes out as
  ``structuredContent`` (checked against the tool's ``outputSchema``) plus a text block; ``details``
  and ``presentation`` ride in the result's ``_meta``; ``context.update()`` becomes
  ``notifications/progress`` when the client asked for progress.
- :mod:`cogcli.mcp.client` — ``cog edit --mcp "CMD ARGS"``: start other MCP servers and offer their
  tools to the agent as ordinary :class:`cogcli.Tool` objects, progress and all.

Nothing here imports ``mcp`` at import time: ``cog --help`` stays fast. Import the submodules.
"""

#: ``_meta`` keys of a call result served by ``cog mcp``
META_DETAILS = "cogcli/details"
META_PRESENTATION = "cogcli/presentation"
META_ERROR_CODE = "cogcli/errorCode"

__all__ = ["META_DETAILS", "META_ERROR_CODE", "META_PRESENTATION"]
