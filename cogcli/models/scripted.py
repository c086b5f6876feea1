"""An in-process :class:`~cogcli.models.base.Model` that plays a scripted list of turns: for tests,
examples and anyone trying an agent without a model server.

    from cogcli.models.scripted import Call, ScriptedModel, Turn

    model = ScriptedModel([
        Turn("Reading.", [Call("c1", "read_file", {"path": "a.py"})]),
        Turn("Done."),
    ])

It is :class:`~cogcli.models.replay.ReplayModel` without a file: each ``stream()`` plays the next
step through the same :func:`~cogcli.models.replay.play_turn`, and records the history and tool
specs it was given (deep copies) in ``requests`` / ``tool_specs``. A step is a :class:`Turn`, a
:class:`Fail` (raise a ModelError after some events), a :class:`Hang` (stream some events, then wait
until cancelled), or a callable ``(messages) -> step``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from cogcli.contract.errors import ModelError
from cogcli.models.base import Message, ModelStreamEvent, Reasoning, ToolSpec, UsageReport
from cogcli.models.replay import play_turn


@dataclass
class Call:
    """A scripted tool call: its arguments as an object (sent as its JSON) or the exact text."""

    id: str
    name: str
    arguments: Any = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Turn:
    """One scripted model turn: its text and calls."""
    text: str = ""
    calls: Sequence[Call] = ()
    #: (input, output) tokens, or a whole report (with cache counts and a cost)
    usage: tuple[int, int] | UsageReport = (10, 5)
    #: reasoning blocks played before the text
    reasoning: Sequence[Reasoning] = ()

    def events(self) -> list[ModelStreamEvent]:
        """Text in 4-character deltas, each call's arguments in 7-character fragments, then usage."""
        return list(
            play_turn(
                self.text,
                [(c.id, c.name, c.text) for c in self.calls],
                usage=self.usage,
                split=lambda text, size: [text[i : i + size] for i in range(0, len(text), size)],
                text_size=4,
                args_size=7,
                reasoning=self.reasoning,
            )
        )


@dataclass
class Fail:
    """Stream the first ``after`` events of ``turn``, then raise a ModelError."""

    turn: Turn = field(default_factory=Turn)
    after: int = 0
    message: str = "server closed the stream"


@dataclass
class Hang:
    """Stream the first ``after`` events of ``turn``, then wait until the stream is cancelled."""

    turn: Turn = field(default_factory=Turn)
    after: int = 0
    started: anyio.Event = field(default_factory=anyio.Event)


Step = Turn | Fail | Hang | Callable[[list[Message]], "Turn | Fail | Hang"]


class ScriptedModel:
    name = "scripted:test"

    def __init__(self, script: Sequence[Step]) -> None:
        self.script = list(script)
        self.requests: list[list[Message]] = []
        self.tool_specs: list[list[ToolSpec]] = []
        self.closed = False

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        history = [m.model_copy(deep=True) for m in messages]
        self.requests.append(history)
        self.tool_specs.append([t.model_copy(deep=True) for t in tools])
        if not self.script:
            raise ModelError("scripted model: the script is exhausted")
        step = self.script.pop(0)
        if callable(step) and not isinstance(step, (Turn, Fail, Hang)):
            step = step(history)
        if isinstance(step, Turn):
            for event in step.events():
                await anyio.lowlevel.checkpoint()
                yield event
        elif isinstance(step, Fail):
            for event in step.turn.events()[: step.after]:
                yield event
            raise ModelError(step.message)
        else:
            for event in step.turn.events()[: step.after]:
                yield event
            step.started.set()
            await anyio.sleep_forever()

    async def aclose(self) -> None:
        self.closed = True


def all_request_text(model: ScriptedModel) -> str:
    """Every message of every request the model received, as one JSON text (to search in)."""
    return json.dumps([[m.model_dump(mode="json") for m in request] for request in model.requests])
