"""What an agent is: its instructions, model, tools and limits (:class:`Agent`). A run
(:mod:`cogcli.loop.run`) takes one; :class:`cogcli.loop.runtime.Cogitator` starts the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cogcli.models.base import Model
from cogcli.contract.tool import Tool
from cogcli.settings.workspace_file import DEFAULT_MAX_STEPS


@dataclass(kw_only=True)
class Agent:
    """An agent: its instructions, model and tools."""
    name: str
    instructions: str
    model: Model
    tools: list[Tool[Any]] = field(default_factory=list)
    max_steps: int = DEFAULT_MAX_STEPS
    #: characters of a result's content a model reads; the rest is cut with a visible marker
    max_result_length: int = 20_000
    #: the instruction files (AGENTS.md, …) whose text ``instructions`` holds, named in the start event
    instruction_files: list[Any] = field(default_factory=list)
    #: a :class:`cogcli.project.instructions.NearbyInstructions` telling the model once about a
    #: subdirectory's own AGENTS.md when a call first touches it (None: not at all)
    nearby_instructions: Any = None
    #: the model's context window in tokens; None: unknown (compaction waits for a context-length error)
    context_window: int | None = None
    #: what the run may spend (a :class:`cogcli.loop.budgets.Budget`; None: no limit)
    budget: Any = None
    #: the schema its final answer must match (a :class:`cogcli.loop.output_schema.OutputSchema`; None: any text)
    output_schema: Any = None
