"""How a ``hook`` event reads in a log: one line for a hook that blocked, asked, changed a call or
failed (a hook that only said "go on" is not worth a line). Renderers escape it when they write it."""

from __future__ import annotations

from cogcli.wire.events import HookEvent
from cogcli.render.details import first_line

#: the longest reason or message a line shows
MAX_SHOWN = 300


def hook_text(event: HookEvent) -> str | None:
    """``⛔ PreToolUse hook blocked edit_file: calc/ops.py is protected`` — or None when it says nothing."""
    what = f"{event.hook_event_name} hook" + (f" ({event.source})" if event.source != "config.toml" else "")
    on = f" {event.tool_name}" if event.tool_name else ""
    if event.outcome == "blocked":
        if event.hook_event_name == "PreToolUse" and event.tool_call_id:
            return None  # the call's own row says it was blocked, and why
        return f"⛔ {what} blocked{on}: {_short(event.reason or 'no reason given')}"
    if event.outcome == "error":
        why = "timed out and was killed" if event.timed_out else _short(event.message or f"exit {event.exit_code}")
        return f"! {what} failed{on} ({why}); the run went on"
    if event.decision == "ask":
        return f"? {what} asks the person about{on}: {_short(event.reason or '')}"
    if event.updated_input:
        return f"· {what} changed the arguments of{on}"
    if event.message:
        return f"· {what}: {_short(event.message)}"
    return None


def _short(text: str) -> str:
    return first_line(text, MAX_SHOWN)
