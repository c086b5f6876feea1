"""Tools that read, search, edit and test one workspace folder, and never reach outside it.

>>> tools = workspace_tools("path/to/repo", test_command=None)
>>> [t.name for t in tools]
['read_file', 'list_files', 'search_text', 'edit_file', 'write_file', 'git_status', 'git_diff', 'run_tests']

Every path argument goes through :meth:`Workspace.resolve`; each tool returns
``tool_output(content, details, presentation)`` so the model, the app and any client each get
what they need (the diff of an edit is in ``details``, never in what the model reads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cogcli.tools import Tool
from workspace_tools.paths import Workspace


def workspace_tools(
    root: str | Path | Workspace,
    *,
    test_command: str | None = None,
    max_read_bytes: int = 256_000,
    test_timeout: float | None = 600,
    include_git: bool = True,
) -> list[Tool[Any]]:
    """All the workspace tools for ``root``.

    ``test_command`` is a shell command for ``run_tests`` (pytest when None); ``max_read_bytes``
    is the most ``read_file`` returns at once; ``include_git=False`` leaves out git_status/git_diff.
    """
    from workspace_tools.edit import edit_file_tool
    from workspace_tools.git import git_diff_tool, git_status_tool
    from workspace_tools.list import list_files_tool
    from workspace_tools.read import read_file_tool
    from workspace_tools.run_tests import run_tests_tool
    from workspace_tools.search import search_text_tool
    from workspace_tools.write import write_file_tool

    workspace = root if isinstance(root, Workspace) else Workspace(root)
    tools: list[Tool[Any]] = [
        read_file_tool(workspace, max_read_bytes=max_read_bytes),
        list_files_tool(workspace),
        search_text_tool(workspace),
        edit_file_tool(workspace),
        write_file_tool(workspace),
    ]
    if include_git:
        tools += [git_status_tool(workspace), git_diff_tool(workspace)]
    tools.append(run_tests_tool(workspace, test_command=test_command, timeout=test_timeout))
    return tools


__all__ = ["Workspace", "workspace_tools"]
