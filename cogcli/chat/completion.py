"""``cog chat``'s completion menu: the slash commands (built-in and custom) with what each does,
offered as soon as a line starts with ``/`` (prompt_toolkit's, imported when the chat starts)."""

from __future__ import annotations

from typing import Any

from cogcli.project.slash_commands import COMMANDS


def slash_completer(custom: dict[str, tuple[str, str]] | None = None) -> Any:
    """The commands whose name starts with what was typed; ``custom``: name → (argument hint, what it does)."""
    from prompt_toolkit.completion import Completer, Completion

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            typed = document.text_before_cursor
            if not typed.startswith("/") or any(c in typed for c in " \n"):
                return
            for name, (argument, what) in {**COMMANDS, **(custom or {})}.items():
                if name.startswith(typed.lower()):
                    yield Completion(name + (" " if argument else ""), start_position=-len(typed), display=name, display_meta=what)

    return SlashCompleter()
