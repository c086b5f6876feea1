"""`cog batch` on this machine, through the real console script: six tasks over two repositories
in worker processes (results, patches that apply, sources untouched, resume), a task file with bad
lines refused before anything starts, a worker process killed mid-task."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from batch_helpers import cassette, check_patches, git, make_repos, results, six_tasks, snapshot
from cli_helpers import cog_argv, cog_env, run_cog


@pytest.mark.slow
def test_six_tasks_over_two_repositories_with_two_workers(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    before = {name: snapshot(repo) for name, repo in repos.items()}
    tasks, expected = six_tasks(tmp_path)
    out = tmp_path / "out"

    done = run_cog(["batch", str(tasks), "--out", str(out), "--workers", "2"], tmp_path)

    assert done.returncode == 1, done.stderr  # not every task passed
    rows = results(out)
    assert {r["id"]: r["status"] for r in rows} == expected
    assert len(rows) == 6 and all(r["attempt"] == 1 for r in rows)
    by_id = {r["id"]: r for r in rows}
    assert by_id["calc-fix"]["tests"] == {"passed": 3, "failed": 0, "errors": 0, "skipped": 0}
    assert by_id["calc-fix"]["files_changed"] == [{"path": "calc/ops.py", "added": 1, "removed": 1}]
    assert by_id["calc-fix"]["steps"] == 3 and by_id["calc-fix"]["exit_code"] == 0
    assert by_id["calc-fix"]["input_tokens"] == 100 + 101 + 102 and by_id["calc-fix"]["output_tokens"] == 30
    assert by_id["calc-fails"]["tests"]["failed"] == 1 and by_id["calc-fails"]["exit_code"] == 1
    assert by_id["calc-notes"]["files_changed"] == [{"path": "docs/NOTES.md", "added": 3, "removed": 0}]
    assert "exhausted" in by_id["greet-short"]["error"]
    assert by_id["greet-dev"]["base"] == subprocess.run(["git", "-C", str(repos["greet"]), "rev-parse", "dev"],
                                                        capture_output=True, text=True).stdout.strip()
    # one line per finished task off a terminal, then the total
    for task_id, status in expected.items():
        assert f"{status:<7}  {task_id}  " in done.stdout
    assert "4 of 6 tasks passed" in done.stdout
    # every task's events: its whole run, ending with its finish
    for task_id in expected:
        events = [json.loads(line) for line in (out / "events" / f"{task_id}.jsonl").read_text().splitlines()]
        assert events[0]["type"] == "start" and events[-1]["type"] == "finish"
    check_patches(out, repos, tmp_path)
    assert "hi there!" in (out / "patches" / "greet-dev.diff").read_text()
    assert "new file mode" in (out / "patches" / "calc-notes.diff").read_text()
    assert {name: snapshot(repo) for name, repo in repos.items()} == before  # the sources, .git included, untouched

    again = run_cog(["batch", str(tasks), "--out", str(out), "--workers", "2"], tmp_path)
    assert again.returncode == 1, again.stderr
    assert "6 of 6 tasks already have a result" in again.stdout
    assert len(results(out)) == 6  # nothing ran again


def test_a_task_file_with_bad_lines_is_refused_by_line_number_before_anything_runs(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    good = {"repo": str(repos["calc"]), "instruction": "Fix it", "model": "replay:/nonexistent"}
    lines = [
        json.dumps({"id": "ok-1", **good}),
        "{not json",
        "",
        json.dumps({"id": "../escape", **good}),
        json.dumps({"id": "no-instruction", "repo": "x"}),
        json.dumps({"id": "ok-1", **good}),
        json.dumps({"id": "opt", **good, "ref": "--upload-pack=evil"}),
        json.dumps({"id": "typo", **good, "tset_command": "pytest"}),
        json.dumps(["a", "list"]),
        json.dumps({"id": "envs", **good, "env": ["OK_NAME", "BAD NAME"]}),
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"

    done = run_cog(["batch", str(tasks), "--out", str(out)], tmp_path)

    assert done.returncode == 2
    said = done.stderr
    assert "8 bad lines, nothing was run" in said
    for number in (2, 4, 5, 6, 7, 8, 9, 10):
        assert f"line {number}: " in said
    assert "line 1: " not in said and "line 3: " not in said
    assert "line 5: instruction: Field required" in said
    assert "line 6: id 'ok-1' is also the id of line 1" in said
    assert "line 8: tset_command: unknown field" in said
    assert not out.exists()  # nothing started: no output folder
    assert "Traceback" not in said


def test_a_killed_worker_fails_its_task_only_and_the_task_reruns(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    edit = cassette(tapes / "greet.jsonl", [("Editing.", [("edit_file", {"path": "hello.py", "old_text": '"hello"', "new_text": '"hey"'})]), ("Done.", [])])
    mark = tmp_path / "killed-once"
    # the setup runs as a child of the task's worker process: the first time, it kills that process
    setup = f'[ -e "{mark}" ] || {{ touch "{mark}"; kill -KILL $PPID; sleep 5; }}'
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"id": "victim", "repo": str(repos["greet"]), "instruction": "Edit", "model": edit, "setup": setup}) + "\n"
        + json.dumps({"id": "bystander", "repo": str(repos["greet"]), "instruction": "Edit", "model": edit}) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    args = ["batch", str(tasks), "--out", str(out), "--workers", "2", "--sandbox", "off"]

    first = run_cog(args, tmp_path)

    assert first.returncode == 1, first.stderr
    rows = {r["id"]: r for r in results(out)}
    assert rows["bystander"]["status"] == "passed"
    assert rows["victim"]["status"] == "error"
    assert "killed by SIGKILL" in rows["victim"]["error"] and "--rerun failed" in rows["victim"]["error"]

    resumed = run_cog(args, tmp_path)  # a plain resume leaves a failed task alone
    assert "2 of 2 tasks already have a result" in resumed.stdout and len(results(out)) == 2

    rerun = run_cog([*args, "--rerun", "failed"], tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    rows = {r["id"]: r for r in results(out)}
    assert len(results(out)) == 3
    assert rows["victim"]["status"] == "passed" and rows["victim"]["attempt"] == 2
    assert '"hey"' in (out / "patches" / "victim.diff").read_text()


def test_ctrl_c_aborts_the_running_tasks_and_leaves_the_rest_for_the_resume(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    edit = cassette(tapes / "greet.jsonl", [("Editing.", [("edit_file", {"path": "hello.py", "old_text": '"hello"', "new_text": '"hey"'})]), ("Done.", [])])
    tests = cassette(tapes / "tests.jsonl", [("Testing.", [("run_tests", {})]), ("Done.", [])])
    started = tmp_path / "started"
    # the first time, the test run hangs: Ctrl-C comes while the agent waits for it
    lines = [json.dumps({"id": "slow", "repo": str(repos["greet"]), "instruction": "Test", "model": tests,
                         "test_command": f'[ -e "{started}" ] || {{ touch "{started}"; sleep 60; }}'})]
    lines += [json.dumps({"id": f"later-{n}", "repo": str(repos["greet"]), "instruction": "Edit", "model": edit}) for n in range(2)]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["batch", str(tasks), "--out", str(out), "--workers", "1", "--sandbox", "off"]
    process = subprocess.Popen([*cog_argv(), *args], cwd=tmp_path, env=cog_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    said, err = process.communicate(timeout=60)

    assert process.returncode == 130, err
    rows = results(out)
    assert [(r["id"], r["status"], r["run_status"], r["exit_code"]) for r in rows] == [("slow", "aborted", "aborted", 130)]
    assert "2 left for the resume" in said
    # the stopped run ended as cog edit's does: its finish says aborted
    events = [json.loads(line) for line in (out / "events" / "slow.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "finish" and events[-1]["status"] == "aborted"

    resumed = run_cog(args, tmp_path, timeout=120)  # the aborted task and the two never started
    assert resumed.returncode == 0, resumed.stderr
    assert [(r["id"], r["status"], r["attempt"]) for r in results(out)[1:]] == [
        ("slow", "passed", 2), ("later-0", "passed", 1), ("later-1", "passed", 1)]


def test_clone_ref_and_setup_failures_are_the_tasks_errors_and_a_url_is_cloned(tmp_path: Path) -> None:
    repos = make_repos(tmp_path / "repos")
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    edit = cassette(tapes / "greet.jsonl", [("Editing.", [("edit_file", {"path": "hello.py", "old_text": '"hello"', "new_text": '"hey"'})]), ("Done.", [])])
    greet = str(repos["greet"])
    lines = [
        {"id": "no-repo", "repo": "repos/nothing-here", "instruction": "x", "model": edit},
        {"id": "no-ref", "repo": greet, "ref": "no-such-branch", "instruction": "x", "model": edit},
        {"id": "bad-setup", "repo": greet, "instruction": "x", "model": edit, "setup": "echo boom; exit 3"},
        {"id": "no-model", "repo": greet, "instruction": "x", "model": "nosuchprovider:x"},
        # what setup makes (a virtualenv, a build) is not the task's change: the patch is the run's files
        {"id": "by-url", "repo": f"file://{greet}", "ref": "dev", "instruction": "x", "model": edit.replace("greet", "dev"),
         "setup": "mkdir -p build && echo made > build/out.txt && echo made > setup-made.txt"},
    ]
    cassette(tapes / "dev.jsonl", [("Editing.", [("edit_file", {"path": "hello.py", "old_text": '"hi there"', "new_text": '"yo"'})]), ("Done.", [])])
    warns = tmp_path / "warns"  # a workspace whose settings cog warns about
    warns.mkdir()
    (warns / "hello.py").write_text('GREETING = "hello"\n', encoding="utf-8")
    (warns / "cog.toml").write_text('sandbox = "off"\n', encoding="utf-8")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "first"]):
        git(warns, *args)
    lines.append({"id": "warned", "repo": str(warns), "instruction": "x", "model": edit})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines), encoding="utf-8")
    out = tmp_path / "out"

    done = run_cog(["batch", str(tasks), "--out", str(out), "--workers", "2"], tmp_path)

    assert done.returncode == 1, done.stderr
    rows = {r["id"]: r for r in results(out)}
    assert {i: (r["status"], r["exit_code"]) for i, r in rows.items()} == {
        "no-repo": ("error", 1), "no-ref": ("error", 1), "bad-setup": ("error", 1), "no-model": ("error", 2), "by-url": ("passed", 0),
        "warned": ("passed", 0)}
    # a worker's warnings are kept in its result and said once on stderr
    assert any('sandbox = "off" in cog.toml is ignored' in note for note in rows["warned"]["notes"])
    assert done.stderr.count('sandbox = "off" in cog.toml is ignored') == 1
    assert "does not exist" in rows["no-repo"]["error"] and rows["no-repo"]["base"] is None
    assert "no-such-branch" in rows["no-ref"]["error"]
    assert rows["bad-setup"]["error"].startswith("the setup command exited with 3") and "boom" in rows["bad-setup"]["error"]
    assert "nosuchprovider" in rows["no-model"]["error"]
    patch = (out / "patches" / "by-url.diff").read_text()
    assert '"yo"' in patch and "setup-made" not in patch and "build/out.txt" not in patch
    assert [line for line in patch.splitlines() if line.startswith("diff --git")] == ["diff --git a/hello.py b/hello.py"]
    assert not (out / "patches" / "no-repo.diff").exists()
    assert "Traceback" not in done.stdout + done.stderr


def test_on_a_terminal_the_progress_line_is_redrawn_and_cleared(tmp_path: Path) -> None:
    import pty

    from cli_helpers import read_pty

    repos = make_repos(tmp_path / "repos")
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    edit = cassette(tapes / "greet.jsonl", [("Editing.", [("edit_file", {"path": "hello.py", "old_text": '"hello"', "new_text": '"hey"'})]), ("Done.", [])])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{n}", "repo": str(repos["greet"]), "instruction": "Edit", "model": edit}) + "\n" for n in range(2)),
                     encoding="utf-8")
    pid, fd = pty.fork()
    if pid == 0:  # the child: cog on the terminal
        os.chdir(tmp_path)
        os.execve(cog_argv()[0], [*cog_argv(), "batch", str(tasks), "--out", str(tmp_path / "out"), "--workers", "2"], cog_env())
    shown = read_pty(fd).decode()
    _, status = os.waitpid(pid, 0)
    os.close(fd)

    assert os.waitstatus_to_exitcode(status) == 0, shown
    assert "0/2 done · 1 running · 0 not passed · 0 tokens" in shown
    assert "2/2 done · 0 running · 0 not passed · 442 tokens" in shown
    assert "\r\x1b[Kpassed   t" in shown  # a finished task's line replaces the progress line
    assert shown.endswith("\r\x1b[K")  # and the progress line is gone at the end
