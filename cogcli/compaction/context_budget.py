"""The context budget: what each request costs against the model's window, and when to compact.

The provider's reported input tokens are the truth; the next request is estimated from the last
report plus the text added since. Before a request would pass ``threshold`` of the window the
history is compacted down to ``target``: results dropped to stubs first (:mod:`.stubs`), then the
oldest turns summarized if that is not enough (:mod:`.summary`).

A compaction rewrites the history the provider has cached, so the request after it pays the full
input price (an Anthropic cache write: 1.25×) for all of it once. Hence compaction goes in big
steps (from 80% down to 50% of the window) and never for a small gain: one that would free less
than ``min_saving`` of the window is not made (a context-length error still compacts whatever
it can). The system prompt, the tools and the first user message are never rewritten
(:func:`~cogcli.compaction.summary.kept_head`): that prefix stays cached through a compaction.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cogcli.compaction.estimate import estimate_message, estimate_specs
from cogcli.compaction.stubs import Describe, describe_call, drop_results
from cogcli.compaction.summary import kept_head, mechanical_summary, summary_cut, summary_message, summary_request
from cogcli.wire.events import CompactionEvent
from cogcli.models.base import Message, ToolSpec, UsageReport

log = logging.getLogger("cogcli")

#: compact before a request would pass this share of the window …
THRESHOLD = 0.8
#: … down to this share
TARGET = 0.5
#: after a context-length error: down to this share of the (possibly newly learnt) window
RETRY_TARGET = 0.4
#: a compaction at the threshold must free at least this share of the window, or it is not made
MIN_SAVING = 0.1

#: ``async (messages) -> str``: the model's answer to a summary request
Summarizer = Callable[[list[Message]], Any]


@dataclass
class ContextBudget:
    """Counts what a run sends and compacts the history before it would overflow ``window``.

    The run calls :meth:`before_request` with the history it is about to send, :meth:`observe`
    with each reported usage, and :meth:`after_overflow` when the provider refused a request as
    too long. Without a window nothing is compacted until a context-length error says one."""

    window: int | None
    specs: Sequence[ToolSpec] = ()
    #: what an old call was, for its stub (:func:`describer` of the run's tools)
    describe: Describe = describe_call
    threshold: float = THRESHOLD
    target: float = TARGET
    #: the least share of the window a compaction at the threshold must free (:data:`MIN_SAVING`)
    min_saving: float = MIN_SAVING
    #: the compactions not made because they would have freed too little
    skipped: int = 0
    #: the largest request (input tokens as reported, else as estimated)
    peak: int = 0
    compactions: int = 0
    #: awaited with the reason ("threshold", "context-length-error") just before a compaction is made (the run's PreCompact hooks)
    before_compact: Callable[[str], Awaitable[Any]] | None = None
    #: the history last sent; the history the last report counted and the input tokens it reported
    _sent: list[Message] = field(default_factory=list)
    _counted: list[Message] = field(default_factory=list)
    _reported: int | None = None
    _reported_for: int = 0  # estimate of what was sent when the report came
    _specs_tokens: int | None = None
    #: id(message) -> (message, its estimate): each message is estimated once per run, not per request
    _sizes: dict[int, tuple[Message, int]] = field(default_factory=dict)
    #: the last history totalled and its total: a history that extends it adds only its new
    #: messages (per step the budget's work does not grow with the thread, issue 53)
    _totalled: tuple[list[Message], int] = field(default_factory=lambda: ([], 0))

    # --- counting -------------------------------------------------------------------------

    @property
    def ratio(self) -> float:
        """Provider tokens per estimated token, learnt from the last report (1.0 before any)."""
        if self._reported and self._reported_for:
            return min(4.0, max(0.25, self._reported / self._reported_for))
        return 1.0

    def raw(self, history: Sequence[Message]) -> int:
        if self._specs_tokens is None:
            self._specs_tokens = estimate_specs(self.specs)
        return self._total(history) + self._specs_tokens

    def _total(self, history: Sequence[Message]) -> int:
        """:meth:`_messages` of ``history``, from the last total when ``history`` extends it."""
        before, total = self._totalled
        if len(history) >= len(before) and _extends(history, before):
            total += self._messages(history[len(before) :])
        else:
            total = self._messages(history)
        self._totalled = (list(history), total)
        return total

    def _messages(self, messages: Sequence[Message]) -> int:
        total = 0
        sizes = self._sizes
        for m in messages:
            known = sizes.get(id(m))
            if known is None or known[0] is not m:
                known = sizes[id(m)] = (m, estimate_message(m))
            total += known[1]
        return total

    def estimate(self, history: Sequence[Message]) -> int:
        """Tokens a request with ``history`` will take: the last report plus the text added since
        when ``history`` extends what was sent, else the estimate scaled by what reports taught."""
        sent = self._counted
        if self._reported is not None and len(history) >= len(sent) and _extends(history, sent):
            added = self._messages(history[len(sent) :])
            return self._reported + int(added * max(1.0, self.ratio))
        return int(self.raw(history) * self.ratio)

    def sent(self, history: Sequence[Message]) -> None:
        """``history`` is what goes out with the next request."""
        self._sent = list(history)
        if len(self._sizes) > 2 * (len(self._sent) + len(self._counted)) + 64:  # forget messages compaction replaced (now and then)
            keep = set(map(id, self._sent)) | set(map(id, self._counted))
            self._sizes = {k: v for k, v in self._sizes.items() if k in keep}

    def observe(self, usage: UsageReport) -> None:
        """A provider's usage report for the request last :meth:`sent`."""
        if usage.input_tokens <= 0:
            return
        self._reported = usage.input_tokens
        self._counted = self._sent
        self._reported_for = self.raw(self._sent)
        self.peak = max(self.peak, usage.input_tokens)

    def limit(self) -> int | None:
        return int(self.window * self.threshold) if self.window else None

    # --- compacting -------------------------------------------------------------------------

    async def before_request(
        self, history: list[Message], *, summarize: Summarizer | None = None, emit: Callable[[Any], Any] | None = None
    ) -> list[Message]:
        """The history to send: ``history`` itself, or a compacted copy when it would pass the
        threshold (a ``compaction`` event is emitted then)."""
        estimate = self.estimate(history)
        limit = self.limit()
        if limit is not None and estimate > limit:
            assert self.window is not None
            history = await self.compact(history, goal=int(self.window * self.target), reason="threshold", summarize=summarize, emit=emit, before=estimate)
            estimate = self.estimate(history)
        if self._reported is None:  # nothing reported yet: the estimate is all we know
            self.peak = max(self.peak, estimate)
        self.sent(history)
        return history

    async def after_overflow(
        self,
        history: list[Message],
        *,
        limit: int | None = None,
        tokens: int | None = None,
        summarize: Summarizer | None = None,
        emit: Callable[[Any], Any] | None = None,
    ) -> list[Message]:
        """The provider refused ``history`` as too long (its message may say the window and the
        request's size): learn from it and compact further than usual."""
        if limit and (self.window is None or limit < self.window):
            self.window = limit
        if tokens:  # the provider counted the refused request: calibrate on it
            self._reported, self._reported_for, self._counted = tokens, self.raw(history), list(history)
        before = self.estimate(history)
        window = self.window or max(1, int(before / 1.25))  # no window known: aim well below what failed
        history = await self.compact(history, goal=int(window * RETRY_TARGET), reason="context-length-error", summarize=summarize, emit=emit, before=before)
        self.sent(history)
        return history

    async def compact(
        self,
        history: list[Message],
        *,
        goal: int,
        reason: str,
        summarize: Summarizer | None,
        emit: Callable[[Any], Any] | None,
        before: int,
    ) -> list[Message]:
        ratio = self.ratio
        new, dropped, _ = drop_results(history, need=max(0, before - goal), ratio=ratio, describe=self.describe)
        summarized = 0
        summary_tokens: int | None = None
        after = int(self.raw(new) * ratio)
        # a compaction costs one full-price request of what is left: at the threshold, not for a small gain
        least = int((self.window or 0) * self.min_saving) if reason == "threshold" else 0
        first, cut = summary_cut(new, keep_tokens=max(1, int(goal / max(ratio, 0.25) / 2))) if after > goal else (0, 0)
        can_summarize = any(m.role == "assistant" for m in new[first:cut])  # only the user's words: nothing to summarize
        possible = before - after + (int(self._messages(new[first:cut]) * ratio) if can_summarize else 0)
        if possible < least:
            self.skipped += 1
            log.info("not compacting: it would free about %d of %d tokens, less than the %d it must to pay for itself", possible, before, least)
            return history
        if self.before_compact is not None and (dropped or (after > goal and can_summarize)):  # something will be compacted
            await self.before_compact(reason)
        if after > goal:
            if can_summarize:
                replaced = new[first:cut]
                head = kept_head(new)
                task = new[head - 1 : head] if head and new[head - 1].role == "user" else []  # kept, but the summarizer reads it
                text = await self._summary(replaced, summarize, task=task)
                message = summary_message(replaced, text)
                new = [*new[:first], message, *new[cut:]]
                summarized = len(replaced)
                summary_tokens = int(estimate_message(message) * ratio)
                after = int(self.raw(new) * ratio)
        if not dropped and not summarized:
            log.info("the history could not be compacted further (%d tokens; the last turn is kept whole)", before)
            return history
        self.compactions += 1
        if emit is not None:
            emit(
                CompactionEvent(
                    reason=reason,
                    tokens_before=before,
                    tokens_after=after,
                    context_window=self.window,
                    dropped=dropped,
                    summarized_messages=summarized,
                    summary_tokens=summary_tokens,
                )
            )
        return new

    async def _summary(self, replaced: list[Message], summarize: Summarizer | None, task: Sequence[Message] = ()) -> str:
        if summarize is None:
            return mechanical_summary(replaced, self.describe)
        request = summary_request([*task, *replaced], self.window)
        try:
            text = await summarize(request)
        except Exception as exc:  # the summary is a help, never the end of the run
            log.warning("asking the model for a summary failed (%s); a list of the calls made stands in", exc)
            return mechanical_summary(replaced, self.describe)
        return text if isinstance(text, str) and text.strip() else mechanical_summary(replaced, self.describe)


def _extends(history: Sequence[Message], prefix: Sequence[Message]) -> bool:
    """Whether ``history`` starts with the very messages of ``prefix`` (compared in C: the check
    runs before every request, over the whole thread)."""
    return all(map(operator.is_, history, prefix))
