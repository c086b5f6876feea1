"""What a tool is written against, and the one way it is called: ``Tool``/``tool()``,
``tool_output``, presentation, ``ToolContext``, errors, details, previews, ``ToolResult``,
``prepare`` and ``invoke_tool``."""
