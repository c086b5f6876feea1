"""The headless contract in the run loop: a final answer held to a JSON Schema (sent back with the
problem, bounded tries, ``finish.output``) and token / cost budgets checked after every response."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cogcli import tool
from cogcli.loop.budgets import Budget, budget_prices, check_cost_budget
from cogcli.contract.errors import ConfigError
from cogcli.wire.events import BaseEvent, ErrorEvent, FinishEvent, ToolResultEvent
from cogcli.wire.exit_codes import run_exit_code
from cogcli.threads.store import ToolResultEntry, UserEntry
from cogcli.models.base import UsageReport
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.settings.prices import Price, price_of
from cogcli.loop.runtime import Agent, Cogitator, RunResult
from cogcli.loop.output_schema import OutputSchema

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}, "count": {"type": "integer", "minimum": 0}},
    "required": ["verdict", "count"],
    "additionalProperties": False,
}


class NoteArgs(BaseModel):
    name: str


def note_tool(folder: Path) -> Any:
    @tool(side_effects=["writes files"])
    async def write_note(params: NoteArgs) -> str:
        """Write a note file."""
        (folder / params.name).write_text("x")
        return f"wrote {params.name}"

    return write_note


async def run(model: ScriptedModel, *, tools: list[Any] = (), **agent: Any) -> tuple[RunResult, list[BaseEvent], Cogitator]:
    cog = Cogitator()
    events: list[BaseEvent] = []
    result = await cog.run(Agent(name="t", instructions="Test.", model=model, tools=list(tools), **agent), input="go", on_event=events.append)
    return result, events, cog


def finish_of(events: list[BaseEvent]) -> FinishEvent:
    finish = [e for e in events if isinstance(e, FinishEvent)]
    assert len(finish) == 1
    return finish[0]


# --- the output schema ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_invalid_answer_goes_back_with_the_problem_and_the_valid_one_is_the_finish_output() -> None:
    model = ScriptedModel([Turn("All good, 3 tests."), Turn('{"verdict": "pass", "count": -1}'), Turn('```json\n{"verdict": "pass", "count": 3}\n```')])
    result, events, cog = await run(model, output_schema=OutputSchema.of(SCHEMA))
    finish = finish_of(events)
    assert finish.status == "completed" and finish.output == {"verdict": "pass", "count": 3}
    assert finish.to_wire()["output"] == {"verdict": "pass", "count": 3}
    assert result.structured_output == {"verdict": "pass", "count": 3}
    # the model read why each answer was refused, and the schema itself
    second, third = model.requests[1][-1].content, model.requests[2][-1].content
    assert "not JSON" in second and "2 tries left" in second and '"verdict"' in second
    assert "-1 is less than the minimum of 0" in third and "$.count" in third and "1 try left" in third
    # the instructions told it the schema from the first request on
    assert '"additionalProperties": false' in model.requests[0][0].content
    # the thread keeps the retries as user messages, and the run_end keeps the output
    entries = [e.entry for e in cog.store.entries(result.thread_id)]
    assert len([e for e in entries if isinstance(e, UserEntry)]) == 3
    assert entries[-1].output == {"verdict": "pass", "count": 3}


@pytest.mark.anyio
async def test_an_answer_that_never_validates_ends_the_run_failed_with_its_code_after_the_tries() -> None:
    model = ScriptedModel([Turn("nope"), Turn("[1, 2]"), Turn("still not"), Turn("never asked")])
    result, events, _ = await run(model, output_schema=OutputSchema.of(SCHEMA, tries=3))
    assert len(model.requests) == 3 and len(model.script) == 1
    finish = finish_of(events)
    assert finish.status == "error" and finish.output is None
    error = [e for e in events if isinstance(e, ErrorEvent)][-1]
    assert error.code == "OUTPUT_SCHEMA_INVALID" and "after 3 tries" in error.message and "not JSON" in error.message
    assert result.error_code == "OUTPUT_SCHEMA_INVALID"
    assert run_exit_code(finish.status, error_code=error.code, tests_failed=0, tests_error=False) == 1


def test_a_schema_that_is_not_one_is_refused_before_any_run(tmp_path: Path) -> None:
    bad = tmp_path / "s.json"
    bad.write_text('{"type": "objekt"}')
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        OutputSchema.load(bad)
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="is not JSON"):
        OutputSchema.load(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        OutputSchema.load(tmp_path / "missing.json")
    bad.write_text("[]")
    with pytest.raises(ConfigError, match="JSON object"):
        OutputSchema.load(bad)


def test_a_remote_reference_is_never_fetched() -> None:
    schema = OutputSchema.of({"$ref": "http://127.0.0.1:9/never.json"})
    verdict = schema.check("{}")
    assert not verdict.ok and "could not be applied" in verdict.problem


# --- budgets ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_response_past_the_token_budget_ends_the_run_and_its_calls_never_run(tmp_path: Path) -> None:
    model = ScriptedModel([
        Turn("one", [Call("c1", "write_note", {"name": "a"})], usage=(400, 50)),
        Turn("two", [Call("c2", "write_note", {"name": "b"})], usage=(600, 50)),
        Turn("done"),
    ])
    result, events, cog = await run(model, tools=[note_tool(tmp_path)], budget=Budget(max_tokens=1000))
    assert (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    finish = finish_of(events)
    assert finish.status == "budget_exceeded"
    assert finish.to_wire()["budget"] == {"kind": "tokens", "limit": 1000, "used": 1100}
    unrun = [e for e in events if isinstance(e, ToolResultEvent) and e.tool_call_id == "c2"][0]
    assert unrun.error_code == "BUDGET_EXCEEDED" and "1,100 tokens" in (unrun.error or "")
    assert result.status == "budget_exceeded" and result.budget is not None and result.budget.kind == "tokens"
    assert run_exit_code(finish.status, error_code=None, tests_failed=0, tests_error=False) == 1
    # the thread keeps the step: the call ended unrun, saying why
    kept = [e.entry for e in cog.store.entries(result.thread_id) if isinstance(e.entry, ToolResultEntry)]
    assert [e.tool_results[0].call_id for e in kept] == ["c1", "c2"]


@pytest.mark.anyio
async def test_the_cost_budget_counts_every_response_and_an_unknown_cost_stops_it(tmp_path: Path) -> None:
    cheap = UsageReport(input_tokens=1000, output_tokens=100, cost_usd=0.004)
    model = ScriptedModel([Turn("a", [Call("c1", "write_note", {"name": "a"})], usage=cheap),
                           Turn("b", [Call("c2", "write_note", {"name": "b"})], usage=cheap), Turn("done", usage=cheap)])
    result, events, _ = await run(model, tools=[note_tool(tmp_path)], budget=Budget(max_cost=0.01))
    assert finish_of(events).status == "budget_exceeded"
    assert finish_of(events).to_wire()["budget"] == {"kind": "cost", "limit": 0.01, "used": 0.012}
    within = ScriptedModel([Turn("a", usage=cheap)])
    result, events, _ = await run(within, budget=Budget(max_cost=0.01, max_tokens=5000))
    assert finish_of(events).status == "completed" and finish_of(events).budget is None
    unknown = ScriptedModel([Turn("a", [Call("c1", "write_note", {"name": "c"})], usage=(10, 5))])
    result, events, _ = await run(unknown, tools=[note_tool(tmp_path)], budget=Budget(max_cost=1.0))
    assert finish_of(events).status == "budget_exceeded" and finish_of(events).budget.used is None
    assert not (tmp_path / "c").exists()


def test_budgets_are_checked_and_a_cost_budget_needs_a_known_price() -> None:
    with pytest.raises(ConfigError, match="--max-tokens"):
        Budget(max_tokens=0)
    with pytest.raises(ConfigError, match="--max-cost"):
        Budget(max_cost=float("nan"))
    check_cost_budget("openai:gpt-4o-mini", {})
    with pytest.raises(ConfigError, match=r'\[prices\."my-model"\]'):
        check_cost_budget("openai:my-model", {})
    check_cost_budget("openai:my-model", {"my-model": Price(1.0, 4.0, 1.0, 1.0)})
    with pytest.raises(ConfigError, match="llama3"):
        check_cost_budget("ollama:llama3", {})


def test_a_workspace_cannot_make_a_known_model_cheaper_for_a_budget() -> None:
    free = Price(0.0, 0.0, 0.0, 0.0)
    kept = budget_prices("openai:gpt-4o", {"gpt-4o": free, "other": free})
    assert "gpt-4o" not in kept and "other" in kept
    assert price_of("openai:gpt-4o", kept) == price_of("openai:gpt-4o")
    dearer = Price(5.0, 20.0, 5.0, 5.0)
    assert budget_prices("openai:gpt-4o", {"gpt-4o": dearer}) == {"gpt-4o": dearer}
    assert json.dumps(sorted(budget_prices("openai:unknown", {"unknown": free})))
