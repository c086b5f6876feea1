"""A stored thread redrawn: its entries back into the wire events the live run sent, so a client
(``cog thread show``, Studio, an editor) draws the same rows (:meth:`cogcli.threads.store.ThreadStore.thread_events`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cogcli.contract.result import ToolResult
from cogcli.threads.entries import (
    AssistantEntry,
    RunEndEntry,
    StoredEntry,
    ToolResultEntry,
    UserEntry,
    collector_paused,
)
from cogcli.threads.run_end import RunEnd
from cogcli.wire.events import (
    BaseEvent,
    ErrorEvent,
    ReasoningDeltaEvent,
    ReasoningEndEvent,
    ReasoningStartEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
)


def events_from_entries(thread_id: str, entries: Sequence[StoredEntry]) -> list[BaseEvent]:
    """Rebuild wire events from stored entries (see :meth:`ThreadStore.thread_events`): each call's
    entry is read back into its :class:`ToolResult` and each run's end into its :class:`RunEnd`,
    and the events are made from those exactly as the live run made them."""
    return Redraw(thread_id).feed(entries)


class Redraw:
    """:func:`events_from_entries` a part at a time (Studio's thread stream, issue 53): parts fed in
    order give the events of the whole, numbered on (``seq``), as long as a call's result is in the
    part of its assistant entry or before it (:class:`cogcli.server.thread_stream.ThreadParts`
    cuts before an assistant or user entry only)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.results = dict[str, ToolResult]()
        self.streamed = dict[str, Any]()
        self.open_run: str | None = None
        self.next_seq = 0

    @collector_paused()  # ~30,000 new objects for a 2,000-step thread: collections walking them were half the time
    def feed(self, entries: Sequence[StoredEntry]) -> list[BaseEvent]:
        events: list[tuple[BaseEvent, str]] = []
        thread_id, results, streamed = self.thread_id, self.results, self.streamed
        made = dict[int, list[ToolResult]]()  # each entry's results, once
        for i, stored in enumerate(entries):
            if isinstance(stored.entry, ToolResultEntry):
                results.update((r.call_id, r) for r in made.setdefault(i, stored.entry.results()))
            elif isinstance(stored.entry, AssistantEntry):
                streamed.update((call.id, call.arguments) for call in stored.entry.tool_calls)
        open_run = self.open_run
        for i, stored in enumerate(entries):
            e, at = stored.entry, stored.created_at
            if isinstance(e, UserEntry) and (e.message_id is None or e.message_id != open_run):  # not a run's follow-up (--output-schema)
                open_run = e.message_id or f"msg_{stored.seq}"
                events.append((StartEvent(message_id=open_run, thread_id=thread_id), at))
            elif isinstance(e, AssistantEntry):
                for n, block in enumerate(e.reasoning or []):  # the thinking as kept (a redacted credential stays redacted)
                    rid = f"rsn_{stored.seq}_{n}"
                    events += [(ReasoningStartEvent(id=rid), at), *([(ReasoningDeltaEvent(id=rid, delta=block.text), at)] if block.text else []),
                               (ReasoningEndEvent(id=rid, duration_ms=block.duration_ms), at)]
                if e.content:
                    text_id = f"txt_{stored.seq}"
                    events += [
                        (TextStartEvent(id=text_id), at),
                        (TextDeltaEvent(id=text_id, delta=e.content), at),
                        (TextEndEvent(id=text_id), at),
                    ]
                for call in e.tool_calls:
                    found = results.get(call.id)
                    presentation = found.presentation if found is not None else None
                    events.append((ToolCallStartEvent(id=call.id, tool_name=call.name, presentation=presentation), at))
                    events.append((ToolCallEndEvent(id=call.id, tool_name=call.name, arguments=call.arguments), at))
            elif isinstance(e, ToolResultEntry):
                for result in made[i]:
                    ran_with = e.metadata.arguments
                    if result.call_id in streamed and ran_with is not None and ran_with != streamed[result.call_id]:
                        events.append((ToolUpdateEvent(tool_call_id=result.call_id, tool_name=result.name, arguments=ran_with), at))
                    events.append((ToolResultEvent.of(result), at))
            elif isinstance(e, RunEndEntry):
                if e.error is not None:
                    events.append((ErrorEvent(message=e.error, code=e.error_code), at))
                end = RunEnd.from_entry(e)
                events.append((end.finish_event(e.message_id or open_run or f"msg_{stored.seq}", thread_id), at))
                open_run = None
        self.open_run = open_run
        for i, (event, at) in enumerate(events, self.next_seq):  # each made here, for this list: stamped in place (as the emitter stamps), not copied
            event.seq, event.timestamp = i, at
        self.next_seq += len(events)
        return [event for event, _ in events]
