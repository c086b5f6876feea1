"""A long run that could never fit the model's context: 60 steps of large reads and real test runs
against a loopback model server that refuses (in the provider's own error format) any request over
its token limit. The run completes, every request stays under the window, the compactions show in
the stream, and the thread still holds every full result."""

from __future__ import annotations


import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import json_lines, run_cog
from model_servers import AnthropicServer, OpenAIServer, RecordedRequest, Reply, ToolCall, count_tokens

from cogcli.threads.store import ThreadStore, ToolResultEntry

WINDOW = 24_000
STEPS = 60
AGENTS = "# House rules\n\nRun the tests with run_tests after every change. Never touch vendor/.\n"


def workspace(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    for i in range(12):
        body = "".join(f"def func_{i}_{j}(x):\n    '''Return x scaled by {j} for module {i}.'''\n    return x * {j} + {i}\n\n\n" for j in range(160))
        (repo / "src" / f"big_{i}.py").write_text(body)
    (repo / "src" / "__init__.py").write_text("")
    tests = "".join(f"def test_{k}():\n    print('line of output ' * 20)\n    assert {k} + 1 == {k + 1}\n\n\n" for k in range(25))
    (repo / "tests" / "test_small.py").write_text(tests)
    (repo / "AGENTS.md").write_text(AGENTS)
    (repo / "pyproject.toml").write_text('[project]\nname = "repo"\nversion = "0"\n')
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"], check=True)
    return repo


def the_turns() -> list[Reply]:
    """59 turns of calls (large reads, a search now and then, a test run every tenth), then the answer."""
    turns: list[Reply] = []
    for i in range(STEPS - 1):
        if i % 10 == 9:
            call = ToolCall(f"call_{i}", "run_tests", {})
        elif i % 7 == 3:
            call = ToolCall(f"call_{i}", "search_text", {"pattern": f"def func_{i % 12}_1"})
        else:
            call = ToolCall(f"call_{i}", "read_file", {"path": f"src/big_{i % 12}.py"})
        thinking = f"Step {i}: " + " ".join(f"module {k} looks consistent with its tests;" for k in range(20))  # ~900 characters
        turns.append(Reply(thinking, [call], usage=(0, 20), chunk=200))
    turns.append(Reply("All read and the tests pass: nothing to change.", usage=(0, 15)))
    return turns


class Agent:
    """Answers the run's requests in order, and a summary request (one without tools) with a summary."""

    def __init__(self) -> None:
        self.turns = iter(the_turns())
        self.summaries = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if not body.get("tools"):
            self.summaries += 1
            return Reply("Summary: read src/big_*.py module by module; every test passed so far.", usage=(0, 30))
        return next(self.turns)


def run(repo: Path, server: Any, spec: str, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cog(
        ["edit", "--json", "--yes", "--sandbox", "off", "--max-steps", str(STEPS), "--model", spec,
         "--record", str(repo.parent / "run.jsonl"), *extra, "Read every module and check the tests"],
        repo, env={**env, "XDG_CONFIG_HOME": str(repo.parent / "config")}, timeout=400,
    )


def check_thread(repo: Path, thread_id: str) -> int:
    """Every full result is in the thread: 59 results, no stub among them; returns their characters."""
    with ThreadStore(repo / ".cog" / "threads.db") as store:
        results = [e.entry for e in store.entries(thread_id) if isinstance(e.entry, ToolResultEntry)]
    assert len(results) == STEPS - 1
    chars = 0
    for entry in results:
        content = entry.tool_results[0].content
        assert "dropped to save context" not in content
        if entry.tool_results[0].name == "read_file":
            assert "func_" in content and len(content) > 10_000
        chars += len(content)
    return chars


def compaction_points(events: list[dict[str, Any]]) -> list[tuple[int, int, int, int]]:
    """Per compaction: after how many results it came, how many results it dropped, how many
    messages a summary replaced, and its size after (which may differ by a few tokens from run to
    run: a test run's output has its timings in it)."""
    points, results = [], 0
    for e in events:
        if e["type"] == "tool-result":
            results += 1
        elif e["type"] == "compaction":
            points.append((results, len(e["dropped"]), e["summarizedMessages"], e["tokensAfter"]))
    return points


@pytest.mark.slow
def test_a_60_step_run_five_times_the_window_completes_under_it_openai(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    agent = Agent()
    with OpenAIServer([agent] * 400, token_limit=WINDOW) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
        out = run(repo, server, "openai:gpt-4o", env, "--context-window", str(WINDOW))
    assert out.returncode == 0, out.stderr[-3000:]
    events = json_lines(out.stdout)
    start, finish = events[0], events[-1]
    # the repository's AGENTS.md reaches the model and the start event names it
    assert start["instructions"] == [{"path": "AGENTS.md", "size": len(AGENTS)}]
    assert "Never touch vendor/." in server.requests[0].body["messages"][0]["content"]
    assert finish["status"] == "completed" and finish["steps"] == STEPS
    compactions = [e for e in events if e["type"] == "compaction"]
    assert len(compactions) >= 3 and all(c["tokensAfter"] < c["tokensBefore"] for c in compactions)
    assert all(c["reason"] == "threshold" for c in compactions)
    # the stubs say what each call was as its tool declares it (read_file's recall), not by a name the loop knows
    stubs = [d["stub"] for c in compactions for d in c["dropped"]]
    assert any(s.startswith("[read_file src/big_") and s.endswith("read it again if needed]") for s in stubs), stubs[:5]
    # the turns' own text outgrows what stubs can save: the model is asked for summaries too
    assert agent.summaries >= 1 and any(c["summarizedMessages"] > 0 for c in compactions)
    summarized = [r for r in server.requests if r.body.get("tools") and any("Summary of the earlier work" in (m.get("content") or "") for m in r.body["messages"])]
    assert summarized and all("Read every module and check the tests" in r.body["messages"][1]["content"] for r in summarized)  # the user's words kept
    # every request under the window; none refused
    assert server.rejected == [] and max(server.counted) <= WINDOW
    assert finish["contextWindow"] == WINDOW and 0 < finish["peakContextTokens"] <= WINDOW
    assert finish["compactions"] == len(compactions)
    # exact usage: the sum of what the server reported (the run's turns and the summaries)
    assert finish["usage"]["inputTokens"] == sum(server.counted)
    assert finish["usage"]["outputTokens"] == (STEPS - 1) * 20 + 15 + agent.summaries * 30
    # the thread holds every full result, and all of them together are 5x the window and more
    chars = check_thread(repo, finish["threadId"])
    assert count_tokens({"messages": ["x" * chars]}) >= 5 * WINDOW
    # the recorded cassette holds every turn the model gave (summaries included)
    recorded = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert sum(1 for r in recorded if r.get("type") == "turn") == STEPS + agent.summaries
    # replayed, the recorded run compacts at the same points to the same sizes (usage is recorded too)
    # (the cassette's header carries the window the run had: the replay needs no --context-window)
    assert recorded[0]["type"] == "cassette" and recorded[0]["contextWindow"] == WINDOW
    replay = run_cog(
        ["edit", "--json", "--yes", "--sandbox", "off", "--max-steps", str(STEPS),
         "--model", f"replay:{tmp_path / 'run.jsonl'}", "Read every module and check the tests"],
        repo, env={"XDG_CONFIG_HOME": str(tmp_path / "config")}, timeout=400,
    )
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert json_lines(replay.stdout)[-1]["contextWindow"] == WINDOW
    again = compaction_points(json_lines(replay.stdout))
    assert [p[:3] for p in again] == [p[:3] for p in compaction_points(events)]
    assert all(abs(a[3] - b[3]) <= 20 for a, b in zip(again, compaction_points(events)))


@pytest.mark.slow
def test_a_provider_context_length_error_compacts_and_retries_anthropic(tmp_path: Path) -> None:
    """cog believes the window is 200k (the table's for claude-); the server takes 24k: its
    "prompt is too long" answer teaches cog the real window, the run compacts, retries, and goes on."""
    repo = workspace(tmp_path)
    agent = Agent()
    with AnthropicServer([agent] * 400, token_limit=WINDOW) as server:
        env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url}
        out = run(repo, server, "anthropic:claude-sonnet-4-5", env)
    assert out.returncode == 0, out.stderr[-3000:]
    events = json_lines(out.stdout)
    finish = events[-1]
    assert finish["status"] == "completed" and finish["steps"] == STEPS
    reasons = [e["reason"] for e in events if e["type"] == "compaction"]
    assert reasons[0] == "context-length-error" and len(server.rejected) == 1  # learnt once, then kept under
    assert reasons.count("threshold") >= 2
    accepted = [t for t in server.counted if t not in server.rejected]
    assert max(accepted) <= WINDOW and finish["contextWindow"] == WINDOW
    check_thread(repo, finish["threadId"])
    assert not [e for e in events if e["type"] == "error"]


def test_the_text_output_draws_a_compaction_as_one_quiet_line(tmp_path: Path) -> None:
    from cogcli.wire.events import CompactionEvent, DroppedResult, StartEvent
    from cogcli.render.words import compaction_text, instructions_text

    event = CompactionEvent(reason="threshold", tokens_before=104_512, tokens_after=51_200, context_window=128_000,
                            dropped=[DroppedResult(tool_call_id="c", tool_name="read_file", stub="[…]", tokens=9000)] * 12, summarized_messages=9)
    assert compaction_text(event) == "· Context compacted: 12 results dropped, 9 messages summarized · 104,512 → 51,200 tokens of 128,000"
    start = StartEvent(message_id="m", thread_id="t", instructions=[{"path": "AGENTS.md", "size": 1234}, {"path": "pkg/AGENTS.md", "size": 300, "cut": 2048}])
    assert instructions_text(start) == "Instructions  AGENTS.md (1.2 KB) · pkg/AGENTS.md (300 B, 2.0 KB cut)"

