"""A stored thread as an ATIF trajectory (the Agent Trajectory Interchange Format of the Harbor
project, v1.4): ``cog thread export ID --format atif``.

    {"schema_version": "ATIF-v1.4", "session_id": <thread id>,
     "agent": {"name": "cog", "version": …, "model_name": …},
     "steps": [{"step_id": 1, "source": "user", "message": …, "timestamp": …},
               {"step_id": 2, "source": "agent", "message": …, "tool_calls": [{"tool_call_id", "function_name", "arguments"}],
                "observation": {"results": [{"source_call_id", "content"}]}}, …],
     "final_metrics": {"total_prompt_tokens", "total_completion_tokens", "total_cached_tokens", "total_cost_usd", "total_steps"}}

What each step holds is what the thread keeps: the person's instructions (and the run's own
follow-ups, such as an answer sent back to match ``--output-schema``) as ``user`` steps, each model
turn as an ``agent`` step with its readable reasoning (``reasoning_content``), its calls and what the model read of their results (redacted, cut
as the model read them), a compaction as a ``system`` step. Each agent step's ``metrics`` are its model request's (prompt tokens include cached ones, as ATIF
counts them; cache writes in ``extra``), ``final_metrics`` sums the runs' usage (summary requests
for compaction included), and each run's end is in its last agent step's ``extra``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cogcli.threads.entries import AssistantEntry, CompactionEntry, RunEndEntry, StoredEntry, ToolResultEntry, UserEntry

SCHEMA_VERSION = "ATIF-v1.4"


def trajectory(thread_id: str, entries: Sequence[StoredEntry], *, model: str | None = None) -> dict[str, Any]:
    """The ATIF trajectory of the thread ``thread_id`` from its stored ``entries``."""
    from cogcli.version import __version__

    steps: list[dict[str, Any]] = []
    last_agent: dict[str, Any] | None = None
    runs: list[dict[str, Any]] = []
    totals = {"prompt": 0, "completion": 0, "cached": 0, "cache_write": 0}
    cost: float | None = 0.0
    counted = False
    for stored in entries:
        e, at = stored.entry, stored.created_at
        if isinstance(e, UserEntry):
            steps.append(_step(steps, "user", e.content, at))
        elif isinstance(e, AssistantEntry):
            last_agent = _step(steps, "agent", e.content, at)
            if model:
                last_agent["model_name"] = model
            thought = "\n\n".join(r.text for r in e.reasoning or [] if r.text)
            if thought:  # the model's readable reasoning, as the thread keeps it (ATIF's reasoning_content)
                last_agent["reasoning_content"] = thought
            if e.usage is not None:  # the turn's own request (threads from before cog kept it have none)
                last_agent["metrics"] = _metrics(e.usage)
            if e.tool_calls:
                last_agent["tool_calls"] = [
                    {"tool_call_id": c.id, "function_name": c.name, "arguments": _arguments(c.arguments)} for c in e.tool_calls
                ]
            steps.append(last_agent)
        elif isinstance(e, ToolResultEntry) and last_agent is not None:
            results = last_agent.setdefault("observation", {"results": []})["results"]
            results += [{"source_call_id": r.call_id, "content": r.content} for r in e.tool_results]
        elif isinstance(e, CompactionEntry):
            step = _step(steps, "system", "The conversation so far was compacted; the model reads this summary in its place.", at)
            step["observation"] = {"results": [{"content": e.content}]}
            steps.append(step)
        elif isinstance(e, RunEndEntry):
            run = {"status": str(e.status), "steps": e.steps}
            for key in ("error", "error_code", "tests", "output"):
                if getattr(e, key) is not None:
                    run[key] = getattr(e, key)
            if e.files_changed:
                run["files_changed"] = [f.model_dump(mode="json", exclude_none=True) for f in e.files_changed]
            runs.append(run)
            if last_agent is not None:
                last_agent.setdefault("extra", {})["run_end"] = run
            usage = e.usage
            if usage is not None and usage.counted:
                counted = True
                totals["prompt"] += usage.input_tokens
                totals["completion"] += usage.output_tokens
                totals["cached"] += usage.cached_input_tokens or 0
                totals["cache_write"] += usage.cache_write_tokens or 0
                cost = None if cost is None or usage.cost_usd is None else cost + usage.cost_usd
    metrics: dict[str, Any] = {"total_steps": len(steps)}
    if counted:
        metrics.update(total_prompt_tokens=totals["prompt"], total_completion_tokens=totals["completion"], total_cached_tokens=totals["cached"])
        if cost is not None:
            metrics["total_cost_usd"] = round(cost, 6)
        if totals["cache_write"]:
            metrics["extra"] = {"cache_creation_input_tokens": totals["cache_write"]}
    agent: dict[str, Any] = {"name": "cog", "version": __version__}
    if model:
        agent["model_name"] = model
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "session_id": thread_id, "agent": agent, "steps": steps, "final_metrics": metrics}
    if runs:
        out["extra"] = {"runs": runs}
    return out


def _metrics(usage: Any) -> dict[str, Any]:
    metrics: dict[str, Any] = {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
                               "cached_tokens": usage.cached_input_tokens or 0}
    if usage.cost_usd is not None:
        metrics["cost_usd"] = round(usage.cost_usd, 8)
    if usage.cache_write_tokens:
        metrics["extra"] = {"cache_creation_input_tokens": usage.cache_write_tokens}
    return metrics


def _step(steps: list[dict[str, Any]], source: str, message: str, timestamp: str) -> dict[str, Any]:
    return {"step_id": len(steps) + 1, "timestamp": timestamp, "source": source, "message": message}


def _arguments(arguments: Any) -> dict[str, Any]:
    """ATIF wants an object: arguments that were not one (text the model sent that is not JSON) are kept under ``raw``."""
    if isinstance(arguments, dict):
        return arguments
    return {} if arguments is None else {"raw": arguments}
