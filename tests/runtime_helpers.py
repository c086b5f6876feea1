"""Small tools and event helpers for the run-loop tests."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import anyio
from pydantic import BaseModel

from cogcli import tool, tool_output
from cogcli.wire.events import BaseEvent

#: a diff the edit tool puts in its details: it must never reach a model
SECRET_DIFF = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old line DIFF_MARKER_OLD\n+new line DIFF_MARKER_NEW\n"


class PathArgs(BaseModel):
    path: str


class TextArgs(BaseModel):
    text: str


class SizeArgs(BaseModel):
    size: int


@tool(presentation=lambda p: {"label": "Edit file", "icon": "file-pen", "detail": p.path}, side_effects=("writes files",))
async def edit(params: PathArgs) -> Any:
    """Pretend to edit a file."""
    return tool_output(
        content={"path": params.path, "replacements": 1},
        details={"diff": SECRET_DIFF.replace("notes.txt", params.path), "added": 1, "removed": 1},
    )


@tool(presentation={"label": "Echo"})
async def echo(params: TextArgs) -> str:
    """Return the text."""
    return params.text


@tool()
async def big(params: SizeArgs) -> str:
    """Return ``size`` characters."""
    return "x" * params.size


@tool(presentation={"label": "Run tests", "icon": "flask-conical"}, reports_tests=True)
async def run_tests(params: TextArgs, context: Any) -> Any:
    """Pretend to run tests, one update per test."""
    names = params.text.split(",")
    for name in names:
        await anyio.lowlevel.checkpoint()
        context.update(content=f"{name} passed", presentation={"label": "Run tests", "detail": name})
    return tool_output(
        content=f"{len(names)} passed",
        details={"passed": len(names), "failed": 0, "errors": 0, "skipped": 0, "tests": []},
    )


class Rendezvous:
    """Two calls that each wait for the other to start: they finish only when run concurrently."""

    def __init__(self) -> None:
        self.arrived: dict[str, anyio.Event] = defaultdict(anyio.Event)

    def tool(self) -> Any:
        @tool(name="meet")
        async def meet(params: TextArgs) -> str:
            """Wait for the partner call."""
            me, other = params.text.split(">")
            self.arrived[me].set()
            await self.arrived[other].wait()
            # the second call finishes first: results must still go back in call order
            if me == "a":
                await anyio.sleep(0.05)
            return f"{me} met {other}"

        return meet


def of_type(events: list[BaseEvent], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]  # type: ignore[attr-defined]


def call_events(events: list[BaseEvent], call_id: str) -> list[str]:
    """The types of the events of one call, in order."""
    out = []
    for e in events:
        cid = getattr(e, "tool_call_id", None) or (getattr(e, "id", None) if e.type.startswith("tool-call") else None)  # type: ignore[attr-defined]
        if cid == call_id:
            out.append(e.type)  # type: ignore[attr-defined]
    return out


def without_stamps(event: BaseEvent) -> dict[str, Any]:
    data = event.to_wire()
    data.pop("seq", None)
    data.pop("timestamp", None)
    return data
