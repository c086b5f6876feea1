"""The history a model reads, built from a thread's entries.

Only what the model itself said or read goes in: inputs, its turns (text, tool calls and the
reasoning blocks it sent, verbatim, for its client to send back) and,
for each call, the ``tool_results`` text it read. ``metadata`` (details, presentation, the
whole content) is never read here: a diff shown to the user never reaches a model.

A run walked back with ``cog undo`` (``undo`` entries) is never believed still in the files: when
its conversation was rewound too, the model no longer reads its turns at all; when only its files
were put back, the model reads a plain note saying which run was undone and which files are back
as they were before it (:func:`undo_note`).
"""

from __future__ import annotations

from collections.abc import Iterable

from cogcli.threads.entries import CompactionEntry, UndoEntry
from cogcli.threads.store import AssistantEntry, StoredEntry, ToolResultEntry, UserEntry, collector_paused
from cogcli.models.base import Message

#: what the model reads for a call whose result was never recorded (the process was killed)
MISSING_RESULT = "Error: no result was recorded for this call (the run was interrupted)"


def build_history(instructions: str, entries: Iterable[StoredEntry]) -> list[Message]:
    """``instructions`` as the system message, then the thread's conversation in order."""
    with collector_paused():  # a long thread: thousands of messages made at once
        return _history(instructions, entries)


def _history(instructions: str, entries: Iterable[StoredEntry]) -> list[Message]:
    messages: list[Message] = [Message(role="system", content=instructions)] if instructions else []
    pending: list[Message] = []  # the calls of the last assistant turn still waiting for a result
    entries = list(entries)
    rewound = {e.entry.message_id for e in entries if isinstance(e.entry, UndoEntry) and e.entry.conversation}
    asked = {e.entry.message_id: e.entry.content for e in entries if isinstance(e.entry, UserEntry)}
    skipping = False  # in a run whose conversation was rewound

    def close_turn() -> None:
        for call in pending:
            messages.append(Message(role="tool", tool_call_id=call.tool_call_id, name=call.name, content=MISSING_RESULT))
        pending.clear()

    for stored in entries:
        entry = stored.entry
        if isinstance(entry, UserEntry):
            close_turn()
            skipping = entry.message_id in rewound
            if skipping:
                continue
            messages.append(Message(role="user", content=entry.content, images=list(entry.images or [])))
        elif isinstance(entry, CompactionEntry):  # compacted on request: the summary stands for all before it
            close_turn()
            messages[:] = [m for m in messages if m.role == "system"] + [Message(role="user", content=entry.content)]
        elif isinstance(entry, UndoEntry):
            if entry.code and entry.message_id not in rewound:
                close_turn()
                messages.append(Message(role="user", content=undo_note(entry, asked.get(entry.message_id))))
        elif skipping:
            continue
        elif isinstance(entry, AssistantEntry):
            close_turn()
            if not entry.content and not entry.tool_calls:
                continue  # an empty turn: providers refuse empty assistant messages
            calls = [c.model_copy() for c in entry.tool_calls]
            reasoning = [r.model_copy() for r in entry.reasoning or []]
            messages.append(Message(role="assistant", content=entry.content, tool_calls=calls, reasoning=reasoning))
            pending.extend(Message(role="tool", tool_call_id=c.id, name=c.name) for c in calls)
        elif isinstance(entry, ToolResultEntry):
            for item in entry.tool_results:
                waiting = next((m for m in pending if m.tool_call_id == item.call_id), None)
                if waiting is None:
                    continue  # a result with no call in the last turn: the model never made it
                pending.remove(waiting)
                messages.append(Message(role="tool", tool_call_id=item.call_id, name=item.name, content=item.content, images=list(item.images or [])))
    close_turn()
    return messages


def undo_note(entry: UndoEntry, instruction: str | None) -> str:
    """What the model reads of a run whose files were put back (its conversation kept)."""
    asked = " ".join((instruction or "").split())
    asked = asked if len(asked) <= 200 else asked[:199] + "…"
    run = f'the run for "{asked}"' if asked else "an earlier run"
    files = f" ({', '.join(entry.files[:20])}{', …' if len(entry.files) > 20 else ''})" if entry.files else ""
    return (
        f"[cog] The person undid {run} with cog undo: every file it changed{files} is back as it was before that run "
        "(files it created are gone, files it deleted are back). Its edits are no longer in the files; read a file "
        "again before relying on what it holds."
    )
