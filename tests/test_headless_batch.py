"""A batch held to an output schema, exported as SWE-bench predictions and ATIF trajectories,
through the real console script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from batch_helpers import FIX_ADD, cassette, check_patches, make_repos, results
from cli_helpers import run_cog

SCHEMA = {"type": "object", "properties": {"fixed": {"type": "boolean"}}, "required": ["fixed"]}


def test_a_batch_keeps_each_answer_and_exports_swebench_predictions_and_atif(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    fix = cassette(tapes / "fix.jsonl", [("Fixing add.", [("edit_file", FIX_ADD)]), ("Testing.", [("run_tests", {})]), ('{"fixed": true}', [])])
    prose = cassette(tapes / "prose.jsonl", [("I fixed it.", []), ("Really.", []), ("Yes.", [])])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in [
        {"id": "calc__calc-1", "repo": "repos/calc", "instruction": "Fix the failing test", "model": fix},
        {"id": "calc__calc-2", "repo": "repos/calc", "instruction": "Say so", "model": prose},
    ]))
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    out = tmp_path / "out"
    done = run_cog(["batch", str(tasks), "--out", str(out), "--workers", "1", "--output-schema", str(schema)], tmp_path)
    assert done.returncode == 1, done.stderr
    rows = {r["id"]: r for r in results(out)}
    assert rows["calc__calc-1"]["status"] == "passed" and rows["calc__calc-1"]["output"] == {"fixed": True}
    assert rows["calc__calc-2"]["status"] == "error" and rows["calc__calc-2"]["output"] is None
    assert rows["calc__calc-2"]["run_status"] == "error" and "after 3 tries" in rows["calc__calc-2"]["error"]
    check_patches(out, repos, tmp_path)

    # SWE-bench predictions: one line a task, the patch as the batch wrote it
    report = run_cog(["batch", "report", str(out), "--swebench"], tmp_path)
    assert report.returncode == 0, report.stderr
    preds = [json.loads(line) for line in report.stdout.splitlines()]
    assert [p["instance_id"] for p in preds] == ["calc__calc-1", "calc__calc-2"]
    assert all(set(p) == {"instance_id", "model_name_or_path", "model_patch"} for p in preds)
    assert preds[0]["model_name_or_path"] == f"cog/{fix}"
    assert preds[0]["model_patch"] == (out / "patches" / "calc__calc-1.diff").read_text() and "+    return a + b" in preds[0]["model_patch"]
    assert preds[1]["model_patch"] == ""
    named = run_cog(["batch", "report", str(out), "--swebench", "--model-name", "cog-gpt"], tmp_path)
    assert {json.loads(line)["model_name_or_path"] for line in named.stdout.splitlines()} == {"cog-gpt"}
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(repos["calc"]), str(fresh)], check=True)
    applied = subprocess.run(["git", "-C", str(fresh), "apply", "-"], input=preds[0]["model_patch"], text=True, capture_output=True)
    assert applied.returncode == 0, applied.stderr

    # the task's thread, in its checkout, as an ATIF trajectory
    work = out / "work" / "calc__calc-1"
    exported = run_cog(["thread", "export", "--last", "--format", "atif", "-C", str(work)], tmp_path)
    assert exported.returncode == 0, exported.stderr
    traj = json.loads(exported.stdout)
    check_atif(traj)
    assert traj["session_id"] == rows["calc__calc-1"]["thread_id"]
    assert [s["source"] for s in traj["steps"]] == ["user", "agent", "agent", "agent"]
    assert traj["steps"][0]["message"] == "Fix the failing test"
    edit = traj["steps"][1]
    assert edit["tool_calls"] == [{"tool_call_id": "c0_0", "function_name": "edit_file", "arguments": FIX_ADD}]
    assert edit["observation"]["results"][0]["source_call_id"] == "c0_0"
    assert "3 passed" in traj["steps"][2]["observation"]["results"][0]["content"]
    metrics = traj["final_metrics"]
    assert metrics["total_prompt_tokens"] == rows["calc__calc-1"]["input_tokens"] == 100 + 101 + 102
    assert metrics["total_completion_tokens"] == 30 and metrics["total_steps"] == 4
    assert traj["steps"][-1]["extra"]["run_end"]["output"] == {"fixed": True}
    # each agent step has its own request's usage (the cassette's 100+n in, 10 out)
    assert [s["metrics"]["prompt_tokens"] for s in traj["steps"][1:]] == [100, 101, 102]
    assert all(s["metrics"]["completion_tokens"] == 10 for s in traj["steps"][1:])
    # into a file, and the same thread's events as JSON lines
    assert run_cog(["thread", "export", traj["session_id"][:12], "-o", str(tmp_path / "t.json"), "-C", str(work)], tmp_path).returncode == 0
    assert json.loads((tmp_path / "t.json").read_text()) == traj
    lines = run_cog(["thread", "export", "--last", "--format", "jsonl", "-C", str(work)], tmp_path).stdout.splitlines()
    assert json.loads(lines[0])["type"] == "start" and json.loads(lines[-1])["output"] == {"fixed": True}


def test_the_retried_answers_are_user_steps_and_redraw_as_one_run(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    tape = cassette(tapes / "t.jsonl", [("nope", []), ('{"fixed": false}', [])])
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    done = run_cog(["edit", "--model", tape, "--output-schema", str(schema), "Check"], repos["calc"])
    assert done.returncode == 0, done.stderr
    traj = json.loads(run_cog(["thread", "export", "--last", "-C", str(repos["calc"])], tmp_path).stdout)
    check_atif(traj)
    assert [s["source"] for s in traj["steps"]] == ["user", "agent", "user", "agent"]
    assert "not valid against the output schema" in traj["steps"][2]["message"]
    shown = run_cog(["thread", "show", traj["session_id"], "--json", "-C", str(repos["calc"])], tmp_path)
    assert [json.loads(line)["type"] for line in shown.stdout.splitlines()].count("start") == 1


def check_atif(traj: dict) -> None:
    """The required fields of ATIF v1.4 and their types (root, agent, steps, tool calls, observations)."""
    assert traj["schema_version"] == "ATIF-v1.4" and isinstance(traj["session_id"], str)
    assert traj["agent"]["name"] == "cog" and isinstance(traj["agent"]["version"], str)
    for n, step in enumerate(traj["steps"], start=1):
        assert step["step_id"] == n and step["source"] in ("system", "user", "agent") and isinstance(step["message"], str)
        calls = {c["tool_call_id"] for c in step.get("tool_calls", [])}
        for c in step.get("tool_calls", []):
            assert isinstance(c["function_name"], str) and isinstance(c["arguments"], dict)
        for r in step.get("observation", {"results": []})["results"]:
            assert r.get("source_call_id") is None or r["source_call_id"] in calls
            assert isinstance(r.get("content", ""), str)
    for key in ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens", "total_steps"):
        assert isinstance(traj["final_metrics"].get(key, 0), int)
