"""What progress events cost: N ``context.update()`` calls from a running tool, through
``invoke_tool`` → the run's ``on_update`` → the event emitter (``seq``, ``timestamp``) → the real
JSON-lines writer (``cog edit --json``'s renderer) writing to /dev/null.

The run is a real :class:`~cogcli.loop.runtime.Cogitator` run (a two-turn in-process model, an
in-memory thread store), so each update takes exactly the path a ``run_tests`` update takes in
``cog edit --json``. Each update carries what a ``run_tests`` update carries (a line of content,
a details dict of counts, a presentation).

Prints events/s, the ratio against a bare loop of ``json.dumps`` + write of the same dicts, and
the p50/p99 latency from ``update()`` to ``on_tool_update`` (called once the line is written).
Targets: ≥ 200k events/s, ≤ 3× the bare loop, p99 < 1 ms.

    python benchmarks/events.py [--events 100000] [--out /dev/null] [--live]

``--live`` forces a flush per event (what a pipe or a terminal gets) even on a file.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
from pydantic import BaseModel

from cogcli import ToolUpdate, tool
from cogcli.models.base import Message, ModelStreamEvent, TextDelta, ToolCallFinished, ToolCallStarted, ToolSpec
from cogcli.render.jsonl import JsonlWriter
from cogcli.loop.runtime import Agent, Cogitator

TARGET_RATE = 200_000
TARGET_RATIO = 3.0
TARGET_P99_MS = 1.0


def update_fields(i: int) -> tuple[str, dict[str, Any], dict[str, str]]:
    """What the ``i``-th update carries, like a run_tests update."""
    node = f"tests/test_mod_{i % 50}.py::test_case_{i}"
    details = {"passed": i, "failed": 0, "skipped": 0, "total_so_far": i + 1, "collected": 1_000_000, "current": node}
    return f"{node} passed", details, {"label": "Run tests", "icon": "flask-conical", "detail": node}


class Progress(BaseModel):
    count: int


class TwoTurns:
    """Turn 1 calls ``progress(count=n)``; turn 2 answers in text."""

    name = "bench:two-turns"

    def __init__(self, count: int) -> None:
        self.count = count
        self.turns = 0

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        self.turns += 1
        if self.turns == 1:
            args = json.dumps({"count": self.count})
            yield ToolCallStarted(id="call_bench", name="progress")
            yield ToolCallFinished(id="call_bench", name="progress", arguments_text=args)
        else:
            yield TextDelta(text="done")

    async def aclose(self) -> None:
        pass


def run_pipeline(count: int, out_path: str, live: bool | None) -> tuple[float, list[int]]:
    """(seconds the tool's updates took, latency of each in ns)."""
    sent: list[int] = [0] * count
    latencies: list[int] = []
    window: list[float] = [0.0, 0.0]

    async def progress(params: Progress, context: Any) -> str:
        fields = [update_fields(i) for i in range(params.count)]
        window[0] = time.perf_counter()
        clock = time.perf_counter_ns
        for i, (content, details, presentation) in enumerate(fields):
            sent[i] = clock()
            context.update(content, details, presentation)
        window[1] = time.perf_counter()
        return f"{params.count} updates"

    def on_tool_update(update: ToolUpdate) -> None:
        latencies.append(time.perf_counter_ns() - sent[len(latencies)])

    bench_tool = tool(name="progress", description="Reports progress count times.", parameters=Progress, execute=progress)
    agent = Agent(name="bench", instructions="", model=TwoTurns(count), tools=[bench_tool])
    with open(out_path, "wb") as out:
        writer = JsonlWriter(out) if live is None else JsonlWriter(out, live=live)
        gc.collect()
        anyio.run(lambda: Cogitator().run(agent, input="go", on_event=writer.handle, on_tool_update=on_tool_update))
        writer.close()
    assert len(latencies) == count, f"{len(latencies)} of {count} updates arrived"
    return window[1] - window[0], latencies


def run_bare(count: int, out_path: str, live: bool) -> float:
    """json.dumps + write of the same wire dicts, nothing else."""
    dicts = []
    for i in range(count):
        content, details, presentation = update_fields(i)
        dicts.append(
            {
                "seq": i + 3,
                "timestamp": "2026-12-01T12:00:00.000Z",
                "type": "tool-update",
                "toolCallId": "call_bench",
                "toolName": "progress",
                "content": content,
                "details": details,
                "presentation": presentation,
            }
        )
    with open(out_path, "wb") as out:
        gc.collect()
        started = time.perf_counter()
        for d in dicts:
            out.write(json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
            if live:
                out.flush()
        out.flush()
        return time.perf_counter() - started


def percentile(sorted_values: list[int], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))] / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--out", default=os.devnull)
    parser.add_argument("--live", action="store_true", help="flush per event, as on a pipe or a terminal")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many rounds")
    args = parser.parse_args()
    live = True if args.live else None

    pipe_times, bare_times, all_latencies = [], [], []
    for _ in range(args.rounds):
        seconds, latencies = run_pipeline(args.events, args.out, live)
        pipe_times.append(seconds)
        all_latencies = latencies if not all_latencies or seconds <= min(pipe_times) else all_latencies
        bare_times.append(run_bare(args.events, args.out, bool(args.live)))
    pipe, bare = min(pipe_times), min(bare_times)
    lat = sorted(all_latencies)
    rate = args.events / pipe
    ratio = pipe / bare
    p50, p99 = percentile(lat, 0.50), percentile(lat, 0.99)
    mode = "flush per event" if args.live else "writer's own policy"
    print(f"events {args.events:,} → {args.out} ({mode}); load average {os.getloadavg()[0]:.2f}")
    print(f"{'pipeline':<10} {pipe * 1000:8.1f} ms  {rate:>10,.0f} events/s   (target ≥ {TARGET_RATE:,})")
    print(f"{'bare loop':<10} {bare * 1000:8.1f} ms  {args.events / bare:>10,.0f} events/s")
    print(f"ratio      {ratio:8.2f}×  (target ≤ {TARGET_RATIO:g}×)")
    print(f"latency    p50 {p50:.4f} ms  p99 {p99:.4f} ms  max {lat[-1] / 1e6:.3f} ms  (target p99 < {TARGET_P99_MS:g} ms)")
    ok = rate >= TARGET_RATE and ratio <= TARGET_RATIO and p99 < TARGET_P99_MS
    print("meets the targets" if ok else "MISSES a target")


if __name__ == "__main__":
    main()
