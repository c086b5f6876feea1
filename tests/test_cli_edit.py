"""`cog edit` end to end: the real console script on a fixture repo, driven by the replay model
and by loopback HTTP model servers; stdout asserted exactly, exit codes for every outcome."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CASSETTE, REPLAY, cog_argv, cog_env, cog_python, json_lines, run_cog
from render_helpers import github_lines
from model_servers import AnthropicServer, Fail, OpenAIServer, replies_from_cassette

from cogcli.wire.events import FinishEvent, parse_event
from workspace_tools.sandbox.interpreter import ProjectPython

FIX = "Fix the failing test"

#: the line under a test run's row: fixtures/calc has no environment of its own, so cog's Python ran the tests
ENV_NOTE = "    " + ProjectPython(cog_python(), "cog").fallback_note()
#: what `cog edit` prints for the calc_fix cassette on a fresh copy of fixtures/calc (not a TTY)
LIVE = "\n".join(
    [
        "I'll look at the code first.",
        "Read file  calc/ops.py",
        "`add` returns `a - b`. Let me run the tests to confirm.",
        "  … Run tests  tests/test_ops.py::test_add failed",
        "  … Run tests  tests/test_ops.py::test_sub passed",
        "  … Run tests  tests/test_ops.py::test_mul passed",
        "Run tests  all · 1 failed, 2 passed",
        ENV_NOTE,
        "    FAILED tests/test_ops.py::test_add at tests/test_ops.py:5 — assert -1 == 5",
        "test_add fails: add(2, 3) returns -1. Fixing the operator in add (sub keeps its own `a - b`).",
        "Edit file  calc/ops.py",
        "    diff --git a/calc/ops.py b/calc/ops.py",
        "    --- a/calc/ops.py",
        "    +++ b/calc/ops.py",
        "    @@ -1,6 +1,6 @@",
        "     def add(a: int, b: int) -> int:",
        '         """Return the sum of a and b."""',
        "    -    return a - b",
        "    +    return a + b",
        "     ",
        "     ",
        "     def sub(a: int, b: int) -> int:",
        "Re-running the tests.",
        "  … Run tests  tests/test_ops.py::test_add passed",
        "  … Run tests  tests/test_ops.py::test_sub passed",
        "  … Run tests  tests/test_ops.py::test_mul passed",
        "Run tests  all · 3 passed",
        "Fixed: `add` in calc/ops.py subtracted (`return a - b`); it now returns `a + b`. All 3 tests in tests/test_ops.py pass.",
        "",
        "Done · 5 steps · 1 file changed (+1 -1) · 3 tests passed · 6,803 tokens",
        "",
    ]
)


def write_cassette(path: Path, turns: list[dict[str, Any]]) -> Path:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}]
    lines += [{"type": "turn", **turn} for turn in turns]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def validate_stream(stdout: str) -> list[dict[str, Any]]:
    """Every line is one event valid against `cog schema events`; seq counts 0, 1, 2, …; one finish, last."""
    events = json_lines(stdout)
    for line in stdout.splitlines():
        parse_event(line)
    try:
        import jsonschema
    except ImportError:  # not a dependency: the pydantic check above is the contract
        pass
    else:
        out = subprocess.run([*cog_argv(), "schema", "events"], capture_output=True, text=True, env=cog_env(), timeout=60)
        validator = jsonschema.Draft202012Validator(json.loads(out.stdout))
        for event in events:
            validator.validate(event)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("finish") == 1 and events[-1]["type"] == "finish"
    return events


def test_replay_run_prints_rows_details_and_summary_and_exits_0(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "--model", REPLAY, FIX], repo)
    assert out.returncode == 0, out.stderr
    assert out.stdout == LIVE
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()
    assert "Traceback" not in out.stderr


def test_json_lines_validate_and_piped_into_render_give_the_same_rows_as_live(make_repo) -> None:
    repo = make_repo("calc")
    env = cog_env()
    producer = subprocess.Popen([*cog_argv(), "edit", "--json", "--model", REPLAY, FIX], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tee = []
    consumer = subprocess.Popen([*cog_argv(), "render"], cwd=repo, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert producer.stdout is not None and consumer.stdin is not None
    for line in producer.stdout:  # what a pipe reader sees, line by line
        tee.append(line)
        consumer.stdin.write(line)
    consumer.stdin.close()
    assert consumer.stdout is not None and consumer.stderr is not None
    rendered, render_err = consumer.stdout.read(), consumer.stderr.read()
    consumer.wait(timeout=120)
    assert producer.wait(timeout=120) == 0, producer.stderr.read() if producer.stderr else ""
    assert consumer.returncode == 0 and render_err == b""
    assert rendered.decode("utf-8") == LIVE

    events = validate_stream(b"".join(tee).decode("utf-8"))
    finish = events[-1]
    assert finish["status"] == "completed" and finish["steps"] == 5
    assert finish["filesChanged"] == [{"path": "calc/ops.py", "added": 1, "removed": 1}]
    assert finish["tests"]["passed"] == 3 and finish["tests"]["failed"] == 0
    assert events[0]["type"] == "start" and events[0]["schemaVersion"] == 1
    edit = next(e for e in events if e["type"] == "tool-result" and e["toolName"] == "edit_file")
    assert "+    return a + b" in edit["details"]["diff"]  # the diff travels in the event


def test_thread_show_redraws_the_live_rows_from_memory(make_repo) -> None:
    repo = make_repo("calc")
    live = run_cog(["edit", "--json", "--model", REPLAY, FIX], repo)
    thread_id = json_lines(live.stdout)[-1]["threadId"]
    listed = run_cog(["thread", "list"], repo)
    assert listed.returncode == 0
    assert listed.stdout.startswith(thread_id + "  ") and listed.stdout.rstrip().endswith("completed  Fix the failing test")
    shown = run_cog(["thread", "show", thread_id], repo)
    assert shown.returncode == 0, shown.stderr
    # each run is headed by its number and message id (what cog undo --to takes); progress updates
    # are for people watching and never stored; every other row is the same
    heading, rows = shown.stdout.split("\n", 1)
    message_id = json_lines(live.stdout)[0]["messageId"]
    assert heading == f"── run 1 · {message_id} ──"
    assert rows == "".join(line for line in LIVE.splitlines(keepends=True) if not line.startswith("  … "))
    as_json = run_cog(["thread", "show", thread_id[:12], "--json"], repo)  # a unique prefix will do
    events = validate_stream(as_json.stdout)
    assert events[-1]["threadId"] == thread_id
    missing = run_cog(["thread", "show", "thr_nope"], repo)
    assert missing.returncode == 2 and "no thread 'thr_nope'" in missing.stderr


def test_continuing_a_thread(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    first = json_lines(run_cog(["edit", "--json", "--model", REPLAY, FIX], repo).stdout)[-1]["threadId"]
    cassette = write_cassette(tmp_path / "more.jsonl", [{"text": "Nothing left to do."}])
    again = run_cog(["edit", "--json", "--thread", first, "--model", f"replay:{cassette}", "Anything else?"], repo)
    assert again.returncode == 0, again.stderr
    assert json_lines(again.stdout)[-1]["threadId"] == first
    unknown = run_cog(["edit", "--json", "--thread", "thr_nope", "--model", f"replay:{cassette}", "Anything else?"], repo)
    # issue 13: --json always says what went wrong on stdout too, as an error and a finish line
    assert unknown.returncode == 2 and [e["type"] for e in json_lines(unknown.stdout)] == ["error", "finish"]
    assert "no thread 'thr_nope'" in unknown.stderr and "Traceback" not in unknown.stderr


@pytest.mark.parametrize("server_class", [OpenAIServer, AnthropicServer])
def test_over_loopback_http_the_same_run_prints_the_same_rows(make_repo, server_class) -> None:
    repo = make_repo("calc")
    with server_class(replies_from_cassette(CASSETTE)) as server:
        # models cog has no price for: the rows match the replay's; the last line says the cost is
        # unknown (issue 43: a replay says only its tokens, a real model without a price says so)
        if server_class is OpenAIServer:
            env, model = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}, "openai:calc-fixer"
        else:
            env, model = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url}, "anthropic:claude-calc-fixer"
        out = run_cog(["edit", "--model", model, FIX], repo, env=env)
    assert out.returncode == 0, out.stderr
    *rows, last = out.stdout.splitlines()
    assert rows == LIVE.splitlines()[:-1]
    replayed_last = LIVE.splitlines()[-1]
    assert last.startswith(replayed_last.rpartition(" · ")[0] + " · unknown cost for "), last
    assert last.endswith(" = " + replayed_last.rpartition(" · ")[2]), last
    assert len(server.requests) == 5


def test_a_model_server_error_ends_the_run_with_exit_1(make_repo) -> None:
    repo = make_repo("calc")
    with OpenAIServer([Fail(400, "bad request: no such model")]) as server:
        out = run_cog(["edit", "--model", "openai:nope", FIX], repo, env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url})
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("✗ MODEL_STREAM_ERROR: openai:nope") and "no such model" in lines[0]
    assert lines[-1] == "Failed · 1 step"


def test_tests_still_failing_at_the_end_exit_1(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    cassette = write_cassette(
        tmp_path / "giveup.jsonl",
        [
            {"toolCalls": [{"id": "c1", "name": "run_tests", "arguments": {}}], "usage": {"inputTokens": 10, "outputTokens": 5}},
            {"text": "I could not fix it.", "usage": {"inputTokens": 20, "outputTokens": 5}},
        ],
    )
    out = run_cog(["edit", "--model", f"replay:{cassette}", FIX], repo)
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines()[-3:] == ["I could not fix it.", "", "Failed · 2 steps · 1 test failed, 2 passed · 40 tokens"]


def test_the_step_limit_exits_1(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "--max-steps", "2", "--model", REPLAY, FIX], repo)
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines()[-1].startswith("Failed · stopped at the step limit · 2 steps · 1 test failed, 2 passed")


def test_max_steps_from_config_and_env(make_repo) -> None:
    repo = make_repo("calc")
    pyproject = repo / "pyproject.toml"
    shutil.copy(REPLAY.removeprefix("replay:"), repo / "run.cassette.jsonl")  # a workspace replays only its own
    pyproject.write_text(pyproject.read_text() + '\n[tool.cog]\nmodel = "replay:run.cassette.jsonl"\nmax_steps = 1\n')
    out = run_cog(["edit", "--json", FIX], repo)  # the model and the limit both from [tool.cog]
    assert out.returncode == 1, out.stderr
    assert json_lines(out.stdout)[-1]["status"] == "max_steps" and json_lines(out.stdout)[-1]["steps"] == 1


def _slow_repo(make_repo) -> Path:
    repo = make_repo("calc", git=False)
    (repo / "tests" / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(120)\n")
    from conftest import init_git_repo

    return init_git_repo(repo)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_ends_with_one_finish_aborted_and_its_exit_code(make_repo, tmp_path: Path, signum: int, code: int) -> None:
    repo = _slow_repo(make_repo)
    cassette = write_cassette(tmp_path / "slow.jsonl", [{"toolCalls": [{"id": "c1", "name": "run_tests", "arguments": {}}]}, {"text": "never reached"}])
    proc = subprocess.Popen(
        [*cog_argv(), "edit", "--json", "--model", f"replay:{cassette}", FIX],
        cwd=repo,
        env=cog_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # wait until the tests are running: three finished, test_slow sleeping
        seen.append(line)
        if sum(json.loads(l)["type"] == "tool-update" for l in seen) == 3:
            break
    else:
        pytest.fail(f"the run ended before the tests ran: {proc.stderr.read() if proc.stderr else ''}")
    proc.send_signal(signum)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    events = validate_stream("".join(seen) + rest)
    finish = FinishEvent.model_validate(events[-1])
    assert finish.status == "aborted"
    result = next(e for e in events if e["type"] == "tool-result")
    assert result["errorCode"] == "ABORTED"
    assert "Traceback" not in err
    listed = run_cog(["thread", "list", "--json"], repo)
    assert [(t["id"], t["status"]) for t in json.loads(listed.stdout)] == [(finish.thread_id, "aborted")]


def test_record_then_replay_gives_the_same_run(make_repo, tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.jsonl"
    out = run_cog(["edit", "--model", REPLAY, "--record", str(recorded), FIX], make_repo("calc", dest="one"))
    assert out.returncode == 0 and out.stdout == LIVE
    again = run_cog(["edit", "--model", f"replay:{recorded}", FIX], make_repo("calc", dest="two"))
    assert again.returncode == 0 and again.stdout == LIVE


def test_commit_commits_only_the_files_the_run_changed(make_repo) -> None:
    import git

    repo = make_repo("calc")
    out = run_cog(["edit", "--commit", "--model", REPLAY, FIX], repo)
    assert out.returncode == 0, out.stderr
    assert out.stdout == LIVE
    r = git.Repo(repo)
    head = r.head.commit
    assert head.message.splitlines()[0] == FIX
    assert f"Made with cog edit ({REPLAY}, thread thr_" in head.message
    assert sorted(head.stats.files) == ["calc/ops.py"]
    assert not r.is_dirty(untracked_files=False)
    assert f"cog: committed {head.hexsha[:10]} {FIX}" in out.stderr


def test_commit_refuses_a_dirty_tree_unless_allowed(make_repo) -> None:
    import git

    repo = make_repo("calc")
    notes = repo / "NOTES.md"
    notes.write_text("my own work in progress\n")
    before = git.Repo(repo).head.commit.hexsha
    refused = run_cog(["edit", "--commit", "--model", REPLAY, FIX], repo)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert "uncommitted changes (NOTES.md)" in refused.stderr and "--allow-dirty" in refused.stderr
    assert "return a - b" in (repo / "calc" / "ops.py").read_text()  # nothing ran
    allowed = run_cog(["edit", "--commit", "--allow-dirty", "--model", REPLAY, FIX], repo)
    assert allowed.returncode == 0, allowed.stderr
    r = git.Repo(repo)
    assert r.head.commit.parents[0].hexsha == before
    assert sorted(r.head.commit.stats.files) == ["calc/ops.py"]  # not NOTES.md
    assert "NOTES.md" in r.untracked_files


def test_commit_does_not_commit_a_failed_task(make_repo) -> None:
    import git

    repo = make_repo("calc")
    before = git.Repo(repo).head.commit.hexsha
    out = run_cog(["edit", "--commit", "--max-steps", "3", "--model", REPLAY, FIX], repo)
    assert out.returncode == 1
    assert "not committing" in out.stderr
    assert git.Repo(repo).head.commit.hexsha == before


def test_github_format_live(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    summary = tmp_path / "summary.md"
    out = run_cog(["edit", "--format", "github", "--max-steps", "2", "--model", REPLAY, FIX], repo, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 1
    lines = github_lines(out.stdout)  # the model's and tools' text comes between ::stop-commands::TOKEN and ::TOKEN::
    assert lines[:3] == ["I'll look at the code first.", "::group::Read file  calc/ops.py", "::endgroup::"]
    assert "::group::Run tests  all" in lines  # the call's own detail, from its arguments
    assert "::error file=tests/test_ops.py,line=5,title=tests/test_ops.py%3A%3Atest_add::assert -1 == 5" in lines
    assert any(l.startswith("::error title=cog::cog edit: Failed · stopped at the step limit") for l in lines)
    assert "**Failing tests**" in summary.read_text()


def test_the_working_directory_option(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "-C", str(repo / "calc"), "--model", REPLAY, FIX], tmp_path)
    assert out.returncode == 0 and out.stdout == LIVE  # -C a subfolder: the workspace is its git top level
    assert (repo / ".cog" / "threads.db").exists()


def test_json_mode_writes_nothing_but_events_even_on_a_usage_error(make_repo) -> None:
    out = run_cog(["edit", "--json", FIX], make_repo("calc"))
    events = json_lines(out.stdout)  # only events: an error and a finish (issue 13), no other text
    assert out.returncode == 2 and [e["type"] for e in events] == ["error", "finish"]
    assert events[0]["code"] == "MODEL_CONFIG_ERROR" and events[1]["status"] == "error"
