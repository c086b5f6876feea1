"""What prompt caching saves: a scripted coding run against loopback servers that bill like the
providers' prompt caches (``tests/cache_servers.py``), through cog's real clients and its real
context budget.

The run: cog's own system prompt and workspace tool specs, a task, then ``--steps`` model turns
(default 30) of reads, searches and test runs — results of 0.3–6 KB, and now and then a turn of
many parallel calls (a tool-heavy turn of more blocks than Anthropic's 20-block lookback). Each
request's history extends the last one, as in a run; the context budget compacts it when it passes
80% of ``--window`` (the long run).

Printed per provider: the input tokens of all requests, the share read from the cache, and the
billed input as a share of the same requests uncached (Anthropic: reads 0.1×, writes 1.25× the
input price; OpenAI: reads at gpt-4o's 0.5× and at gpt-5's 0.1×). Targets for the 30-step run:
Anthropic billed share ≤ 0.20, OpenAI cached share ≥ 0.75.

    python benchmarks/prompt_cache.py [--steps 30] [--long-steps 150] [--window 64000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cache_servers import AnthropicCacheServer, Bill, OpenAICacheServer  # noqa: E402
from model_servers import Reply, ToolCall  # noqa: E402

from cogcli.compaction import ContextBudget  # noqa: E402
from cogcli.models import Message, ToolCallFinished, ToolCallRequest, ToolSpec, get_model  # noqa: E402
from cogcli.models.sse import RetryPolicy  # noqa: E402
from cogcli.project.system_prompt import coding_agent_prompt  # noqa: E402
from workspace_tools import workspace_tools  # noqa: E402


def plan(steps: int, seed: int = 27) -> list[list[tuple[str, dict[str, Any], int]]]:
    """Per step, its calls: ``(tool, arguments, result size in characters)``."""
    rng = random.Random(seed)
    out = []
    for i in range(steps):
        if i % 10 == 9:  # a tool-heavy turn: many files read at once
            out.append([("read_file", {"path": f"src/pkg{i}/m{k}.py"}, rng.randint(300, 1500)) for k in range(12)])
        elif i % 4 == 3:
            out.append([("run_tests", {}, rng.randint(800, 2500))])
        elif i % 3 == 2:
            out.append([("search_text", {"pattern": f"def f{i}"}, rng.randint(300, 1200))])
        else:
            out.append([("read_file", {"path": f"src/m{i}.py"}, rng.randint(2000, 6000))])
    return out


def result_text(name: str, size: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["def", "return", "x", "self", "value", "assert", "import", "class", "None", "for", "in", "if"]
    text = " ".join(rng.choice(words) + str(rng.randint(0, 99)) for _ in range(size // 5))
    return f"[{name}]\n{text}"[:size]


async def run(server: Any, spec: str, steps: int, window: int | None) -> dict[str, Any]:
    specs = [ToolSpec(**t.spec()) for t in workspace_tools(ROOT)]
    system = coding_agent_prompt("calc", [s.name for s in specs])
    calls = plan(steps)
    for i, step in enumerate(calls):
        server.add(Reply(f"Step {i}: looking further.", [ToolCall(f"call_{i}_{k}", name, args) for k, (name, args, _) in enumerate(step)]))
    server.add(Reply("Done: the bug was in calc/ops.py."))
    model = get_model(spec, base_url=server.base_url, api_key="bench", retry=RetryPolicy(retries=0))
    budget = ContextBudget(window=window, specs=specs)
    history = [Message(role="system", content=system), Message(role="user", content="Fix the failing test in calc/ and keep the others passing")]
    for i in range(steps + 1):
        history = await budget.before_request(history)
        finished: list[ToolCallFinished] = []
        text: list[str] = []
        async for event in model.stream(history, specs):
            if event.type == "tool-call-end":
                finished.append(event)
            elif event.type == "text-delta":
                text.append(event.text)
            elif event.type == "usage":
                budget.observe(event)
        requests = [ToolCallRequest(id=c.id, name=c.name, arguments=json.loads(c.arguments_text)) for c in finished]
        history = [*history, Message(role="assistant", content="".join(text), tool_calls=requests)]
        for k, call in enumerate(requests):
            size = calls[i][k][2]
            history.append(Message(role="tool", tool_call_id=call.id, name=call.name, content=result_text(call.name, size, i * 100 + k)))
    await model.aclose()
    return {"bills": list(server.bills), "compactions": budget.compactions, "skipped": budget.skipped, "requests": steps + 1}


def shares(bills: list[Bill], read_price: float, write_price: float) -> tuple[int, float, float]:
    total = sum(b.total for b in bills)
    read = sum(b.read for b in bills)
    written = sum(b.written for b in bills)
    billed = (total - read - written) + read * read_price + written * write_price
    return total, read / total, billed / total


def report(label: str, result: dict[str, Any]) -> list[str]:
    bills = result["bills"]
    lines = []
    if label.startswith("anthropic"):
        total, read, billed = shares(bills, 0.1, 1.25)
        written = sum(b.written for b in bills) / total
        lines.append(f"{label:<34} {result['requests']:>4} req  {total:>10,} input tokens  read {read:.3f}  written {written:.3f}  billed {billed:.3f}"
                     f"  compactions {result['compactions']}")
    else:
        total, read, billed_4o = shares(bills, 0.5, 1.0)
        _, _, billed_5 = shares(bills, 0.1, 1.0)
        lines.append(f"{label:<34} {result['requests']:>4} req  {total:>10,} input tokens  cached {read:.3f}  billed {billed_4o:.3f} (0.5×) {billed_5:.3f} (0.1×)"
                     f"  compactions {result['compactions']}")
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--long-steps", type=int, default=150)
    parser.add_argument("--window", type=int, default=64_000, help="context window of the long run (tokens)")
    args = parser.parse_args()
    print(f"prompt cache benchmark · {datetime.now(UTC).isoformat(timespec='seconds')} · load {os.getloadavg()[0]:.1f} · cpus {os.cpu_count()}")
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    for label, server, spec, steps, window in (
        (f"anthropic {args.steps} steps", AnthropicCacheServer(), "anthropic:claude-sonnet-4-5", args.steps, None),
        (f"openai {args.steps} steps", OpenAICacheServer(), "openai:gpt-4o", args.steps, None),
        (f"anthropic {args.long_steps} steps, window {args.window:,}", AnthropicCacheServer(), "anthropic:claude-sonnet-4-5", args.long_steps, args.window),
        (f"openai {args.long_steps} steps, window {args.window:,}", OpenAICacheServer(), "openai:gpt-4o", args.long_steps, args.window),
    ):
        with server:
            results[label] = await run(server, spec, steps, window)
        for line in report(label, results[label]):
            print(line, flush=True)
    a = shares(results[f"anthropic {args.steps} steps"]["bills"], 0.1, 1.25)[2]
    o = shares(results[f"openai {args.steps} steps"]["bills"], 0.5, 1.0)[1]
    print(f"targets ({args.steps} steps): anthropic billed {a:.3f} ≤ 0.20 {'ok' if a <= 0.20 else 'MISSED'}; "
          f"openai cached {o:.3f} ≥ 0.75 {'ok' if o >= 0.75 else 'MISSED'} · {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    anyio.run(main)
