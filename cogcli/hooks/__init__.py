"""Hooks on Claude Code's contract: the person's programs, run at a run's events with one JSON object
on stdin (docs/hooks.md).

- :mod:`cogcli.settings.hook_tables` — ``[[hooks.<Event>]]`` tables and matchers;
- :mod:`cogcli.hooks.process` — one command on the host: its environment, timeout, process group;
- :mod:`cogcli.hooks.answer` — its exit code and stdout read as Claude Code's;
- :mod:`cogcli.hooks.engine` — a session's hooks and one run's: payloads, ``hook`` events, verdicts;
- :mod:`cogcli.hooks.calls` — PreToolUse at the approval gate, PostToolUse where each call ends;
- :mod:`cogcli.hooks.lifecycle` — SessionStart, UserPromptSubmit, PreCompact, Stop, Notification;
- :mod:`cogcli.hooks.trust` — which hooks a session runs: the person's (read by :mod:`cogcli.settings.person_file`),
  and the workspace's once approved.

Nothing is imported here: ``cog --help`` reads the settings model (:mod:`cogcli.settings.hook_tables`) alone.
"""
