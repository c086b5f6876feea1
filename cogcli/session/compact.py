"""A conversation compacted on request (``cog chat``'s ``/compact``), as a run compacts its own."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogcli.settings.load import Settings
    from cogcli.contract.context import AbortSignal
    from cogcli.wire.events import CompactionEvent
    from cogcli.hooks.engine import HookSet
    from cogcli.threads.store import ThreadStore
    from cogcli.models.base import Model, UsageReport

log = logging.getLogger("cogcli")


async def compact_thread(
    store: ThreadStore, model: Model, settings: Settings, thread: str, *, hooks: HookSet | None = None,
    signal: AbortSignal | None = None, on_usage: Callable[[UsageReport], Any] | None = None,
) -> CompactionEvent | None:
    """Compact the conversation of ``thread`` now, on request (``cog chat``'s ``/compact``): the
    model summarizes it (as a run's compaction does; a list of the calls made if asking fails)
    and the summary, the user's own words kept, is added to the thread as a ``compaction``
    entry. Later runs' models read it in place of everything before it; memory keeps every
    entry whole. Returns what was compacted (estimated tokens before and after), None when
    there is nothing to compact (no model turn yet) or ``signal`` aborted it (nothing kept).
    ``on_usage`` gets the summary request's usage. Raises :class:`ConfigError` for an unknown thread."""
    import anyio

    from cogcli.compaction import estimate_message, estimate_messages, mechanical_summary, model_summary, summary_message, summary_request
    from cogcli.contract.context import cancel_on_abort
    from cogcli.threads.entries import CompactionEntry
    from cogcli.wire.events import CompactionEvent
    from cogcli.threads.history import build_history

    thread_id = store.require_id(thread)
    conversation = build_history("", store.entries(thread_id))
    if not any(m.role == "assistant" for m in conversation):
        return None
    if hooks is not None:  # PreCompact hooks, trigger "manual" (a run's own compactions: "auto")
        fields = {"trigger": "manual", "custom_instructions": ""}
        await hooks.bind(lambda event: None, thread_id).fire("PreCompact", fields, target="manual")
    request = summary_request(conversation, settings.context_window)
    text: str | None = None
    try:
        async with anyio.create_task_group() as tg:
            if signal is not None:
                tg.start_soon(cancel_on_abort, signal, tg.cancel_scope)
            text = await model_summary(model, request, on_usage=on_usage)
            tg.cancel_scope.cancel()
    except Exception as exc:  # the model could not be asked: the calls made stand in
        log.warning("asking the model for a summary failed (%s); a list of the calls made stands in", exc)
        text = mechanical_summary(conversation)
    if text is None or (signal is not None and signal.aborted):
        return None
    message = summary_message(conversation, text if text.strip() else mechanical_summary(conversation))
    before, after = estimate_messages(conversation), estimate_message(message)
    store.append(thread_id, [CompactionEntry(content=message.content, tokens_before=before, tokens_after=after)])
    return CompactionEvent(reason="requested", tokens_before=before, tokens_after=after, summarized_messages=len(conversation), summary_tokens=after)
