"""cog's version, in a module of its own so that anything (the MCP client, the ACP agent) can
name it without importing the ``cogcli`` facade."""

__version__ = "0.1.0"
