"""Sessions in git worktrees, and best-of-N: ``cog edit --worktree``, ``cog chat --worktree``,
``cog worktree list|merge|remove`` and ``cog edit --attempts N`` (docs/worktrees.md).

Where they are and what they are called (``place.py``), a session moved into one and its changes
committed when it ends (``enter.py``), the git work on them — made, listed,
committed, merged, removed, every git through :func:`workspace_tools.host.git.run_git` (``git_ops.py``,
``merge.py``), the ignored files a project needs copied in (``include.py``), N attempts run side by
side and picked by their tests (``attempts.py``, ``pick.py``), and the winner written to the work
tree through the undo journal (``apply.py``).
"""
