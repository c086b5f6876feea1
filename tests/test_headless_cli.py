"""The headless contract through the real `cog` console script: --version, --output-schema,
--max-tokens, --max-cost, with replayed cassettes in a copy of fixtures/calc."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import CASSETTE, ROOT, cog_env, json_lines, run_cog

from cogcli import __version__

SCHEMA = {
    "type": "object",
    "properties": {"fixed": {"type": "boolean"}, "files": {"type": "array", "items": {"type": "string"}}},
    "required": ["fixed", "files"],
}


def calc_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "calc"
    shutil.copytree(ROOT / "fixtures" / "calc", repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], check=True)
    return repo


def cassette(tmp_path: Path, *finals: str, name: str = "c.jsonl", fix: bool = True) -> Path:
    """calc_fix's turns (without them: ``fix=False``) with its last answer replaced by ``finals`` (one turn each)."""
    lines = CASSETTE.read_text().splitlines()
    turns = [json.loads(line) for line in lines[1:-1]] if fix else []
    for text in finals:
        turns.append({"type": "turn", "text": text, "toolCalls": [], "usage": {"inputTokens": 1800, "outputTokens": 40}, "stopReason": "stop"})
    path = tmp_path / name
    path.write_text("\n".join([lines[0], *(json.dumps(t) for t in turns)]) + "\n")
    return path


def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def test_version_is_the_package_version_and_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from cogcli.cli import app\n"
        "try:\n"
        "    app(['--version'], prog_name='cog')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'git', 'mcp', 'pydantic', 'anyio', 'jsonschema', 'opentelemetry'))\n"
        "print('LOADED', bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"cog {__version__}", "LOADED []"]


def test_a_schema_valid_answer_is_the_finish_output_in_json_and_text(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path)
    tape = cassette(tmp_path, 'Done: ```json\n{"fixed": true}\n```', '{"fixed": true, "files": ["calc/ops.py"]}')
    out = run_cog(["edit", "--json", "--model", f"replay:{tape}", "--output-schema", str(schema_file(tmp_path)), "Fix add"], repo)
    assert out.returncode == 0, out.stderr
    events = json_lines(out.stdout)
    finish = events[-1]
    assert finish["type"] == "finish" and finish["status"] == "completed"
    assert finish["output"] == {"fixed": True, "files": ["calc/ops.py"]}
    # the same run drawn as text prints the output as JSON after the answer
    repo2 = calc_repo(tmp_path / "second")
    out = run_cog(["edit", "--model", f"replay:{tape}", "--output-schema", str(schema_file(tmp_path)), "Fix add"], repo2)
    assert out.returncode == 0, out.stderr
    assert 'Output:\n{\n  "fixed": true,\n  "files": [\n    "calc/ops.py"\n  ]\n}' in out.stdout


def test_a_rejected_answer_is_marked_where_it_is_drawn(tmp_path: Path) -> None:
    """Issue 49: the text view drew the invalid first answer and the valid second one alike; an
    ``answer-rejected`` event now says what was wrong and that it went back."""
    tape = cassette(tmp_path, 'Done: ```json\n{"fixed": true}\n```', '{"fixed": true, "files": ["calc/ops.py"]}')
    out = run_cog(["edit", "--model", f"replay:{tape}", "--output-schema", str(schema_file(tmp_path)), "Fix add"], calc_repo(tmp_path))
    assert out.returncode == 0, out.stderr
    first = out.stdout.index('Done: ```json')
    mark = out.stdout.index("✗ not valid against the output schema: the answer is not JSON")
    second = out.stdout.index('{"fixed": true, "files": ["calc/ops.py"]}')
    assert first < mark < second and "sent back to the model (2 tries left)" in out.stdout[mark:second]
    events = json_lines(run_cog(["edit", "--json", "--model", f"replay:{tape}", "--output-schema", str(schema_file(tmp_path)), "Fix add"],
                                calc_repo(tmp_path / "json")).stdout)
    rejected = [e for e in events if e["type"] == "answer-rejected"]
    assert len(rejected) == 1 and rejected[0]["triesLeft"] == 2 and rejected[0]["problem"].startswith("the answer is not JSON")


def test_an_answer_never_valid_exits_1_with_its_code_and_a_thread_continues_with_a_schema(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path)
    tape = cassette(tmp_path, "fixed it", "yes", '{"fixed": "yes"}')
    schema = schema_file(tmp_path)
    out = run_cog(["edit", "--json", "--model", f"replay:{tape}", "--output-schema", str(schema), "Fix add"], repo)
    assert out.returncode == 1, out.stderr
    events = json_lines(out.stdout)
    errors = [e for e in events if e["type"] == "error"]
    assert errors[-1]["code"] == "OUTPUT_SCHEMA_INVALID" and "after 3 tries" in errors[-1]["message"]
    assert events[-1]["status"] == "error" and "output" not in events[-1]
    # --last continues that thread; the cassette's next answer is valid
    again = cassette(tmp_path, '{"fixed": false, "files": []}', name="again.jsonl", fix=False)
    out = run_cog(["edit", "--json", "--last", "--model", f"replay:{again}", "--output-schema", str(schema), "Say it again"], repo)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json_lines(out.stdout)[-1]["output"] == {"fixed": False, "files": []}


def test_a_bad_schema_file_is_a_usage_error_before_anything_runs(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": 12}')
    out = run_cog(["edit", "--model", f"replay:{CASSETTE}", "--output-schema", str(bad), "Fix add"], repo)
    assert out.returncode == 2
    assert "is not a valid JSON Schema" in out.stderr and "Traceback" not in out.stderr
    assert "return a - b" in (repo / "calc" / "ops.py").read_text()


def test_an_answer_200000_deep_or_backtracking_goes_back_and_one_at_the_depth_limit_is_kept(tmp_path: Path) -> None:
    from cogcli.loop.json_bounds import MAX_ANSWER_DEPTH

    repo = calc_repo(tmp_path)
    schema = tmp_path / "schema.json"  # the pattern: minutes on 35 characters with Python's re
    schema.write_text(json.dumps({**SCHEMA, "properties": {**SCHEMA["properties"], "files": {"type": "array", "items": {"type": "string", "pattern": "^(\\w+\\s?)*$"}}}}))
    deepest = 0
    for _ in range(MAX_ANSWER_DEPTH - 2):  # the answer object is one level, its "extra" list another
        deepest = [deepest]
    valid = {"fixed": True, "files": ["calc ops"], "extra": [deepest]}
    tape = cassette(tmp_path, "[" * 200_000 + "]" * 200_000, json.dumps({"fixed": True, "files": ["a" * 34 + "!"]}), json.dumps(valid), fix=False)
    out = run_cog(["edit", "--json", "--model", f"replay:{tape}", "--output-schema", str(schema), "Report"], repo, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and "RecursionError" not in out.stdout
    assert json_lines(out.stdout)[-1]["output"] == valid
    # the thread keeps it and reads it back: a run continuing it works
    again = cassette(tmp_path, '{"fixed": false, "files": []}', name="again.jsonl", fix=False)
    out = run_cog(["edit", "--json", "--last", "--model", f"replay:{again}", "--output-schema", str(schema), "Again"], repo, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]


@pytest.mark.parametrize(
    ("text", "said"),
    [('{"items": ' * 20_000 + "{}" + "}" * 20_000, "more than 64 levels deep"),
     (json.dumps({"type": "string", "pattern": "^(?!admin)\\w+$"}), "the pattern " + repr("^(?!admin)\\w+$") + ": it uses lookahead")],
)
def test_a_schema_too_deep_or_with_a_pattern_re2_cannot_run_is_exit_2(tmp_path: Path, text: str, said: str) -> None:
    repo = calc_repo(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    out = run_cog(["edit", "--model", f"replay:{CASSETTE}", "--output-schema", str(bad), "Fix add"], repo)
    assert out.returncode == 2, out.stderr[-2000:]
    assert said in out.stderr and "Traceback" not in out.stderr


def test_the_token_budget_stops_the_run_with_exit_1_and_says_which(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path)
    out = run_cog(["edit", "--json", "--model", f"replay:{CASSETTE}", "--max-tokens", "2500", "Fix add"], repo)
    assert out.returncode == 1, out.stderr
    events = json_lines(out.stdout)
    finish = events[-1]
    assert finish["status"] == "budget_exceeded"
    assert finish["budget"] == {"kind": "tokens", "limit": 2500, "used": 3350}
    # the third response (812+31 + 1004+24 + 1391+88 tokens) went past it: its edit never ran
    assert [e["toolName"] for e in events if e["type"] == "tool-result" and "error" not in e] == ["read_file", "run_tests"]
    assert "return a - b" in (repo / "calc" / "ops.py").read_text()
    text = run_cog(["edit", "--model", f"replay:{CASSETTE}", "--max-tokens", "2500", "Fix add"], calc_repo(tmp_path / "t"))
    assert text.returncode == 1 and "Failed · past its budget of 2,500 tokens" in text.stdout


def test_a_cost_budget_for_a_model_without_a_price_is_refused_naming_the_fix(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path)
    out = run_cog(["edit", "--model", "ollama:llama3.1", "--max-cost", "0.5", "Fix add"], repo)
    assert out.returncode == 2
    assert "--max-cost needs the price of ollama:llama3.1" in out.stderr and '[prices."llama3.1"]' in out.stderr


@pytest.mark.parametrize("flag", ["--max-tokens", "--max-cost"])
def test_a_budget_of_zero_is_a_usage_error(tmp_path: Path, flag: str) -> None:
    out = run_cog(["edit", "--model", f"replay:{CASSETTE}", flag, "0", "Fix add"], calc_repo(tmp_path))
    assert out.returncode == 2 and flag in out.stderr


def test_a_cost_budget_on_a_cassette_needs_its_recorded_costs(tmp_path: Path) -> None:
    out = run_cog(["edit", "--model", f"replay:{CASSETTE}", "--max-cost", "1", "Fix add"], calc_repo(tmp_path))
    assert out.returncode == 2 and "records none for some turns: use --max-tokens" in out.stderr
    lines = CASSETTE.read_text().splitlines()
    turns = [json.loads(line) for line in lines[1:]]
    for turn in turns:
        turn["usage"]["costUsd"] = 0.01
    priced = tmp_path / "priced.jsonl"
    priced.write_text("\n".join([lines[0], *(json.dumps(t) for t in turns)]) + "\n")
    out = run_cog(["edit", "--json", "--model", f"replay:{priced}", "--max-cost", "0.025", "Fix add"], calc_repo(tmp_path / "p"))
    assert out.returncode == 1, out.stderr
    assert json_lines(out.stdout)[-1]["budget"] == {"kind": "cost", "limit": 0.025, "used": 0.03}


def test_cog_serve_holds_every_run_to_its_budget(tmp_path: Path) -> None:
    from serve_helpers import Served

    repo = calc_repo(tmp_path)
    with Served(repo, model=f"replay:{CASSETTE}", args=["--max-tokens", "2500"]) as srv:
        run = srv.start(approval="auto")
        frames = [f for f in srv.sse(f"/api/runs/{run['runId']}/events") if f.comment is None and f.data != "[DONE]"]
    finish = frames[-1].event
    assert finish["type"] == "finish" and finish["status"] == "budget_exceeded"
    assert finish["budget"] == {"kind": "tokens", "limit": 2500, "used": 3350}
    assert "return a - b" in (repo / "calc" / "ops.py").read_text()
