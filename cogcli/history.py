"""The history a model reads, built from a thread's entries.

Only what the model itself said or read goes in: inputs, its turns (text and tool calls) and,
for each call, the ``tool_results`` text it read. ``metadata`` (details, presentation, the
whole content) is never read here: a diff shown to the user never reaches a model.
"""

from __future__ import annotations

from collections.abc import Iterable

from cogcli.entries import CompactionEntry
from cogcli.memory import AssistantEntry, StoredEntry, ToolResultEntry, UserEntry
from cogcli.models.base import Message

#: what the model reads for a call whose result was never recorded (the process was killed)
MISSING_RESULT = "Error: no result was recorded for this call (the run was interrupted)"


def build_history(instructions: str, entries: Iterable[StoredEntry]) -> list[Message]:
    """``instructions`` as the system message, then the thread's conversation in order."""
    messages: list[Message] = [Message(role="system", content=instructions)] if instructions else []
    pending: list[Message] = []  # the calls of the last assistant turn still waiting for a result

    def close_turn() -> None:
        for call in pending:
            messages.append(Message(role="tool", tool_call_id=call.tool_call_id, name=call.name, content=MISSING_RESULT))
        pending.clear()

    for stored in entries:
        entry = stored.entry
        if isinstance(entry, UserEntry):
            close_turn()
            messages.append(Message(role="user", content=entry.content))
        elif isinstance(entry, CompactionEntry):  # compacted on request: the summary stands for all before it
            close_turn()
            messages[:] = [m for m in messages if m.role == "system"] + [Message(role="user", content=entry.content)]
        elif isinstance(entry, AssistantEntry):
            close_turn()
            if not entry.content and not entry.tool_calls:
                continue  # an empty turn: providers refuse empty assistant messages
            calls = [c.model_copy() for c in entry.tool_calls]
            messages.append(Message(role="assistant", content=entry.content, tool_calls=calls))
            pending.extend(Message(role="tool", tool_call_id=c.id, name=c.name) for c in calls)
        elif isinstance(entry, ToolResultEntry):
            for item in entry.tool_results:
                waiting = next((m for m in pending if m.tool_call_id == item.call_id), None)
                if waiting is None:
                    continue  # a result with no call in the last turn: the model never made it
                pending.remove(waiting)
                messages.append(Message(role="tool", tool_call_id=item.call_id, name=item.name, content=item.content))
    close_turn()
    return messages
