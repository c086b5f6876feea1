"""Plan mode at the tool gate: `cog edit --plan` refuses every call of a tool that is not read-only
(PLAN_MODE, unrun, unasked) while reads run; `--last "go"` then runs the plan with every tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from cli_helpers import run_cog
from cogcli.loop.agent import Agent
from cogcli.agent_tools.update_plan import update_plan_tool
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.gate.plan_mode import PlanMode
from cogcli.loop.runtime import Cogitator
from cogcli.contract.tool import tool
from workspace_tools import workspace_tools


def write_cassette(path: Path, turns: list[dict[str, Any]]) -> Path:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}, *({"type": "turn", **t} for t in turns)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


WRITES = {
    "toolCalls": [
        {"id": "r1", "name": "read_file", "arguments": {"path": "calc/ops.py"}},
        {"id": "e1", "name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": "return a - b\n\n\ndef sub", "new_text": "return a + b\n\n\ndef sub"}},
        {"id": "w1", "name": "write_file", "arguments": {"path": "NEW.md", "content": "x\n"}},
        {"id": "t1", "name": "run_tests", "arguments": {}},
        {"id": "p1", "name": "update_plan", "arguments": {"steps": [{"step": "Fix add in calc/ops.py"}, {"step": "Run the tests"}]}},
    ]
}


def _results(stdout: str) -> dict[str, dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return {e["toolCallId"]: e for e in events if e["type"] == "tool-result"}


def test_cog_edit_plan_refuses_writes_at_the_gate_and_reads_run(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    before = (repo / "calc/ops.py").read_bytes()
    cassette = write_cassette(tmp_path / "plan.jsonl", [WRITES, {"text": "Plan:\n1. Change `-` to `+` in add.\n2. Run the tests."}])
    # --yes: without plan mode every one of these calls would run unasked
    done = run_cog(["edit", "--plan", "--yes", "--json", "--model", f"replay:{cassette}", "Fix add"], repo)
    assert done.returncode == 0, done.stderr
    results = _results(done.stdout)
    assert results["r1"].get("error") is None and "def add" in results["r1"]["result"]
    assert results["p1"].get("error") is None and results["p1"]["details"]["steps"][0]["step"] == "Fix add in calc/ops.py"
    for call in ("e1", "w1", "t1"):
        assert results[call]["errorCode"] == "PLAN_MODE"
        assert "plan mode" in results[call]["error"]
    assert (repo / "calc/ops.py").read_bytes() == before
    assert not (repo / "NEW.md").exists()
    assert "approval-required" not in done.stdout  # refused before anyone is asked

    # the plan is carried out in the same thread with every tool back
    go = write_cassette(tmp_path / "go.jsonl", [{"toolCalls": [WRITES["toolCalls"][1]]}, {"text": "Done."}])
    ran = run_cog(["edit", "--last", "--yes", "--json", "--model", f"replay:{go}", "go"], repo)
    assert ran.returncode == 0, ran.stderr
    assert _results(ran.stdout)["e1"].get("error") is None
    assert b"return a + b" in (repo / "calc/ops.py").read_bytes()


def test_without_plan_mode_the_same_calls_change_the_files(make_repo, tmp_path: Path) -> None:
    """The attack the gate stops: the same turn, no --plan, writes."""
    repo = make_repo("calc")
    cassette = write_cassette(tmp_path / "plan.jsonl", [{"toolCalls": WRITES["toolCalls"][1:3]}, {"text": "ok"}])
    done = run_cog(["edit", "--yes", "--json", "--model", f"replay:{cassette}", "Fix add"], repo)
    assert all(r.get("error") is None for r in _results(done.stdout).values()), done.stdout
    assert (repo / "NEW.md").exists()


def _run(tools: list[Any], calls: list[dict[str, Any]], plan: PlanMode | None, approve: Any = None) -> Any:
    model = ScriptedModel([Turn(calls=[Call(c["id"], c["name"], c["arguments"]) for c in calls]), Turn(text="plan")])
    agent = Agent(name="t", instructions="", model=model, tools=tools)
    return anyio.run(lambda: Cogitator().run(agent, input="go", plan=plan, approve=approve))


def test_the_gate_reads_declarations_not_names_and_the_person_may_allow_a_tool(tmp_path: Path) -> None:
    ran: list[str] = []
    sneaky = tool(name="read_notes", description="d", parameters=_NoArgs, execute=lambda: ran.append("read_notes") or "x")
    honest = tool(name="peek", description="d", parameters=_NoArgs, execute=lambda: ran.append("peek") or "x", read_only=True)
    runner = tool(name="run_tests", description="d", parameters=_NoArgs, execute=lambda: ran.append("run_tests") or "x", side_effects=("runs code",))
    calls = [{"id": "a", "name": "read_notes", "arguments": {}}, {"id": "b", "name": "peek", "arguments": {}}, {"id": "c", "name": "run_tests", "arguments": {}}]
    result = _run([sneaky, honest, runner], calls, PlanMode())
    assert ran == ["peek"]  # a name that sounds harmless is not a declaration
    assert [r.error_code for r in result.tool_calls] == ["PLAN_MODE", None, "PLAN_MODE"]
    assert result.status == "completed"

    asked: list[str] = []

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        asked.extend(a.tool_name for a in approvals)
        return {a.tool_call_id: True for a in approvals}

    ran.clear()
    result = _run([sneaky, honest, runner], calls, PlanMode.of(["run_tests"]), approve)
    assert sorted(ran) == ["peek", "run_tests"] and asked == ["run_tests"]  # they run concurrently  # allowed, still approved as usual
    assert [r.error_code for r in result.tool_calls] == ["PLAN_MODE", None, None]


def test_workspace_tools_declare_what_changes_nothing(tmp_path: Path) -> None:
    declared = {t.name: t.read_only for t in workspace_tools(tmp_path)}
    assert declared == {
        "read_file": True, "list_files": True, "search_text": True, "git_status": True, "git_diff": True,
        "edit_file": False, "write_file": False, "run_tests": False, "command_output": True,
    } | {n: False for n in declared if n not in {"read_file", "list_files", "search_text", "git_status", "git_diff", "edit_file", "write_file", "run_tests", "command_output"}}
    assert update_plan_tool().read_only
    with pytest.raises(ValueError, match="cannot be read_only"):
        tool(name="x", description="d", parameters=_NoArgs, execute=lambda: None, read_only=True, side_effects=("writes files",))


def test_plan_allow_is_the_persons_setting_never_the_workspaces(tmp_path: Path) -> None:
    from cogcli.settings.load import load_settings
    from cogcli.settings.options import SettingFlags

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "cog.toml").write_text('plan_allow = ["edit_file"]\n')  # a workspace cannot let a tool through
    person = tmp_path / "config"
    (person / "cog").mkdir(parents=True)
    assert load_settings(ws, environ={"XDG_CONFIG_HOME": str(person)}).plan_allow == ()
    assert load_settings(ws, environ={"XDG_CONFIG_HOME": str(person), "COG_PLAN_ALLOW": "run_tests,run_command"}).plan_allow == ("run_tests", "run_command")
    (person / "cog/config.toml").write_text('plan_allow = ["run_tests"]\n')
    assert load_settings(ws, environ={"XDG_CONFIG_HOME": str(person)}).plan_allow == ("run_tests",)
    assert load_settings(ws, SettingFlags(plan_allow=["x"]), environ={"XDG_CONFIG_HOME": str(person)}).plan_allow == ("x",)
    assert PlanMode().instructions([update_plan_tool()]).count("update_plan") == 2


from pydantic import BaseModel  # noqa: E402


class _NoArgs(BaseModel):
    pass


def test_cog_edit_takes_the_chats_plan_and_go_and_plan_allow_needs_plan(make_repo, tmp_path: Path) -> None:
    from cogcli.gate.plan_mode import GO, plan_command

    assert plan_command("/plan fix add") == ("fix add", True)
    assert plan_command("/go also docs") == (f"{GO}\n\nalso docs", False)
    assert plan_command("/review x") is None and plan_command("plan it") is None
    repo = make_repo("calc")
    before = (repo / "calc/ops.py").read_bytes()
    cassette = write_cassette(tmp_path / "p.jsonl", [{"toolCalls": [WRITES["toolCalls"][1]]}, {"text": "1. fix"}])
    done = run_cog(["edit", "--yes", "--json", "--model", f"replay:{cassette}", "/plan Fix add"], repo)
    assert done.returncode == 0 and _results(done.stdout)["e1"]["errorCode"] == "PLAN_MODE"
    assert (repo / "calc/ops.py").read_bytes() == before
    wrong = run_cog(["edit", "--plan-allow", "run_tests", "--model", f"replay:{cassette}", "x"], repo)
    assert wrong.returncode == 2 and "--plan-allow goes with --plan" in wrong.stderr
