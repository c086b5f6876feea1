"""A scripted model for runs with subagents: each child plays its own script, chosen by its prompt
(the first user message of a request whose system prompt says it is a subagent); the parent plays
``parent``. Concurrent children then stay deterministic."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from cogcli.loop.subagent import SUBAGENT_RULES
from cogcli.models.base import Message, ModelStreamEvent, ToolSpec
from cogcli.models.scripted import ScriptedModel, Step
from cogcli.session import Session
from cogcli.settings.load import load_settings
from cogcli.wire.events import BaseEvent
from cli_helpers import REPLAY


class ByThread:
    name = "scripted:test"

    def __init__(self, parent: Sequence[Step], children: Mapping[str, Sequence[Step]]) -> None:
        self.parent = ScriptedModel(parent)
        self.children = {prompt: ScriptedModel(steps) for prompt, steps in children.items()}
        self.closed = False
        #: children's requests streaming at once now, and the most ever; ``delay``: seconds each child's request takes
        self.active = self.peak = 0
        self.delay = 0.0

    def pick(self, messages: Sequence[Message]) -> ScriptedModel:
        system = next((m.content for m in messages if m.role == "system"), "")
        if SUBAGENT_RULES not in str(system):
            return self.parent
        prompt = next(str(m.content) for m in messages if m.role == "user")
        return next(model for key, model in self.children.items() if prompt.startswith(key))

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        chosen = self.pick(messages)
        child = chosen is not self.parent
        self.active += child
        self.peak = max(self.peak, self.active)
        try:
            if child and self.delay:
                await anyio.sleep(self.delay)
            async for event in chosen.stream(messages, tools):
                yield event
        finally:
            self.active -= child

    async def aclose(self) -> None:
        self.closed = True


async def run_with_children(
    repo: Path, model: ByThread, instruction: str = "go", settings: Any = None, on_note: Any = None, **run: Any
) -> tuple[Any, list[BaseEvent], Session]:
    events: list[BaseEvent] = []
    options: dict[str, Any] = {"on_note": on_note} if on_note is not None else {}
    session = Session.open(settings or load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False, **options)
    await session.model.aclose()
    session.model = model
    async with session:
        result = await session.run(instruction, on_event=events.append, **run)
    return result, events, session
