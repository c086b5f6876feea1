"""What people see of big results (issue 24): the failures not listed are counted from the run's
total, not from the hundred its details keep; errors and hints wrap to the terminal with the fix
command whole instead of being cut; git_status draws what the model reads (a line per folder),
not every line of every untracked file; and `cog tool run_tests --format github` annotates the
same failures as `cog edit --format github`."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

from cli_helpers import REPLAY, cog_argv, cog_env, read_pty, run_cog
from browser_helpers import browser  # noqa: F401 (fixture)
from render_helpers import call, github_lines

from cogcli.wire.events import BaseEvent, FinishEvent, StartEvent, ToolCallStartEvent, ToolResultEvent
from cogcli.render.github import GithubRenderer
from cogcli.render.text import TextRenderer
from cogcli.render.words import wrap_line


def _many_failures(total: int, kept: int = 100) -> dict[str, Any]:
    """run_tests' details for ``total`` failures, of which it keeps the first ``kept``."""
    failures = [
        {"id": f"tests/test_big.py::test_{i}", "outcome": "failed", "when": "call", "message": f"assert {i} == -1",
         "text": "", "file": "tests/test_big.py", "line": 10 + i}
        for i in range(kept)
    ]
    return {"outcome": "failed", "exit_code": 1, "counted": True, "passed": 15, "failed": total, "errors": 0, "skipped": 0,
            "failures": failures, "failures_total": total, "command": "pytest", "sandbox": "bwrap"}


def _draw(renderer: Any, events: list[BaseEvent]) -> str:
    for event in events:
        renderer.handle(event)
    renderer.close()
    return renderer.out.getvalue()


def _run_with(details: dict[str, Any]) -> list[BaseEvent]:
    return [
        StartEvent(message_id="m", thread_id="t"),
        *call("c1", "run_tests", {}, result="485 failed", details=details, presentation={"label": "Run tests", "detail": "all"}),
        FinishEvent(message_id="m", thread_id="t", status="completed"),
    ]


# --- 5. counts -----------------------------------------------------------------------------------


def test_485_failures_say_475_more_in_text_and_github_and_385_more_in_the_job_summary(tmp_path: Path) -> None:
    events = _run_with(_many_failures(485))
    text = _draw(TextRenderer(io.StringIO(), tty=False, color=False), events).splitlines()
    assert text.count("    … and 475 more") == 1
    assert len([line for line in text if line.startswith("    FAILED ")]) == 10

    summary = tmp_path / "summary.md"
    github = _draw(GithubRenderer(io.StringIO(), step_summary=summary), events).splitlines()
    assert "    … and 475 more" in github
    assert len([line for line in github if line.startswith("::error file=tests/test_big.py,")]) == 100  # every failure kept
    job = summary.read_text().splitlines()
    assert len([line for line in job if line.startswith("- `tests/test_big.py::")]) == 100
    assert "- … and 385 more" in job


def test_a_report_without_a_total_counts_its_failed_tests_and_one_that_lists_all_says_nothing_more() -> None:
    no_total = _many_failures(30, kept=12)
    del no_total["failures_total"]  # an older stream, another tool's shape: the counts say how many
    text = _draw(TextRenderer(io.StringIO(), tty=False, color=False), _run_with(no_total))
    assert "… and 20 more" in text
    text = _draw(TextRenderer(io.StringIO(), tty=False, color=False), _run_with(_many_failures(10, kept=10)))
    assert "more" not in text


def _annotations(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("::error file=")]


def test_cog_tool_run_tests_github_annotates_as_cog_edit_does(make_repo, tmp_path: Path) -> None:
    edit_summary, tool_summary = tmp_path / "edit.md", tmp_path / "tool.md"
    # the calc_fix cassette's second step runs the tests (one fails) and the step limit ends the run
    edited = run_cog(["edit", "--format", "github", "--max-steps", "2", "--model", REPLAY, "Fix the failing test"],
                     make_repo("calc", dest="edit"), env={"GITHUB_STEP_SUMMARY": str(edit_summary)})
    tool = run_cog(["tool", "run_tests", "--format", "github"], make_repo("calc", dest="tool"), env={"GITHUB_STEP_SUMMARY": str(tool_summary)})
    assert (edited.returncode, tool.returncode) == (1, 1), tool.stderr
    expected = ["::error file=tests/test_ops.py,line=5,title=tests/test_ops.py%3A%3Atest_add::assert -1 == 5"]
    assert _annotations(edited.stdout) == _annotations(tool.stdout) == expected
    assert tool.stdout.splitlines()[-1] == "Run tests  all · 1 failed, 2 passed"
    job = tool_summary.read_text()
    assert job.startswith("### cog tool run_tests\n\nRun tests  all · 1 failed, 2 passed\n")
    assert "**Failing tests**\n- `tests/test_ops.py::test_add` — assert -1 == 5\n" in job
    assert "**Failing tests**\n- `tests/test_ops.py::test_add` — assert -1 == 5\n" in edit_summary.read_text()


def test_a_call_by_hand_that_failed_is_one_error_annotation_and_a_read_ends_with_its_row() -> None:
    failed = [ToolCallStartEvent(id="c1", tool_name="read_file"),
              ToolResultEvent(id="c1", tool_call_id="c1", tool_name="read_file", error="nope.py does not exist", error_code="FILE_NOT_FOUND",
                              presentation={"label": "Read file", "detail": "nope.py"})]
    lines = _draw(GithubRenderer(io.StringIO()), failed).splitlines()
    assert "::error title=cog::cog tool read_file: ✗ Read file  nope.py — FILE_NOT_FOUND: nope.py does not exist" in lines
    read = [ToolCallStartEvent(id="c1", tool_name="read_file"),
            ToolResultEvent(id="c1", tool_call_id="c1", tool_name="read_file", result="x = 1", presentation={"label": "Read file", "detail": "a.py"})]
    lines = _draw(GithubRenderer(io.StringIO()), read).splitlines()
    assert lines == ["::group::Read file  a.py", "::endgroup::", "Read file  a.py"]


# --- 6. errors and hints wrap, never cut -----------------------------------------------------------


def _venv_without_pytest(repo: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True, capture_output=True)
    return repo / ".venv" / "bin" / "python"


def _on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str | None], columns: int) -> tuple[int, list[str]]:
    """``cog …`` with its stdout on a pseudo-terminal ``columns`` wide (``None`` in ``env``: unset)."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environment = {k: v for k, v in {**cog_env(), **env}.items() if v is not None}
    proc = subprocess.Popen([*cog_argv(), *argv], cwd=cwd, env=environment, stdout=child, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(child)
    out = read_pty(main)
    os.close(main)
    return proc.wait(timeout=120), out.decode("utf-8").replace("\r\n", "\n").splitlines()


def test_the_pytest_missing_hint_wraps_at_columns_60_with_its_fix_command_on_one_line(make_repo) -> None:
    repo = make_repo("calc")
    python = _venv_without_pytest(repo)
    fix = f"({python} -m pip install pytest),"
    sentence = f"pytest is not installed for {python}: install it in the workspace's environment {fix} then run the tests again."
    for env, columns in (({"COLUMNS": "60", "NO_COLOR": "1"}, 200), ({"COLUMNS": None, "NO_COLOR": "1"}, 60)):
        code, lines = _on_a_terminal(["tool", "run_tests"], repo, env, columns)
        assert code == 1
        lines = lines[lines.index(next(line for line in lines if line.startswith("✗ Run tests"))):]
        assert lines[0] == "✗ Run tests  all — TOOL_ERROR: pytest is not installed for"
        assert f"    {fix}" in lines  # the command the person needs: one line, whole
        # wider than 60: only the command, or a path that is one word (the temp dir is deep)
        assert all(len(line) <= 60 for line in lines if line != f"    {fix}" and " " in line.strip()), lines
        assert all(line.startswith("    ") for line in lines[1:])  # continuation lines are indented
        # nothing was cut: the words come back whole
        assert " ".join(line.strip() for line in lines).startswith(f"✗ Run tests  all — TOOL_ERROR: {sentence}")
    # off a terminal the message is one line, whole (a log viewer folds it)
    plain = run_cog(["tool", "run_tests"], repo).stdout.splitlines()
    assert plain[0] == f"✗ Run tests  all — TOOL_ERROR: {sentence}"


def test_on_a_terminal_an_error_wraps_to_its_width_and_keeps_its_colours() -> None:
    error = ("npm ci failed in web/: run `npm ci --prefer-offline` (or `npm install`) in web/ and then the tests again; "
             "the lockfile web/package-lock.json does not match web/package.json")
    events = [ToolCallStartEvent(id="c1", tool_name="run_tests"),
              ToolResultEvent(id="c1", tool_call_id="c1", tool_name="run_tests", error=error, error_code="TOOL_ERROR",
                              presentation={"label": "Run tests", "detail": "web"})]
    out = _draw(TextRenderer(io.StringIO(), tty=True, color=True, width=50), events)
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in out.splitlines()]
    assert out.startswith("\x1b[31m✗ \x1b[0m\x1b[1mRun tests\x1b[0m  web — TOOL_ERROR:")
    assert all(len(line) <= 50 for line in lines), lines
    assert "    (or `npm install`) in web/ and then the tests" in lines  # a command in backticks is never split
    assert " ".join(line.strip() for line in lines) == "✗ Run tests  web — TOOL_ERROR: " + error


def test_wrapping_escapes_control_characters_and_keeps_a_long_word_whole() -> None:
    path = "/very/long/" + "x" * 80 + "/python"
    lines = wrap_line(f"cannot run {path} \x1b]52;c;evil\x07 now", 40, "  ")
    assert lines == ["cannot run", f"  {path}", "  \\x1b]52;c;evil\\x07 now"]
    assert wrap_line("short", None, "  ") == wrap_line("short", 40, "  ") == ["short"]


# --- 7. git_status draws the summary the model reads -----------------------------------------------


def test_cog_tool_git_status_on_2000_untracked_files_prints_a_line_per_folder(make_repo) -> None:
    repo = make_repo("calc")
    for folder in ("data", "docs", "assets", "vendor"):
        for i in range(500):
            (repo / folder / "deep").mkdir(parents=True, exist_ok=True)
            (repo / folder / "deep" / f"f{i}.txt").write_text(f"line one of {i}\nline two\nline three\n")
    out = run_cog(["tool", "git_status"], repo)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == [
        "Git status",
        "    On branch main. 2,000 files changed, +6000 -0 since HEAD:",
        "      ?? assets/  500 files, +1500",
        "      ?? data/  500 files, +1500",
        "      ?? docs/  500 files, +1500",
        "      ?? vendor/  500 files, +1500",
        "    (the full diff, 16,000 lines: --json, or cog tool git_diff path=… for a part)",
    ]
    # a part of the diff is one call away (details.diff, all of it, is in test_ws_git)
    one = run_cog(["tool", "git_diff", "path=docs/deep/f7.txt"], repo)
    assert "    +line one of 7" in one.stdout.splitlines() and "full diff" not in one.stdout
    # in a GitHub log the same summary; the job summary counts no file as changed by looking at it
    summary = repo.parent / "summary.md"
    github = run_cog(["tool", "git_status", "--format", "github"], repo, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert github_lines(github.stdout) == ["::group::Git status", *lines[1:], "::endgroup::", "Git status"]
    assert summary.read_text() == "### cog tool git_status\n\nGit status\n\n"


# --- 5. in Studio ---------------------------------------------------------------------------------


def test_studio_lists_the_failures_kept_and_counts_the_rest_from_the_total(make_repo, tmp_path: Path, browser: Any) -> None:
    from browser_helpers import wait_for
    from serve_helpers import Served, write_cassette

    # Studio draws every failure the details kept (each opens to its text); the rest it counts
    details = {**_many_failures(485), "report_file": ".cog/test-reports/run-1.json"}
    model = write_cassette(tmp_path / "hi.jsonl", [{"text": "Hello."}])
    with Served(make_repo("calc"), model=model) as srv:
        run = srv.start("Say hello", approval="auto")
        srv.events(run["runId"])
        browser.get(f"{srv.base}/threads/{run['threadId']}?token={srv.token}")
        wait_for(browser, lambda d: d.execute_script("return !!window.cogView && document.querySelectorAll('[data-block=finish]').length === 1"))
        browser.execute_script("""
            const view = window.cogView;
            view.handle({type: 'tool-call-start', id: 'big', toolName: 'run_tests', presentation: {label: 'Run tests', detail: 'all'}});
            view.handle({type: 'tool-result', id: 'big', toolCallId: 'big', toolName: 'run_tests', result: '485 failed', details: arguments[0]});
        """, details)
        shown = wait_for(browser, lambda d: d.execute_script("""
            const block = document.querySelector('section.call[data-call-id="big"] [data-block=tests]');
            return block && {failures: block.querySelectorAll('details.failure').length,
                             more: block.querySelector('.more-failures') && block.querySelector('.more-failures').textContent};"""))
    assert shown == {"failures": 100, "more": "… and 385 more (all of them: .cog/test-reports/run-1.json)"}


def test_in_a_run_a_view_of_changes_draws_what_the_model_read_and_counts_no_file_changed() -> None:
    diff = "".join(f"diff --git a/n{i}.txt b/n{i}.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n{i}.txt\n@@ -0,0 +1 @@\n+x\n" for i in range(3))
    files = [{"path": f"n{i}.txt", "status": "untracked", "added": 1, "removed": 0, "binary": False} for i in range(3)]
    view = {"branch": "main", "diff": diff, "files": files, "added": 3, "removed": 0, "files_total": 3}
    stat = "On branch main. 3 files changed, +3 -0 since HEAD:\n  ?? n0.txt  +1 -0\n  ?? n1.txt  +1 -0\n  ?? n2.txt  +1 -0\n"
    events = [
        StartEvent(message_id="m", thread_id="t"),
        *call("c1", "git_status", {}, result=stat, details=view, presentation={"label": "Git status"}),
        *call("c2", "git_diff", {}, result=stat + "\n" + diff, details=view, presentation={"label": "Git diff"}),
        FinishEvent(message_id="m", thread_id="t", status="completed"),
    ]
    renderer = TextRenderer(io.StringIO(), tty=False, color=False)
    lines = _draw(renderer, events).splitlines()
    status_rows = lines[lines.index("Git status") + 1 : lines.index("Git diff")]
    assert status_rows == ["    " + line for line in stat.splitlines()] + ["    (the full diff, 18 lines: --json, or cog tool git_diff path=… for a part)"]
    assert "    +++ b/n2.txt" in lines and lines.count("    (the full diff, 18 lines: --json, or cog tool git_diff path=… for a part)") == 1
    assert renderer.summary.files == {} and "changed" not in renderer.summary.line()


def test_a_run_that_gave_no_verdict_shows_what_it_rests_on_and_a_failed_run_only_its_failures() -> None:
    """The notes of a test run (cog's own Python ran it, a package came from an installed copy, a
    command was not found) are drawn whole under the row when the run is an error; a run with
    real failures shows the failures, and the notes stay in the model's text and --json."""
    notes = ["No project environment found (.venv, venv, …): pytest ran with cog's own Python; create one: "
             "python -m venv .venv && .venv/bin/pip install -e . pytest"]
    error = {"outcome": "error", "passed": 0, "failed": 0, "errors": 1, "notes": notes,
             "failures": [{"id": "src/pkg", "message": "the tests import pkg from site-packages"}]}
    text = _draw(TextRenderer(io.StringIO(), tty=False, color=False), _run_with(error)).splitlines()
    assert "    " + notes[0] in text  # one whole line off a terminal: the fix command intact
    failed = {**error, "outcome": "failed", "failed": 1, "errors": 0}
    text = _draw(TextRenderer(io.StringIO(), tty=False, color=False), _run_with(failed)).splitlines()
    assert not any("No project environment" in line for line in text)
