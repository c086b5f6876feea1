"""Keeping the history a model reads inside its context window.

Every request is counted: the provider's reported input tokens are the truth, and the next
request is estimated from the last report plus the text added since (:class:`ContextBudget`).
Before a request would pass ``threshold`` (80%) of the window, the history is compacted down to
``target`` (50%), in two stages:

1. :func:`drop_results` (:mod:`.stubs`) — older tool results' content is replaced by a one-line stub saying what
   it was and how to get it again (``[read_file src/a.py, lines 1–200: dropped to save context;
   read it again if needed]``), oldest turns first and within a turn the largest first; the last
   turn (the results the model has not read yet) is never touched;
2. :func:`summary_message` (:mod:`.summary`) — if that is not enough, the model is asked for a
   summary of the work so far, which replaces the oldest turns (the user's own words are kept
   verbatim beside it). The system prompt, the tools and the first user message are never
   rewritten, so the provider's prompt cache keeps that prefix; a compaction that would free
   less than ``MIN_SAVING`` of the window is not made (it costs one full-price request).

Only the history the model reads is compacted; memory (the thread) keeps every full result. A
provider's context-length error triggers one compaction down to a tighter target and a retry.

The parts, by job: :mod:`.context_budget` (counting, and deciding when and how far to compact),
:mod:`.estimate` (tokens estimated from text), :mod:`.stubs` and :mod:`.summary` (the two stages).
"""


from cogcli.compaction.context_budget import MIN_SAVING, RETRY_TARGET, TARGET, THRESHOLD, ContextBudget, Summarizer
from cogcli.compaction.estimate import CHARS_PER_TOKEN, estimate_message, estimate_messages, estimate_specs, estimate_text
from cogcli.compaction.stubs import (
    MAX_KEPT_ARGUMENT,
    MIN_DROP_TOKENS,
    STUB_MARK,
    Describe,
    describe_call,
    describer,
    drop_results,
    is_stub,
    shorten_calls,
    stub_for,
    turns,
)
from cogcli.compaction.summary import (
    SUMMARY_MARK,
    SUMMARY_PROMPT,
    kept_head,
    mechanical_summary,
    model_summary,
    summary_cut,
    summary_message,
    summary_request,
    transcript,
)

__all__ = [
    "CHARS_PER_TOKEN", "MAX_KEPT_ARGUMENT", "MIN_DROP_TOKENS", "MIN_SAVING", "RETRY_TARGET", "STUB_MARK", "SUMMARY_MARK", "SUMMARY_PROMPT",
    "TARGET", "THRESHOLD", "ContextBudget", "Describe", "Summarizer", "describe_call", "describer", "drop_results",
    "estimate_message", "estimate_messages", "estimate_specs", "estimate_text", "is_stub", "kept_head", "mechanical_summary",
    "model_summary", "shorten_calls", "stub_for", "summary_cut", "summary_message", "summary_request", "transcript", "turns",
]
