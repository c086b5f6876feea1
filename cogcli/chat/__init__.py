"""The parts of ``cog chat`` that need no command: its line history kept in the workspace's
``.cog/`` (:mod:`.history`), the status line (:mod:`.status`), what the session changed
(:mod:`.diff`) and the slash commands it knows (:mod:`.slash`). The loop itself is
:mod:`cogcli.commands.chat`. Nothing here imports prompt_toolkit at load time but
:mod:`.history`, which only ``cog chat`` imports."""
