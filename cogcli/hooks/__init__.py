"""Hooks on Claude Code's contract: the person's programs, run at a run's events with one JSON object
on stdin (docs/hooks.md).

- :mod:`cogcli.hooks.process` — one command on the host: its environment, timeout, process group;
- :mod:`cogcli.hooks.snapshot` — the private copy of a workspace hook's approved files it runs from;
- :mod:`cogcli.hooks.answer` — its exit code and stdout read as Claude Code's;
- :mod:`cogcli.hooks.engine` — a session's hooks and one run's: payloads, ``hook`` events, verdicts;
- :mod:`cogcli.hooks.calls` — what a hook reads of a call, PostToolUse where each call ends, Notification
  (PreToolUse is a step of the gate: :class:`cogcli.gate.pipeline.PreToolUseStep`);
- :mod:`cogcli.hooks.lifecycle` — SessionStart, UserPromptSubmit, PreCompact, Stop;
- :mod:`cogcli.hooks.trust` — which hooks a session runs: the person's (read by :mod:`cogcli.settings.person_file`),
  and the workspace's once approved.

The ``[[hooks.<Event>]]`` tables are settings (:mod:`cogcli.settings.hook_tables`): ``cog --help``
reads that model alone, and nothing is imported here.
"""
