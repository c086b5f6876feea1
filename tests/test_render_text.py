"""The plain-text renderer draws rows, progress and details from wire events alone."""

from __future__ import annotations

import io
import json

from render_helpers import call, demo_events, event_line, render_events, run_updates, DEMO_TEXT, DIFF

from cogcli.wire.events import ErrorEvent, FinishEvent, ToolUpdateEvent, Usage, parse_event
from cogcli.render.details import diff_stats, read_test_report
from cogcli.render.jsonl import read_events
from cogcli.render.summary import RunSummary
from cogcli.render.text import TextRenderer


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def draw(events, **options) -> str:
    out = io.StringIO()
    render_events(events, out, **options)
    return out.getvalue()


def test_demo_run_draws_rows_updates_details_and_summary_off_a_tty() -> None:
    assert draw(demo_events()) == DEMO_TEXT


def test_off_a_tty_there_is_no_ansi_even_with_colour_wanted_by_nobody() -> None:
    out = draw(demo_events())
    assert "\x1b" not in out and "\r" not in out


def test_row_falls_back_to_the_tool_name_and_never_prints_the_icon() -> None:
    events = call("c1", "grep_files", {"pattern": "x"}, result=[])
    events += call("c2", "read_file", {"path": "a"}, result="", presentation={"label": "Read file", "icon": "file-text"})
    assert draw(events) == "grep_files\nRead file\n"
    assert "file-text" not in draw(demo_events())


def test_a_saved_stream_renders_exactly_like_the_live_one() -> None:
    lines = [event_line(e) for e in demo_events()]
    assert draw(read_events(lines)) == draw(demo_events())


def test_malformed_and_unknown_lines_are_skipped_and_reported_with_their_number() -> None:
    lines = [event_line(e) for e in demo_events()]
    lines.insert(2, "{not json")
    lines.insert(4, json.dumps({"type": "from-the-future", "x": 1}))
    lines.insert(5, json.dumps({"type": "tool-result"}))  # known type, missing fields
    problems: list[tuple[int, str]] = []
    assert draw(read_events(lines, lambda n, m: problems.append((n, m)))) == DEMO_TEXT
    assert [n for n, _ in problems] == [3, 6]
    assert "not JSON" in problems[0][1] and "invalid tool-result event" in problems[1][1]


def test_on_a_tty_the_running_row_shows_its_latest_update_in_place_with_colour() -> None:
    now = [0.0]
    out = FakeTTY()
    r = TextRenderer(out, tty=True, color=True, width=80, clock=lambda: now[0])
    events = call(
        "c1",
        "run_tests",
        {},
        updates=run_updates("c1", {"t::a": "passed", "t::b": "passed", "t::c": "failed"}),
        result={},
        presentation={"label": "Run tests", "detail": "2 passed, 1 failed"},
    )
    for e in events:
        if isinstance(e, ToolUpdateEvent):
            now[0] += 0.5  # far apart: each update is drawn
        r.handle(e)
    r.close()
    text = out.getvalue()
    assert "\r\x1b[2K" in text  # erased in place, not a new line per update
    assert text.count("\n") == 1  # only the final row ends a line
    assert text.endswith("\x1b[1mRun tests\x1b[0m  2 passed, 1 failed\n")
    assert "t::c failed" in text


def test_tty_redraws_are_throttled_to_ten_a_second() -> None:
    now = [100.0]
    out = FakeTTY()
    r = TextRenderer(out, tty=True, color=False, width=80, clock=lambda: now[0])
    r.handle(call("c1", "run_tests", {})[0])
    for i in range(50):
        now[0] += 0.001  # 50 updates within 50 ms
        r.handle(ToolUpdateEvent(tool_call_id="c1", tool_name="run_tests", content=f"test {i} passed"))
    assert out.getvalue().count("test ") == 1  # the first drawn, the rest held back
    r.close()
    assert "\x1b" not in out.getvalue()  # NO_COLOR on a TTY: spaces, not escape codes


def test_no_color_off_means_colours_on_a_tty(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = FakeTTY()
    render_events(demo_events(), out)
    assert "\x1b[32m    +    return a + b\x1b[0m" not in out.getvalue()
    assert "\x1b[32m+    return a + b\x1b[0m" in out.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    out = FakeTTY()
    render_events(demo_events(), out)
    assert "\x1b" not in out.getvalue()


def test_summary_counts_files_from_diffs_and_tests_from_the_last_run() -> None:
    s = RunSummary()
    for e in demo_events():
        s.add(e)
    assert {p: (f.added, f.removed) for p, f in s.file_stats().items()} == {"calc/ops.py": (1, 1)}
    assert s.test_counts() == (3, 0)
    assert s.exit_code() == 0


def test_exit_code_is_one_when_the_last_test_run_fails_or_the_run_did_not_complete() -> None:
    events = [e for e in demo_events() if not (getattr(e, "id", None) == "c5" or getattr(e, "tool_call_id", None) == "c5")]
    s = RunSummary()
    for e in events:
        s.add(e)
    assert s.exit_code() == 1
    assert "1 test failed, 2 passed" in s.line()
    for status, code in [("max_steps", 1), ("error", 1), ("aborted", 130), ("completed", 0)]:
        s = RunSummary()
        s.add(FinishEvent(message_id="m", thread_id="t", status=status))
        assert s.exit_code() == code


def test_run_errors_and_statuses_are_drawn() -> None:
    events = [ErrorEvent(message="server said 500", code="MODEL_STREAM_ERROR"), FinishEvent(message_id="m", thread_id="t", status="error", steps=1, usage=Usage(input_tokens=10, output_tokens=2))]
    assert draw(events) == "✗ MODEL_STREAM_ERROR: server said 500\n\nFailed · 1 step · 12 tokens\n"


def test_text_without_an_end_is_printed_at_close() -> None:
    events = [parse_event({"type": "text-delta", "id": "x", "delta": "half a thought"})]
    assert draw(events) == "half a thought\n"


def test_diff_stats_count_new_files_and_lines_that_look_like_headers() -> None:
    diff = DIFF + "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+--- not a header\n+x\n"
    assert [(s.path, s.added, s.removed) for s in diff_stats(diff)] == [("calc/ops.py", 1, 1), ("new.py", 2, 0)]


def test_read_test_report_reads_counts_and_failures() -> None:
    report = read_test_report({"passed": 1, "failed": 1, "failures": [{"nodeid": "t.py::x", "message": "boom", "line": 3}]})
    assert report is not None and not report.ok
    assert report.failures[0].file == "t.py" and report.failures[0].line == 3
    assert read_test_report({"diff": DIFF}) is None


def test_a_row_is_one_line_whatever_newlines_a_command_or_label_holds() -> None:
    """A model's command ``true\\nRun tests  all · 9 passed`` must not draw a second, fake row."""
    fake = "true\nRun tests  all · 9 passed"
    events = call("c1", "run_command", {"command": fake}, result="ok", presentation={"label": "Run", "detail": fake})
    events += call("c2", "run_command", {"command": fake}, result=None, error="denied", error_code="DENIED",
                   presentation={"label": "Run\nRun tests", "detail": fake})
    lines = draw(events).splitlines()
    assert lines[0] == "Run  true\\x0aRun tests  all · 9 passed"
    assert lines[1].startswith("✗ Run\\x0aRun tests  true\\x0aRun tests  all · 9 passed — DENIED: denied")
    assert not any(line.startswith("Run tests") for line in lines)


def test_a_call_waiting_for_approval_and_its_refusal_are_one_line_each() -> None:
    from cogcli.gate.approval import summarize
    from cogcli.wire.events import Approval, ApprovalRequiredEvent

    asked = Approval(tool_call_id="c1", tool_name="run_command", description="Run · ruff check\n✓ Approved", side_effects=["runs code"])
    lines = draw([ApprovalRequiredEvent(thread_id="t", approvals=[asked])]).splitlines()
    assert lines == ["? Run · ruff check\\x0a✓ Approved — needs approval"]
    assert summarize([asked]) == "Run · ruff check\\x0a✓ Approved (runs code)"
