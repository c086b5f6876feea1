"""What ``cog chat`` knows of its conversation, folded from the events of its runs, and the one
status line it draws from that: the model, the context used of the window, the session's tokens
and cost (where the provider's price is known)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ChatState:
    """The conversation of one ``cog chat``: its thread, the runs it made and what they used."""

    #: ``provider:model`` the next run uses
    model: str
    #: the thread the next run continues (None: the next run starts one)
    thread_id: str | None = None
    #: the model's context window, when cog knows it
    window: int | None = None
    #: the input tokens of the largest request of the last run (the history the model read)
    context_tokens: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    #: the session's cost in US dollars; None once a run's cost was not known
    cost_usd: float | None = 0.0
    #: the ``messageId`` of every run this session started, in order (what ``/diff`` reads)
    runs: list[str] = field(default_factory=list)
    #: the runs that ended with their ``finish``
    finished: int = 0
    #: the conversation was compacted since the last run (its size is counted again by the next)
    compacted: bool = False
    #: plan mode (``/plan``): the next runs only read and end with a plan, until ``/go``
    plan: bool = False

    def handle(self, event: Any) -> None:
        """Fold in one event of a run."""
        kind = getattr(event, "type", None)
        if kind == "start":
            self.compacted = False
            self.thread_id = event.thread_id
            self.runs.append(event.message_id)
            if event.context_window:
                self.window = event.context_window
        elif kind == "compaction":
            self.context_tokens = event.tokens_after
            if event.context_window:
                self.window = event.context_window
        elif kind == "finish":
            self.finished += 1
            self.thread_id = event.thread_id or self.thread_id
            if event.context_window:
                self.window = event.context_window
            if event.peak_context_tokens:
                self.context_tokens = event.peak_context_tokens
            self.add_usage(event.usage)

    def add_usage(self, usage: Any) -> None:
        if usage is None:
            return
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        cost = usage.cost_usd  # None: cog does not know this model's price
        if self.cost_usd is not None:
            self.cost_usd = None if cost is None and (usage.input_tokens or usage.output_tokens) else self.cost_usd + (cost or 0.0)

    def new_thread(self) -> None:
        self.thread_id = None
        self.context_tokens = None
        self.compacted = False

    # --- words -------------------------------------------------------------------------

    def context_text(self) -> str:
        if self.compacted:
            return "context: compacted (counted again at the next instruction)"
        used = self.context_tokens
        if used is None:
            return "context: nothing sent yet" if self.window is None else f"context: 0 of {_tokens(self.window)}"
        if self.window:
            return f"context: {_tokens(used)} of {_tokens(self.window)} ({min(100, round(100 * used / self.window))}%)"
        return f"context: {_tokens(used)} (window unknown)"

    def cost_text(self) -> str:
        tokens = f"{_tokens(self.input_tokens)} in, {_tokens(self.output_tokens)} out"
        if self.cost_usd is None:
            return f"{tokens}, cost unknown"
        if not self.input_tokens and not self.output_tokens:
            return tokens
        return f"{tokens}, ${self.cost_usd:.4f}" if self.cost_usd < 0.01 else f"{tokens}, ${self.cost_usd:.2f}"

    def status_line(self, background: int = 0) -> str:
        """The line below the prompt; ``background``: the session's background commands running (``/jobs`` lists them)."""
        jobs = f" · {background} in background (/jobs)" if background else ""
        return f"{'plan mode (/go runs the plan) · ' if self.plan else ''}{self.model} · {self.context_text()} · {self.cost_text()}{jobs}"

    def thread_text(self) -> str:
        """What ``/thread`` says."""
        thread = f"thread {self.thread_id}" if self.thread_id else "no thread yet (the next instruction starts one)"
        left = ""
        if self.window:
            left = f", {_tokens(max(0, self.window - (self.context_tokens or 0)))} left"
        return f"{thread}\n{self.context_text()}{left}\nthis session: {self.cost_text()}, {self.finished} run{'s' if self.finished != 1 else ''}"


def _tokens(n: int) -> str:
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)
