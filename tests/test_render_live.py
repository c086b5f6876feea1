"""The terminal while a run goes on, and how it ends: a test run's live line (count, bar, the test
that just ended; escaped, one terminal line wide), off a terminal one line per update as before;
the last line's word matching the exit code; a failing test's file and line."""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CASSETTE, cog_argv, cog_env, read_pty, read_until, run_cog

from cogcli.wire.events import (
    ApprovalRequiredEvent,
    BaseEvent,
    ErrorEvent,
    FinishEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
    Usage,
)
from cogcli.contract.details_readers import read_test_progress
from cogcli.render.github import GithubRenderer
from cogcli.render.summary import RunSummary, usage_words
from cogcli.shown.approval import columns
from cogcli.render.live_line import running_tests_line
from cogcli.render.text import TextRenderer

ESC = "\x1b"


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class Ticks:
    """A clock that moves a second per reading: every update is drawn, none held back."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def update(call_id: str, test: str, outcome: str, *, passed: int, failed: int, collected: int | None) -> ToolUpdateEvent:
    details = {"passed": passed, "failed": failed, "skipped": 0, "errors": 0, "total_so_far": passed + failed,
               "collected": collected, "current": test, "runner": "pytest"}
    return ToolUpdateEvent(tool_call_id=call_id, tool_name="run_tests", content=f"{test} {outcome}", details=details,
                           presentation={"label": "Run tests", "icon": "flask-conical", "detail": test})


def a_test_run(call_id: str = "t1", *, approved: bool = True, names: tuple[str, str] = ("tests/t.py::a", "tests/t.py::b")) -> list[BaseEvent]:
    events: list[BaseEvent] = [ToolCallStartEvent(id=call_id, tool_name="run_tests"), ToolCallEndEvent(id=call_id, tool_name="run_tests", arguments={})]
    if approved:
        events.append(ApprovalRequiredEvent(thread_id="th", approvals=[{"toolCallId": call_id, "toolName": "run_tests", "description": "Run tests · all", "arguments": {}}]))
    events += [
        update(call_id, names[0], "failed", passed=0, failed=1, collected=4),
        update(call_id, names[1], "passed", passed=1, failed=1, collected=4),
    ]
    return events


def draw(events: list[BaseEvent], out: Any, **options: Any) -> TextRenderer:
    renderer = TextRenderer(out, clock=Ticks(), **options)
    for e in events:
        renderer.handle(e)
    renderer.close()
    return renderer


# --- the live line ---------------------------------------------------------------------------


def test_on_a_terminal_a_test_run_counts_with_a_bar_under_its_own_detail() -> None:
    out = FakeTTY()
    draw(a_test_run(), out, color=True, width=100)
    text = out.getvalue()
    # the call's own words (from its approval), the count of the collected tests, the bar, the last test
    assert "\x1b[2m  … Run tests  all · 1/4 · 1 failed · 0 passed  ████░░░░░░░░░░░░ · tests/t.py::a failed\x1b[0m" in text
    assert "\r\x1b[2K\x1b[2m  … Run tests  all · 2/4 · 1 failed · 1 passed  ████████░░░░░░░░ · tests/t.py::b passed\x1b[0m" in text
    assert text.endswith("\r\x1b[2K")  # the live line is cleared when the renderer closes


def test_a_message_while_the_live_line_shows_starts_on_a_line_of_its_own() -> None:
    """Ctrl-C's notice (a log line on stderr, the same terminal) is not drawn onto the running
    test's count: the live line is erased first, and drawn again by the next update (issue 43)."""
    import logging

    from cogcli.cli.lean_start import _TerminalHandler
    from cogcli.shown.visible import say

    out = FakeTTY()
    renderer = TextRenderer(out, clock=Ticks(), color=True, width=100)
    handler = _TerminalHandler(out)
    handler.setFormatter(logging.Formatter("cog: %(message)s"))
    record = logging.LogRecord("cogcli", logging.WARNING, __file__, 1, "SIGINT: stopping the run", None, None)
    try:
        events = a_test_run()
        for e in events[:-1]:
            renderer.handle(e)
        handler.emit(record)
        say("a second notice", stream=out)
        renderer.handle(events[-1])
    finally:
        renderer.close()
    text = out.getvalue()
    assert "████░░░░░░░░░░░░ · tests/t.py::a failed\x1b[0m\r\x1b[2Kcog: SIGINT: stopping the run\ncog: a second notice\n" in text
    assert "\x1b[2m  … Run tests  all · 2/4 · 1 failed · 1 passed" in text.split("a second notice\n", 1)[1]  # drawn again


def test_the_runners_own_output_lines_keep_the_count_and_bar() -> None:
    """npm's runner streams its output's lines between the test updates: on a terminal the count
    and bar stay, the output line shows after them (issue 43: the live line showed raw output)."""
    out = FakeTTY()
    raw = ToolUpdateEvent(tool_call_id="t1", tool_name="run_tests", content="ℹ tests 3", details={"line": 12})
    draw([*a_test_run(), raw], out, color=False, width=100)
    live = [part for part in out.getvalue().split("\r") if part.startswith("  … ")]
    assert live[-1].startswith("  … Run tests  all · 2/4 · 1 failed · 1 passed  ████████░░░░░░░░ · ℹ tests 3"), live[-1]


def test_without_an_approval_the_line_has_the_label_and_no_test_id_in_its_head() -> None:
    out = FakeTTY()
    draw(a_test_run(approved=False), out, color=False, width=100)
    assert "  … Run tests · 2/4 · 1 failed · 1 passed  ████████░░░░░░░░ · tests/t.py::b passed" in out.getvalue()


def test_the_live_line_fits_the_terminal_and_its_words_are_escaped() -> None:
    names = ("tests/t.py::测试_宽字符_" + "x" * 30, "tests/t.py::b\x1b[2J\u202e")
    for width in (120, 60, 40, 24):
        out = FakeTTY()
        draw(a_test_run(names=names), out, color=False, width=width)
        drawn = [part for part in re.split(r"[\r\n]", out.getvalue()) if part.startswith("  … ")]  # the live lines
        assert drawn and all(columns(part) <= width - 1 for part in drawn), (width, drawn)
        assert ESC not in out.getvalue()  # no colour asked: no escape at all, the test's own ones shown as text
    wide = FakeTTY()
    draw(a_test_run(names=names), wide, color=True, width=120)
    assert "tests/t.py::b\\x1b[2J\\u202e passed" in wide.getvalue() and "\x1b[2J" not in wide.getvalue()
    # narrow: the test's id goes first, then the bar; the counts stay
    narrow = FakeTTY()
    draw(a_test_run(names=names), narrow, color=False, width=50)
    live = [part for part in narrow.getvalue().split("\r") if part.startswith("  … ")]
    assert live[-1] == "  … Run tests  all · 2/4 · 1 failed · 1 passed"


def test_without_colour_the_line_is_erased_with_spaces(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = FakeTTY()
    draw(a_test_run(), out, width=100)
    assert ESC not in out.getvalue() and "\r" + " " * 20 in out.getvalue()


def test_off_a_terminal_each_update_stays_its_own_line() -> None:
    out = io.StringIO()
    draw(a_test_run(), out)
    assert out.getvalue() == "? Run tests · all — needs approval\n  … Run tests  tests/t.py::a failed\n  … Run tests  tests/t.py::b passed\n"


def test_progress_reader_and_line_without_a_collected_count() -> None:
    progress = read_test_progress({"passed": 5, "failed": 0, "errors": 2, "total_so_far": 7, "collected": None, "current": "x"})
    assert progress is not None and (progress.done, progress.collected, progress.errors) == (7, None, 2)
    assert running_tests_line("Run tests  all", progress) == "Run tests  all · 7 run · 2 errors · 5 passed · x"
    assert read_test_progress({"line": 3}) is read_test_progress("x") is None


# --- the last line ---------------------------------------------------------------------------

FAILING = {"passed": 2, "failed": 1, "failures": [{"nodeid": "tests/test_number.py::test_odd", "message": "assert 3 % 2 == 0",
                                                   "file": "tests/test_number.py", "line": 38}]}
PASSING = {"passed": 3, "failed": 0}


def ended(status: str, details: dict[str, Any] | None = None, *, tests_error: str | None = None, code: str | None = None) -> list[BaseEvent]:
    events: list[BaseEvent] = []
    if details is not None:
        events.append(ToolResultEvent(id="t1", tool_call_id="t1", tool_name="run_tests", result="…", details=details,
                                      presentation={"label": "Run tests", "detail": "all"}))
    if code is not None:
        events.append(ErrorEvent(message="the provider said no", code=code))
    tests = None if details is None else {"passed": details["passed"], "failed": details["failed"]}
    events.append(FinishEvent(message_id="m", thread_id="th", status=status, steps=3, tests=tests, tests_error=tests_error,
                              usage=Usage(input_tokens=1000, output_tokens=234)))
    return events


@pytest.mark.parametrize(("events", "last", "exit_code"), [
    (ended("completed", PASSING), "Done · 3 steps · 3 tests passed · 1,234 tokens", 0),
    (ended("completed"), "Done · 3 steps · 1,234 tokens", 0),
    (ended("completed", FAILING), "Failed · 3 steps · 1 test failed, 2 passed · 1,234 tokens", 1),
    (ended("completed", tests_error="run_tests timed out"), "Failed · 3 steps · tests did not finish · 1,234 tokens", 1),
    (ended("max_steps", FAILING), "Failed · stopped at the step limit · 3 steps · 1 test failed, 2 passed · 1,234 tokens", 1),
    (ended("error", code="MODEL_STREAM_ERROR"), "Failed · 3 steps · 1,234 tokens", 1),
    (ended("error", code="MODEL_CONFIG_ERROR"), "Failed · 3 steps · 1,234 tokens", 2),
    (ended("denied", PASSING), "Denied · 3 steps · 3 tests passed · 1,234 tokens", 1),
    (ended("aborted"), "Aborted · 3 steps · 1,234 tokens", 130),
], ids=["done", "done-no-tests", "tests-failed", "tests-unfinished", "step-limit", "error", "config-error", "denied", "aborted"])
def test_the_last_line_says_how_the_run_ended_as_its_exit_code_does(events: list[BaseEvent], last: str, exit_code: int) -> None:
    out = io.StringIO()
    renderer = draw(events, out)
    assert out.getvalue().splitlines()[-1] == last
    assert renderer.summary.exit_code() == exit_code
    assert (last.split(" · ")[0] == "Done") == (exit_code == 0)


def test_usage_words_are_one_function() -> None:
    assert usage_words(None) is None and usage_words(Usage()) is None
    assert usage_words(Usage(input_tokens=5000, output_tokens=392, total_tokens=5392)) == "5,392 tokens"
    summary = RunSummary()
    summary.add(FinishEvent(message_id="m", thread_id="t", status="completed", usage=Usage(input_tokens=1, output_tokens=1)))
    assert summary.line() == "Done · 0 steps · 2 tokens"


# --- a failing test's place --------------------------------------------------------------------


def test_a_failing_test_names_its_file_and_line_as_the_github_annotation_does() -> None:
    events = ended("completed", FAILING)
    out = io.StringIO()
    draw(events, out)
    assert "    FAILED tests/test_number.py::test_odd at tests/test_number.py:38 — assert 3 % 2 == 0\n" in out.getvalue()
    gh = io.StringIO()
    github = GithubRenderer(gh)
    for e in events:
        github.handle(e)
    github.close()
    assert "::error file=tests/test_number.py,line=38,title=tests/test_number.py%3A%3Atest_odd::assert 3 %25 2 == 0" in gh.getvalue()
    # pytest's long report says where, when the details have no line of their own
    longrepr = {"passed": 0, "failed": 1, "tests": [{"id": "tests/test_number.py::test_odd", "outcome": "failed",
                "longrepr": "def test_odd():\n>       assert 3 % 2 == 0\nE       assert 1 == 0\n\ntests/test_number.py:38: AssertionError"}]}
    out = io.StringIO()
    draw(ended("completed", longrepr), out)
    assert "FAILED tests/test_number.py::test_odd at tests/test_number.py:38" in out.getvalue()


# --- real runs ---------------------------------------------------------------------------------


def write_cassette(path: Path, turns: list[dict[str, Any]]) -> str:
    import json

    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}, *({"type": "turn", **t} for t in turns)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return f"replay:{path}"


@pytest.mark.slow
def test_a_slow_suite_shows_its_count_and_bar_on_a_real_terminal(make_repo, tmp_path: Path) -> None:
    repo = make_repo("slowtests")
    model = write_cassette(tmp_path / "tests.jsonl", [
        {"toolCalls": [{"id": "t1", "name": "run_tests", "arguments": {}}], "usage": {"inputTokens": 10, "outputTokens": 5}},
        {"text": "One test fails.", "usage": {"inputTokens": 20, "outputTokens": 5}},
    ])
    main, child = os.openpty()
    proc = subprocess.Popen([*cog_argv(), "edit", "--yes", "--model", model, "Run the tests"], cwd=repo,
                            env=cog_env({"COLUMNS": "120"}, ci=False), stdin=subprocess.DEVNULL, stdout=child, stderr=child)
    os.close(child)
    try:
        # test_first passed; test_waits_for_first_update waits for gate.flag: the run is under way
        seen = read_until(main, "1/4".encode(), within=90).decode("utf-8", "replace")
        assert "\x1b[2m  … Run tests  all · 1/4 · 1 passed  ████░░░░░░░░░░░░ · tests/test_stream.py::test_first passed\x1b[0m" in seen, seen
        assert proc.poll() is None  # still running
        (repo / "gate.flag").touch()
        rest = read_pty(main).decode("utf-8", "replace")
    finally:
        os.close(main)
        if proc.poll() is None and not (repo / "gate.flag").exists():  # failed before the gate: end the held run
            proc.kill()
            proc.wait()
    assert proc.wait(timeout=60) == 1
    assert "\r\x1b[2K" in rest and "4/4 · 1 failed · 3 passed" in rest
    assert "FAILED tests/test_stream.py::test_fails at tests/test_stream.py:" in rest
    assert "\r\n\x1b[1mFailed · 2 steps · 1 test failed, 3 passed · 40 tokens\x1b[0m\r\n" in rest  # the last line of stdout


def test_a_run_whose_calls_were_refused_ends_denied(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "--model", f"replay:{CASSETTE}", "Fix the failing test"], repo, ci=False, input="")
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines()[-1].startswith("Denied · ")
