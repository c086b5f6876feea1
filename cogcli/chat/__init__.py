"""The parts of ``cog chat`` that need no command: its line history kept in the person's state
folder (:mod:`.line_history`), the status line (:mod:`.status`) and ``/diff``, what the session
changed (:mod:`.diff_command`). The slash commands it knows are :mod:`cogcli.project.slash_commands`
(every front end keeps their names free); the loop itself is :mod:`cogcli.commands.chat`. Nothing
here imports prompt_toolkit at load time but :mod:`.line_history`, which only ``cog chat`` imports."""
