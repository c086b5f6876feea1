"""What a harness or a CI step reads back from one cog run (the GitHub Action's outputs, Harbor's
agent context): ``python read_back.py cog.jsonl EXIT_CODE`` prints
``{"status", "exit_code", "thread_id", "n_input_tokens", "n_output_tokens", "n_cache_tokens",
"cost_usd", "output"}`` from the run's ``finish`` event (the names Harbor's agent context uses).
Standard library only: it runs with any python3 in the task container."""

from __future__ import annotations

import json
import sys
from typing import Any


def read_back(events_path: str, exit_code: int) -> dict[str, Any]:
    finish: dict[str, Any] = {}
    errors: list[str] = []
    try:
        with open(events_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                if event.get("type") == "finish":
                    finish = event
                elif event.get("type") == "error":
                    errors.append(f"{event.get('code') or 'ERROR'}: {event.get('message', '')}")
    except OSError:
        pass
    usage = finish.get("usage") or {}
    return {
        "status": finish.get("status"),
        "exit_code": exit_code,
        "thread_id": finish.get("threadId"),
        "n_input_tokens": usage.get("inputTokens", 0),
        "n_output_tokens": usage.get("outputTokens", 0),
        "n_cache_tokens": usage.get("cachedInputTokens", 0),
        "cost_usd": usage.get("costUsd"),
        "total_tokens": usage.get("totalTokens", usage.get("inputTokens", 0) + usage.get("outputTokens", 0)) if usage else None,
        "steps": finish.get("steps", 0),
        "output": finish.get("output"),
        "errors": errors,
    }


if __name__ == "__main__":
    print(json.dumps(read_back(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)))
