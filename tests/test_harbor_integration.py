"""The Harbor-style adapter (integrations/harbor/): one non-interactive command per task, its logs
(events, ATIF trajectory, usage read back) in a folder, run for real on a copy of fixtures/calc
with the replayed cassette; the agent class against a stand-in of Harbor's documented interface."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CASSETTE, ROOT, cog_env

HARBOR = ROOT / "integrations" / "harbor"


def task_dir(tmp: Path, *, git: bool = True) -> Path:
    repo = tmp / "task"
    shutil.copytree(ROOT / "fixtures" / "calc", repo)
    if git:
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def harness_env(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "cog-harbor-run").exists():
        (bin_dir / "cog-harbor-run").symlink_to(HARBOR / "run-task.sh")
    return cog_env({"PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}"})


def run_task(tmp: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["cog-harbor-run", *args], cwd=cwd, env=harness_env(tmp), capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_one_command_runs_the_task_and_leaves_events_trajectory_and_usage(tmp_path: Path) -> None:
    repo = task_dir(tmp_path)
    logs = tmp_path / "logs" / "agent"
    done = run_task(tmp_path, repo, "--model", f"replay:{CASSETTE}", "--logs", str(logs), "--max-steps", "10", "--", "Fix the failing test")
    assert done.returncode == 0, (done.stderr, (logs / "cog.stderr").read_text())
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()
    events = [json.loads(line) for line in (logs / "cog.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "finish" and events[-1]["status"] == "completed"
    usage = json.loads((logs / "usage.json").read_text())
    assert usage["exit_code"] == 0 and usage["status"] == "completed" and usage["steps"] == 5
    assert usage["n_input_tokens"] == 812 + 1004 + 1391 + 1602 + 1790 and usage["n_output_tokens"] == 31 + 24 + 88 + 19 + 42
    trajectory = json.loads((logs / "trajectory.json").read_text())
    assert trajectory["schema_version"] == "ATIF-v1.4" and trajectory["session_id"] == usage["thread_id"]
    assert trajectory["steps"][0] == {**trajectory["steps"][0], "source": "user", "message": "Fix the failing test"}
    assert trajectory["final_metrics"]["total_prompt_tokens"] == usage["n_input_tokens"]


def test_a_harbor_model_name_becomes_cogs_and_a_missing_key_is_read_back_as_exit_2(tmp_path: Path) -> None:
    folder = task_dir(tmp_path, git=False)  # a task folder that is no repository
    logs = tmp_path / "logs"
    done = run_task(tmp_path, folder, "--model", "openai/gpt-4o", "--logs", str(logs), "--", "-rf / ; echo hi")
    assert done.returncode == 2
    assert "openai:gpt-4o needs an API key: set OPENAI_API_KEY" in (logs / "cog.stderr").read_text()
    usage = json.loads((logs / "usage.json").read_text())
    assert usage["exit_code"] == 2 and usage["n_input_tokens"] == 0 and usage["status"] == "error"
    assert (logs / "instruction.txt").read_text() == "-rf / ; echo hi"
    bad = run_task(tmp_path, folder, "--frobnicate")
    assert bad.returncode == 2 and "unknown option --frobnicate" in bad.stderr


def test_the_agent_class_builds_one_quoted_command_and_reads_the_usage_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a stand-in for Harbor's installed-agent interface, as its documentation describes it
    fake = tmp_path / "fake" / "harbor" / "agents" / "installed"
    fake.mkdir(parents=True)
    for folder in (fake.parent.parent, fake.parent, fake):
        (folder / "__init__.py").write_text("")
    (fake / "base.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass, field
        @dataclass
        class ExecInput:
            command: str
            cwd: str | None = None
            env: dict = field(default_factory=dict)
        class BaseInstalledAgent:
            def __init__(self, logs_dir, model_name=None, **kwargs):
                self.logs_dir, self.model_name = logs_dir, model_name
    """))
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    from integrations.harbor.cog_agent import CogAgent

    logs = tmp_path / "agent-logs"
    logs.mkdir()
    agent = CogAgent(logs_dir=logs, model_name="openai/gpt-4o", max_tokens=50000)
    assert CogAgent.name() == "cog" and agent._install_agent_template_path.is_file()
    [command] = agent.create_run_agent_commands("Fix it; don't `rm` $(anything)")
    assert command.command == "cog-harbor-run --logs /logs/agent --model openai/gpt-4o --max-tokens 50000 -- 'Fix it; don'\"'\"'t `rm` $(anything)'"
    assert command.env == {"OPENAI_API_KEY": "sk-test"}
    (logs / "usage.json").write_text(json.dumps({"n_input_tokens": 10, "n_output_tokens": 3, "n_cache_tokens": 4, "cost_usd": 0.5}))

    class Context:
        n_input_tokens = n_output_tokens = n_cache_tokens = 0
        cost_usd: Any = None

    context = Context()
    agent.populate_context_post_run(context)
    assert (context.n_input_tokens, context.n_output_tokens, context.n_cache_tokens, context.cost_usd) == (10, 3, 4, 0.5)
