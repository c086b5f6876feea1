"""The composite GitHub Action (action.yml), run offline the way a runner runs it: each step's
``if:`` evaluated, its ``${{ … }}`` expressions put in, its ``run:`` script written to a file and
run by ``bash --noprofile --norc -eo pipefail`` in its working directory, with GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY, GITHUB_ACTION_PATH and RUNNER_TEMP; the replayed cassette of fixtures/ as the
model. The install step needs the network, so the runs here use ``install: false`` and the cog of
this checkout's virtualenv."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import CASSETTE, ROOT, cog_env

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())


def read_outputs(path: Path) -> dict[str, str]:
    """A GITHUB_OUTPUT file as the runner reads it: ``key=value`` lines and ``key<<DELIM`` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[key] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        key, _, value = line.partition("=")
        values[key] = value
        i += 1
    return values


class Runner:
    """Runs action.yml's steps for one job."""

    def __init__(self, tmp: Path, inputs: dict[str, str], workspace: Path) -> None:
        self.tmp, self.workspace = tmp, workspace
        self.inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()} | inputs
        self.steps: dict[str, dict[str, str]] = {}
        self.files = {name: tmp / name for name in ("output", "summary", "path", "env")}
        for f in self.files.values():
            f.write_text("")
        self.log: list[tuple[str, int, str]] = []
        self.failed = False

    def value(self, expr: str) -> Any:
        expr = expr.strip()
        if expr.startswith("inputs."):
            return self.inputs[expr[len("inputs."):]]
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
            return self.steps.get(m[1], {}).get(m[2], "")
        raise AssertionError(f"an expression the test runner does not know: {expr}")

    def substitute(self, text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(self.value(m[1])), text)

    def condition(self, cond: str | None) -> bool:
        if cond is None:
            return not self.failed  # success()
        parts = [p.strip() for p in cond.split("&&")]
        ok = True
        for part in parts:
            if part == "always()":
                continue
            left, op, right = re.fullmatch(r"(\S+) (==|!=) '(.*)'", part).groups()  # type: ignore[union-attr]
            equal = self.value(left) == right
            ok = ok and (equal if op == "==" else not equal)
        return ok and ("always()" in parts or not self.failed)

    def run(self) -> None:
        for step in ACTION["runs"]["steps"]:
            if not self.condition(step.get("if")):
                self.log.append((step["name"], -1, "skipped"))
                continue
            if "uses" in step:
                self.uses(step)
                continue
            assert step["shell"] == "bash"
            script = self.tmp / "step.sh"
            script.write_text(self.substitute(step["run"]))
            env = cog_env({
                **{k: self.substitute(str(v)) for k, v in step.get("env", {}).items()},
                "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(self.workspace),
                "GITHUB_ACTION_PATH": str(ROOT), "RUNNER_TEMP": str(self.tmp / "runner-temp"),
                "GITHUB_OUTPUT": str(self.files["output"]), "GITHUB_STEP_SUMMARY": str(self.files["summary"]),
                "GITHUB_PATH": str(self.files["path"]), "GITHUB_ENV": str(self.files["env"]),
                "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            })
            (self.tmp / "runner-temp").mkdir(exist_ok=True)
            self.files["output"].write_text("")
            cwd = self.workspace / self.substitute(step.get("working-directory", "."))
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=300)
            if "id" in step:
                self.steps[step["id"]] = read_outputs(self.files["output"])
            self.log.append((step["name"], done.returncode, done.stdout + done.stderr))
            if done.returncode != 0:
                self.failed = True

    def uses(self, step: dict[str, Any]) -> None:
        assert step["uses"] == "actions/upload-artifact@v4"
        paths = [p.strip() for p in self.substitute(step["with"]["path"]).splitlines() if p.strip()]
        missing = [p for p in paths if not Path(p).is_file()]
        self.log.append((step["name"], 1 if missing else 0, " ".join(paths)))
        self.uploaded = {Path(p).name: Path(p).read_text() for p in paths if Path(p).is_file()}

    def by_name(self, name: str) -> tuple[int, str]:
        return next((code, out) for step, code, out in self.log if step == name)


def calc(tmp: Path) -> Path:
    repo = tmp / "calc"
    shutil.copytree(ROOT / "fixtures" / "calc", repo)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


@pytest.mark.slow
def test_the_action_fixes_the_repository_annotates_summarizes_and_uploads_the_patch(tmp_path: Path) -> None:
    repo = calc(tmp_path)
    runner = Runner(tmp_path, {"instruction": "-- Fix the failing test; $(touch pwned)", "model": f"replay:{CASSETTE}", "install": "false"}, tmp_path)
    runner.inputs["working-directory"] = "calc"
    runner.run()
    assert runner.by_name("Install cog")[0] == -1  # skipped
    code, log = runner.by_name("Run cog edit")
    assert code == 0, log
    outputs = runner.steps["run"]
    assert outputs["exit-code"] == "0" and outputs["status"] == "completed" and outputs["changed"] == "true"
    assert outputs["tokens"] == str(812 + 31 + 1004 + 24 + 1391 + 88 + 1602 + 19 + 1790 + 42)
    assert "::group::" in log and "Done · 5 steps" in log
    summary = runner.files["summary"].read_text()
    assert "Done · 5 steps · 1 file changed (+1 -1) · 3 tests passed" in summary and "`calc/ops.py`" in summary
    # the artifact: the patch (which applies to a fresh clone) and the JSON lines
    assert runner.by_name("Upload the patch and the events")[0] == 0
    patch = runner.uploaded["cog.patch"]
    assert "+    return a + b" in patch and ".cog/" not in patch
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(repo), str(fresh)], check=True)
    assert subprocess.run(["git", "-C", str(fresh), "apply", "-"], input=patch, text=True).returncode == 0
    assert json.loads(runner.uploaded["events.jsonl"].splitlines()[-1])["type"] == "finish"
    assert runner.by_name("Fail the job when cog failed")[0] == 0
    # the instruction was data: the file cog read, never a shell word nor an option
    assert not (repo / "pwned").exists() and not (tmp_path / "pwned").exists()
    assert (tmp_path / "runner-temp" / "cog-run" / "instruction.txt").read_text() == "-- Fix the failing test; $(touch pwned)"
    # the repository's own index is untouched by the patch step
    assert subprocess.run(["git", "-C", str(repo), "diff", "--cached", "--quiet"]).returncode == 0


@pytest.mark.slow
def test_a_spent_budget_fails_the_job_after_uploading_and_an_answer_is_an_output(tmp_path: Path) -> None:
    calc(tmp_path)
    runner = Runner(tmp_path, {"instruction": "Fix add", "model": f"replay:{CASSETTE}", "install": "false", "max-tokens": "2500",
                               "working-directory": "calc"}, tmp_path)
    runner.run()
    outputs = runner.steps["run"]
    assert outputs["exit-code"] == "1" and outputs["status"] == "budget_exceeded"
    assert "BUDGET_EXCEEDED" in runner.files["summary"].read_text()
    assert runner.by_name("Upload the patch and the events")[0] == 0  # uploaded although cog failed
    code, log = runner.by_name("Fail the job when cog failed")
    assert code == 1 and "::error title=cog::cog exited 1" in log

    # an answer held to a schema comes back as the `output` output (a multi-line value's delimiter)
    tape = tmp_path / "answer.jsonl"
    tape.write_text(CASSETTE.read_text().splitlines()[0] + "\n" + json.dumps(
        {"type": "turn", "text": '{"ok": true, "note": "x\\ncog_output_\\n"}', "toolCalls": [], "usage": {"inputTokens": 10, "outputTokens": 5}}) + "\n")
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object", "required": ["ok"]}')
    shutil.rmtree(tmp_path / "calc")
    calc(tmp_path)
    runner = Runner(tmp_path, {"instruction": "Is it ok?", "model": f"replay:{tape}", "install": "false", "output-schema": str(schema),
                               "working-directory": "calc"}, tmp_path)
    runner.run()
    outputs = runner.steps["run"]
    assert outputs["exit-code"] == "0" and outputs["changed"] == "false"
    assert json.loads(outputs["output"]) == {"ok": True, "note": "x\ncog_output_\n"}


def test_without_an_instruction_or_cog_the_step_says_so_and_fails(tmp_path: Path) -> None:
    calc(tmp_path)
    runner = Runner(tmp_path, {"instruction": "", "install": "false", "working-directory": "calc"}, tmp_path)
    runner.run()
    code, log = runner.by_name("Run cog edit")
    assert code == 2 and "::error title=cog::the instruction input is empty" in log
    assert runner.by_name("Fail the job when cog failed")[0] == -1  # the job failed already
