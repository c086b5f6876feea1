"""A hand-built wire event stream (a small fix-the-test run) for the renderer tests."""

from __future__ import annotations

from typing import Any

from cogcli.wire.events import (
    BaseEvent,
    FinishEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
    Usage,
)

DIFF = """\
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,3 +1,3 @@
 def add(a: int, b: int) -> int:
     \"\"\"Return the sum of a and b.\"\"\"
-    return a - b
+    return a + b
"""

FAILING_REPORT = {
    "passed": 2,
    "failed": 1,
    "failures": [
        {"nodeid": "tests/test_ops.py::test_add", "message": "assert -1 == 5\n where -1 = add(2, 3)", "file": "tests/test_ops.py", "line": 5}
    ],
}
PASSING_REPORT = {"passed": 3, "failed": 0, "failures": []}


def text(text_id: str, words: str) -> list[BaseEvent]:
    return [TextStartEvent(id=text_id), TextDeltaEvent(id=text_id, delta=words[:5]), TextDeltaEvent(id=text_id, delta=words[5:]), TextEndEvent(id=text_id)]


def call(
    call_id: str,
    name: str,
    arguments: dict[str, Any],
    *,
    updates: list[ToolUpdateEvent] = (),  # type: ignore[assignment]
    **result: Any,
) -> list[BaseEvent]:
    import json

    return [
        ToolCallStartEvent(id=call_id, tool_name=name),
        ToolCallDeltaEvent(id=call_id, args_text_delta=json.dumps(arguments)),
        ToolCallEndEvent(id=call_id, tool_name=name, arguments=arguments),
        *updates,
        ToolResultEvent(id=call_id, tool_call_id=call_id, tool_name=name, **result),
    ]


def run_updates(call_id: str, outcomes: dict[str, str]) -> list[ToolUpdateEvent]:
    return [
        ToolUpdateEvent(tool_call_id=call_id, tool_name="run_tests", content=f"{nodeid} {outcome}", presentation={"label": "Run tests", "detail": nodeid})
        for nodeid, outcome in outcomes.items()
    ]


def demo_events() -> list[BaseEvent]:
    events: list[BaseEvent] = [StartEvent(message_id="m1", thread_id="t1")]
    events += text("x1", "I'll look at the code first.")
    events += call("c1", "read_file", {"path": "calc/ops.py"}, result="def add…", presentation={"label": "Read file", "icon": "file-text", "detail": "calc/ops.py"})
    events += call(
        "c2",
        "run_tests",
        {},
        updates=run_updates("c2", {"tests/test_ops.py::test_add": "failed", "tests/test_ops.py::test_sub": "passed"}),
        result={"passed": 2, "failed": 1},
        details=FAILING_REPORT,
        presentation={"label": "Run tests", "icon": "flask-conical", "detail": "1 failed, 2 passed"},
    )
    events += call(
        "c3",
        "edit_file",
        {"path": "calc/nope.py", "old_text": "x", "new_text": "y"},
        error="calc/nope.py does not exist",
        error_code="FILE_NOT_FOUND",
        presentation={"label": "Edit file", "icon": "file-pen", "detail": "calc/nope.py"},
    )
    events += call("c4", "edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}, result={"path": "calc/ops.py", "replacements": 1}, details={"diff": DIFF}, presentation={"label": "Edit file", "icon": "file-pen", "detail": "calc/ops.py"})
    events += call("c5", "run_tests", {}, updates=run_updates("c5", {"tests/test_ops.py::test_add": "passed"}), result={"passed": 3, "failed": 0}, details=PASSING_REPORT, presentation={"label": "Run tests", "detail": "3 passed"})
    events += text("x2", "Fixed `add`: it now returns a + b.\nAll tests pass.")
    events.append(FinishEvent(message_id="m1", thread_id="t1", status="completed", steps=5, usage=Usage(input_tokens=5000, output_tokens=392, total_tokens=5392)))
    for seq, event in enumerate(events):
        event.seq = seq
        event.timestamp = "2026-12-02T10:00:00.000Z"
    return events


DEMO_TEXT = """\
I'll look at the code first.
Read file  calc/ops.py
  … Run tests  tests/test_ops.py::test_add failed
  … Run tests  tests/test_ops.py::test_sub passed
Run tests  1 failed, 2 passed
    FAILED tests/test_ops.py::test_add at tests/test_ops.py:5 — assert -1 == 5
✗ Edit file  calc/nope.py — FILE_NOT_FOUND: calc/nope.py does not exist
Edit file  calc/ops.py
    --- a/calc/ops.py
    +++ b/calc/ops.py
    @@ -1,3 +1,3 @@
     def add(a: int, b: int) -> int:
         \"\"\"Return the sum of a and b.\"\"\"
    -    return a - b
    +    return a + b
  … Run tests  tests/test_ops.py::test_add passed
Run tests  3 passed
Fixed `add`: it now returns a + b.
All tests pass.

Done · 5 steps · 1 file changed (+1 -1) · 3 tests passed · 5,392 tokens
"""


def event_line(event: BaseEvent) -> str:
    """One event as its wire line (no newline), as ``cog edit --json`` writes it."""
    from cogcli.render.jsonl import event_bytes

    return event_bytes(event).decode("utf-8")


def render_events(events: Any, out: Any, **options: Any) -> Any:
    """Draw an iterable of events with a TextRenderer; return the RunSummary they added up to."""
    from cogcli.render.text import TextRenderer

    renderer = TextRenderer(out, **options)
    for event in events:
        renderer.handle(event)
    renderer.close()
    return renderer.summary


def github_lines(output: str) -> list[str]:
    """The lines of ``--format github`` output without its ``::stop-commands::TOKEN`` … ``::TOKEN::``
    brackets, each checked: a fresh 32-hex-digit token that closes what it opened, none left open."""
    import re

    lines: list[str] = []
    token: str | None = None
    seen: set[str] = set()
    for line in output.splitlines():
        if (stop := re.fullmatch(r"::stop-commands::([0-9a-f]{32})", line)) is not None:
            assert token is None and stop.group(1) not in seen, line
            token = stop.group(1)
            seen.add(token)
        elif token is not None and line == f"::{token}::":
            token = None
        else:
            assert token is None or not line.startswith("::"), f"a command while commands are stopped: {line}"
            lines.append(line)
    assert token is None, "commands left stopped at the end"
    return lines
