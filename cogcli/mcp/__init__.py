"""MCP servers' tools in a run, over the official ``mcp`` SDK: :mod:`cogcli.mcp.client` starts the
servers of ``cog edit --mcp "CMD ARGS"`` (and the approved ones a workspace names) and offers their
tools to the agent as ordinary :class:`cogcli.Tool` objects, progress and all.

The other direction, ``cog mcp`` serving cog's tools to any MCP client, is a front end:
:mod:`cogcli.adapters.mcp_server`. The ``_meta`` keys both sides read are declared here.

Nothing here imports ``mcp`` at import time: ``cog --help`` stays fast. Import the submodules.
"""

#: ``_meta`` keys of a call result served by ``cog mcp``
META_DETAILS = "cogcli/details"
META_PRESENTATION = "cogcli/presentation"
META_ERROR_CODE = "cogcli/errorCode"

__all__ = ["META_DETAILS", "META_ERROR_CODE", "META_PRESENTATION"]
