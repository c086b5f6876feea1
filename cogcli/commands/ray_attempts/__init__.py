"""``cog edit --attempts N --ray [ADDRESS]``: the attempts of best-of-N as Ray tasks, on a local Ray
started for the command or on a cluster (docs/worktrees.md), with ``cog batch --ray``'s machinery
(:mod:`cogcli.batch.cluster`: Ray started or reached, credentials through the object store, Ctrl-C
cancelling the tasks, the ``ray.wait`` loop).

What a node gets: the repository as a git bundle of the commit the attempts start from (HEAD, or a
commit of HEAD plus the uncommitted changes: :func:`cogcli.worktrees.ship.snapshot`), put once in
the object store; it clones it into a temporary folder and runs the attempt there exactly as a
local attempt runs in its worktree (:func:`cogcli.worktrees.attempts.run_one`: the session with
the same settings, the change committed, the picking test run in the sandbox), then hands back
its row (tests, lines, tokens, cost), its patch and its events; the folder is removed.

Here: each attempt's worktree and branch are made before the tasks start, as the local path makes
them; a returned patch is committed on its branch (:func:`cogcli.worktrees.ship.land`), so the
pick, the table, the apply through the journal and ``cog worktree merge/remove`` are the local
path's. Nobody can be asked on a node: ``--yes`` (or ``CI``) lets every call run, no terminal and
no ``CI`` refuses those that need approval (as ``cog batch`` and ``cog edit`` off a terminal);
``--approval ask`` (the default on a terminal) and ``stdin`` are refused before anything starts.

:mod:`.driver` runs here (the checks, the bundle, the tasks, the patches onto branches),
:mod:`.node` on each Ray node.
"""
