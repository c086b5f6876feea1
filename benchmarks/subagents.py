"""The overhead of a ``task`` call (a subagent, :mod:`cogcli.loop.subagent`) against the same work done
inline, with a scripted model (no latency: what is measured is cog's own cost).

    python benchmarks/subagents.py [--rounds 15]

The work: read a file, edit it, answer — three model turns. Inline, the run does it itself; delegated,
the run's first turn is one ``task`` call whose subagent does the three turns, then the run answers
(five requests in all: a real model's two extra turns cost far more than anything measured here).
Both on the real workspace tools in a temporary git repository, alternating, each round on a fresh
file; the figure is the median wall time of a whole ``Cogitator.run``, and the task call's own share.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio

from cogcli.agent_tools.delegate_task import task_tool
from cogcli.loop.runtime import Agent, Cogitator
from cogcli.loop.subagent import SUBAGENT_RULES, Subagents
from cogcli.models.base import Message, ToolSpec
from cogcli.models.scripted import Call, ScriptedModel, Turn
from workspace_tools import workspace_tools


class Routed:
    """The parent plays ``parent``; a request whose system prompt is a subagent's plays ``child``."""

    name = "scripted:bench"

    def __init__(self, parent: list[Turn], child: list[Turn]) -> None:
        self.parent, self.child = ScriptedModel(parent), ScriptedModel(child)

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[Any]:
        chosen = self.child if SUBAGENT_RULES in str(messages[0].content) else self.parent
        async for event in chosen.stream(messages, tools):
            yield event

    async def aclose(self) -> None:
        pass


def work(n: int) -> list[Turn]:
    path = f"m{n}.py"
    return [
        Turn("", [Call("r", "read_file", {"path": path})]),
        Turn("", [Call("e", "edit_file", {"path": path, "old_text": "return 1", "new_text": "return 2"})]),
        Turn("Changed it to return 2."),
    ]


async def one(root: Path, n: int, delegated: bool) -> tuple[float, float]:
    (root / f"m{n}.py").write_text("def f():\n    return 1\n")
    tools = [*workspace_tools(root), task_tool(Subagents())]
    if delegated:
        model: Any = Routed([Turn("", [Call("t", "task", {"description": "change f", "prompt": f"In m{n}.py make f return 2"})]), Turn("Done.")], work(n))
    else:
        model = Routed(work(n), [])
    agent = Agent(name="bench", instructions="You edit code.", model=model, tools=tools)
    started = time.perf_counter()
    result = await Cogitator().run(agent, input="make f return 2")
    wall = time.perf_counter() - started
    assert str(result.status) == "completed" and "return 2" in (root / f"m{n}.py").read_text(), result
    task = next((c.duration_ms for c in result.tool_calls if c.name == "task"), 0.0) / 1000
    return wall, task


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        inline, delegated, tasks = [], [], []
        await one(root, 0, False)  # warm: imports, first use of each tool
        await one(root, 1, True)
        for n in range(2, 2 + rounds):
            inline.append((await one(root, 2 * n, False))[0])
            wall, task = await one(root, 2 * n + 1, True)
            delegated.append(wall)
            tasks.append(task)
    mi, md, mt = statistics.median(inline), statistics.median(delegated), statistics.median(tasks)
    print(f"rounds {rounds}, load {os.getloadavg()[0]:.1f}")
    print(f"inline     (3 requests) median {mi * 1000:7.1f} ms")
    print(f"delegated  (5 requests) median {md * 1000:7.1f} ms   the task call itself {mt * 1000:.1f} ms")
    print(f"overhead of a task call: {(md - mi) * 1000:+.1f} ms ({md / mi:.2f}x the inline run)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    anyio.run(main, parser.parse_args().rounds)
