"""Recording: wrap any model and append each completed turn to a cassette (what ``cog edit --record`` uses).

The cassette is started afresh (header first) when the first turn completes, and every turn
after it is appended and flushed at once, so a run that crashes later keeps the turns so far.
A turn that fails mid-stream is not written. Known API keys are scrubbed from what is written,
and every credential the redactor finds (:mod:`cogcli.secrets.redactor`: one the model wrote in its text
or arguments). A turn's reasoning blocks are recorded whole (text, signature, data), so the run
replays with the same ``reasoning-*`` events and the same thread.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from cogcli.models.base import (
    Message,
    Model,
    ModelStreamEvent,
    Reasoning,
    ReasoningFinished,
    TextDelta,
    ToolCallFinished,
    ToolSpec,
    TurnFinished,
    UsageReport,
)
from cogcli.models.replay import CassetteHeader, CassetteToolCall, CassetteTurn, CassetteUsage
from cogcli.models.sse import hide_known_secrets
from cogcli.secrets.redactor import redact

#: environment variables whose values never reach a cassette
SECRET_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


class RecordingModel:
    """A :class:`~cogcli.models.base.Model` that passes ``inner``'s events through unchanged and
    records each completed turn to the cassette at ``path``."""

    def __init__(self, inner: Model, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.name = inner.name
        self.turns_recorded = 0
        #: the run's context window, written in the cassette's header (set once the run knows it)
        self.context_window: int | None = getattr(inner, "context_window", None)

    def __repr__(self) -> str:
        return f"RecordingModel({self.inner!r}, {str(self.path)!r})"

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        text: list[str] = []
        calls: list[CassetteToolCall] = []
        usage: CassetteUsage | None = None
        reasoning: list[Reasoning] = []
        async for event in self.inner.stream(messages, tools):
            if isinstance(event, ReasoningFinished):
                reasoning.append(event.block)
            elif isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ToolCallFinished):
                calls.append(CassetteToolCall.from_stream(event.id, event.name, event.arguments_text))
            elif isinstance(event, UsageReport):
                usage = CassetteUsage.of(event)
            elif isinstance(event, TurnFinished):
                self._append(CassetteTurn(reasoning=reasoning or None, text="".join(text), tool_calls=calls, usage=usage, stop_reason=event.stop_reason))
            yield event

    def _append(self, turn: CassetteTurn) -> None:
        secrets = [os.environ.get(var) for var in SECRET_ENV_VARS]
        secrets.append(getattr(self.inner, "_api_key", None))
        lines = [] if self.turns_recorded else [CassetteHeader(model=self.inner.name, context_window=self.context_window).to_line()]
        # the keys cog was given, and any credential the model wrote in its text or arguments
        lines.append(redact(hide_known_secrets(turn.to_line(), secrets))[0])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("w" if not self.turns_recorded else "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
            f.flush()
        self.turns_recorded += 1

    async def aclose(self) -> None:
        await self.inner.aclose()
