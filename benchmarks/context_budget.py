"""What the context budget costs per model request, against what every request costs anyway.

For histories of 100, 1,000 and 5,000 messages (tool results of 4,000 characters) it times:

- ``baseline``: encoding the request body as the OpenAI client does (``request_body`` + ``json_body``);
- ``budget``: ``ContextBudget.before_request`` on a history that fits (count, no compaction) —
  the cost every request pays; target ≤ 0.5× the baseline;
- ``compact``: a compaction of that history down to half the window (stubs, no summary) — paid
  now and then; target: grows linearly with the history.

    python benchmarks/context_budget.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import time

import anyio

from cogcli.compaction import ContextBudget
from cogcli.models.base import Message, ToolCallRequest, UsageReport
from cogcli.models.openai import OpenAIModel
from cogcli.models.sse import json_body


def history(n: int) -> list[Message]:
    out = [Message(role="system", content="system prompt " * 200), Message(role="user", content="Fix it")]
    for i in range(n // 2):
        out.append(Message(role="assistant", content="Looking.", tool_calls=[ToolCallRequest(id=f"c{i}", name="read_file", arguments={"path": f"src/m{i}.py"})]))
        out.append(Message(role="tool", tool_call_id=f"c{i}", name="read_file", content=f"{i % 10}" * 4000))
    return out


async def best(fn, rounds: int) -> float:
    """The fastest of ``rounds`` runs of ``fn`` (sync, or async when it returns an awaitable)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        returned = fn()
        if inspect.isawaitable(returned):
            await returned
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    anyio.run(measure, parser.parse_args().rounds)


async def measure(rounds: int) -> None:
    model = OpenAIModel("gpt-4o", api_key="sk-bench")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(f"{'messages':>9} {'baseline ms':>12} {'budget ms':>10} {'ratio':>6} {'compact ms':>11}")
    for n in (100, 1_000, 5_000):
        h = history(n)
        big = 10 * len(h) * 1200  # a window the history fits in
        baseline = await best(lambda: json_body(model.request_body(h, [])), rounds)

        async def counted() -> None:  # a report came for the history before the last result
            budget = ContextBudget(window=big)
            budget.sent(h[:-1])
            budget.observe(UsageReport(input_tokens=len(h) * 1000))
            await budget.before_request(h)

        async def compacted() -> None:
            await ContextBudget(window=len(h) * 800).before_request(h)

        budget_t = await best(counted, rounds)
        compact_t = await best(compacted, rounds)
        print(f"{len(h):>9,} {baseline * 1000:>12.2f} {budget_t * 1000:>10.2f} {budget_t / baseline:>6.2f} {compact_t * 1000:>11.2f}")


if __name__ == "__main__":
    main()
