"""`cog batch report` (table and JSON), the task file's checks, and what `cog batch` imports."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cog_env, run_cog

from cogcli.batch.output_folder import Layout, ResultsWriter, TaskResult, read_results, to_run
from cogcli.batch.tasks import Task, TaskFileError, parse_tasks


def _results(out: Path) -> None:
    Layout(out).make()
    with ResultsWriter(out / "results.jsonl") as writer:
        writer.write(TaskResult(id="a", status="error", exit_code=1, error="the model failed", duration_s=1.0))
        writer.write(TaskResult(id="a", status="passed", exit_code=0, steps=4, input_tokens=1000, output_tokens=50,
                                cost_usd=0.0125, duration_s=12.5, tests={"passed": 3, "failed": 0, "errors": 0, "skipped": 0}, attempt=2))
        writer.write(TaskResult(id="b", status="failed", exit_code=1, steps=9, input_tokens=2000, output_tokens=80,
                                duration_s=30.0, tests={"passed": 2, "failed": 1, "errors": 0, "skipped": 0}, error="1 test failed"))
        writer.write(TaskResult(id="c", status="aborted", exit_code=130, duration_s=3.0, error="stopped by SIGINT\x1b[31m"))
    with (out / "results.jsonl").open("a") as handle:
        handle.write('{"id": "d", "status": "pas')  # a line cut by a crash mid-write: skipped


def test_report_table_and_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _results(out)

    table = run_cog(["batch", "report", str(out)], tmp_path)
    data = run_cog(["batch", "report", str(out), "--json"], tmp_path)

    assert table.returncode == 0 and data.returncode == 0, table.stderr + data.stderr
    report = json.loads(data.stdout)
    assert report["tasks"] == 3  # the last result of each id; the cut line left out
    assert report["by_status"] == {"passed": 1, "failed": 1, "error": 0, "aborted": 1}
    assert report["tests"] == {"passed": 5, "failed": 1, "errors": 0, "skipped": 0}
    assert (report["tasks_with_tests"], report["tasks_tests_passing"]) == (2, 1)
    assert (report["input_tokens"], report["output_tokens"], report["steps"]) == (3000, 130, 13)
    assert report["cost_usd"] == 0.0125 and report["cost_unknown_tasks"] == 2
    assert [s["id"] for s in report["slowest"]] == ["b", "a", "c"]
    lines = table.stdout.splitlines()
    assert "  passed       1" in lines and "  failed       1" in lines and "  error        0" in lines and "  aborted      1" in lines
    assert "  tests     1 of 2 tasks passing (5 passed, 1 failed, 0 errors)" in lines
    assert "  tokens    3,000 in, 130 out · 13 steps" in lines
    assert "  cost      $0.0125 (+2 of unknown price)" in lines
    assert "        30.0 s  failed   b" in lines
    assert "\x1b" not in table.stdout and "stopped by SIGINT\\x1b[31m" in table.stdout  # hostile text escaped


def test_report_of_a_folder_without_results_says_what_to_name(tmp_path: Path) -> None:
    done = run_cog(["batch", "report", str(tmp_path)], tmp_path)
    assert done.returncode == 2 and "holds no results.jsonl" in done.stderr


@pytest.mark.parametrize("bad", ["..", ".hidden", "-rf", "a/b", "a..b", "a b", "é", "x\x1b[2J", "", "a" * 129, "a\\b"])
def test_an_id_that_is_no_safe_file_name_is_refused(bad: str) -> None:
    line = json.dumps({"id": bad, "repo": "r", "instruction": "i"})
    with pytest.raises(TaskFileError) as caught:
        parse_tasks(line)
    assert "line 1: id: " in caught.value.message and "\x1b" not in caught.value.message


def test_task_fields_urls_and_relative_paths(tmp_path: Path) -> None:
    tasks = parse_tasks(
        '{"id": "a.1_b-2", "repo": "sub/repo", "instruction": "x", "env": ["DATABASE_URL"]}\n\n'
        '{"id": "u", "repo": "https://example.com/r.git", "instruction": "x", "ref": "v1.2"}\n'
        '{"id": "s", "repo": "git@example.com:team/r.git", "instruction": "x"}\n'
    )
    assert [t.id for t in tasks] == ["a.1_b-2", "u", "s"]
    assert [t.is_url for t in tasks] == [False, True, True]
    assert tasks[0].source(tmp_path) == str(tmp_path / "sub" / "repo")
    assert tasks[1].source(tmp_path) == "https://example.com/r.git"
    with pytest.raises(TaskFileError, match="holds no tasks"):
        parse_tasks("\n\n")
    with pytest.raises(TaskFileError, match="line 1: repo: "):
        parse_tasks('{"id": "x", "repo": "--upload-pack=touch /tmp/pwned", "instruction": "x"}')


def test_what_a_resume_runs() -> None:
    done = {
        "p": TaskResult(id="p", status="passed", exit_code=0),
        "f": TaskResult(id="f", status="failed", exit_code=1),
        "e": TaskResult(id="e", status="error", exit_code=1),
        "a": TaskResult(id="a", status="aborted", exit_code=130),
    }
    ids = ["p", "f", "e", "a", "new"]
    assert to_run(ids, done, rerun_failed=False) == ["a", "new"]
    assert to_run(ids, done, rerun_failed=True) == ["f", "e", "a", "new"]


def test_results_read_back_the_last_line_of_each_id(tmp_path: Path) -> None:
    _results(tmp_path)
    problems: list[int] = []
    found = read_results(tmp_path / "results.jsonl", lambda number, why: problems.append(number))
    assert {k: v.status for k, v in found.items()} == {"a": "passed", "b": "failed", "c": "aborted"}
    assert problems == [5]


def test_help_says_batch_runs_are_non_interactive_and_imports_neither_ray_nor_git() -> None:
    code = (
        "import sys\n"
        "from cogcli.cli import app\n"
        "for args in (['--help'], ['batch', '--help'], ['batch', 'run', '--help'], ['batch', 'report', '--help']):\n"
        "    try:\n"
        "        app(args, prog_name='cog')\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), exc.code\n"
        "watched = ('ray', 'git', 'cogcli.batch', 'cogcli.session', 'workspace_tools')\n"
        "print('LOADED', sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.') for w in watched)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "LOADED []"
    text = " ".join(out.stdout.split())
    assert "Batch runs are non-interactive" in text and "cog trust" in text and "batch Run many tasks" in text


def test_the_task_model_forbids_unknown_fields() -> None:
    with pytest.raises(Exception):
        Task.model_validate({"id": "x", "repo": "r", "instruction": "i", "setpu": "make"})


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_progress_line_stays_below_the_finished_tasks() -> None:
    from cogcli.batch.driver import Progress

    out, bar = io.StringIO(), _Terminal()
    progress = Progress(3, out, bar)
    task = Task(id="t1", repo="r", instruction="i")
    progress.started(task)
    progress.started(task)
    progress.finished(TaskResult(id="t1", status="passed", exit_code=0, steps=2, input_tokens=900, output_tokens=100, cost_usd=0.5, duration_s=2.0))
    progress.close()
    assert out.getvalue() == "passed   t1  2 steps · 1,000 tokens · $0.5000 · 2.0 s\n"
    drawn = bar.getvalue().split("\r\x1b[K")
    assert drawn[-2] == "1/3 done · 1 running · 0 not passed · 1,000 tokens · $0.5000"
    assert drawn[-1] == ""  # cleared at the end
    plain = io.StringIO()
    quiet = Progress(1, io.StringIO(), plain)
    quiet.started(task)
    assert plain.getvalue() == ""  # off a terminal: no progress line


def test_a_second_batch_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    import fcntl

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t", "repo": str(tmp_path), "instruction": "x"}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a running batch holds it
        done = run_cog(["batch", str(tasks), "--out", str(out)], tmp_path)
    assert done.returncode == 2 and "another cog batch is writing to" in done.stderr
    assert not (out / "results.jsonl").exists()


def test_a_ray_address_where_nothing_answers_is_said_at_once(tmp_path: Path) -> None:
    from model_servers import unused_port

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t", "repo": str(tmp_path), "instruction": "x"}) + "\n", encoding="utf-8")
    address = f"127.0.0.1:{unused_port()}"
    done = run_cog(["batch", str(tasks), "--out", str(tmp_path / "out"), "--ray", address], tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"nothing answers at the Ray address {address}" in done.stderr and "Traceback" not in done.stderr
