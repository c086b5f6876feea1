"""cog as an installed agent of a Harbor-style harness (Terminal-Bench 2.x, SWE-bench Verified):

    harbor run -d terminal-bench@2.0 --agent-import-path integrations.harbor.cog_agent:CogAgent -m openai/gpt-4o

The harness runs ``install-cog.sh`` once in the task container, then one command per task —
``cog-harbor-run --model provider/model --logs /logs/agent -- INSTRUCTION`` (every call approved,
keys from the environment) — and reads back what the run left in the logs folder: ``usage.json``
(tokens, cache, cost: :mod:`read_back`), ``trajectory.json`` (ATIF) and the events ``cog.jsonl``.

Written against Harbor's documented installed-agent interface (``BaseInstalledAgent``:
``name``, ``_install_agent_template_path``, ``create_run_agent_commands``,
``populate_context_post_run``); nothing here is copied from Harbor. Only Harbor imports this file.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from harbor.agents.installed.base import BaseInstalledAgent, ExecInput  # type: ignore[import-not-found]

HERE = Path(__file__).resolve().parent
#: where the run's logs go inside the container (Harbor mounts it as the agent's logs folder)
CONTAINER_LOGS = "/logs/agent"
#: the keys passed from the harness's environment into the task's command
KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "COG_MODEL")


def run_command(instruction: str, model: str | None, *, logs: str = CONTAINER_LOGS, limits: dict[str, Any] | None = None) -> str:
    """The one shell command that runs a task (each word quoted: the instruction is data)."""
    words = ["cog-harbor-run", "--logs", logs]
    if model:
        words += ["--model", model]
    for flag, value in (limits or {}).items():
        if value is not None:
            words += [f"--{flag.replace('_', '-')}", str(value)]
    words += ["--", instruction]
    return " ".join(shlex.quote(w) for w in words)


class CogAgent(BaseInstalledAgent):  # type: ignore[misc]
    SUPPORTS_ATIF = True

    def __init__(self, *args: Any, max_steps: int | None = None, max_tokens: int | None = None, max_cost: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = {"max_steps": max_steps, "max_tokens": max_tokens, "max_cost": max_cost}

    @staticmethod
    def name() -> str:
        return "cog"

    @property
    def _install_agent_template_path(self) -> Path:
        return HERE / "install-cog.sh"

    def create_run_agent_commands(self, instruction: str) -> list[Any]:
        env = {k: os.environ[k] for k in KEYS if os.environ.get(k)}
        return [ExecInput(command=run_command(instruction, getattr(self, "model_name", None), limits=self.limits), env=env)]

    def populate_context_post_run(self, context: Any) -> None:
        usage_file = Path(self.logs_dir) / "usage.json"
        try:
            usage = json.loads(usage_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        context.n_input_tokens = usage.get("n_input_tokens") or 0
        context.n_output_tokens = usage.get("n_output_tokens") or 0
        context.n_cache_tokens = usage.get("n_cache_tokens") or 0
        context.cost_usd = usage.get("cost_usd")
