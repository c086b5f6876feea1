"""The GitHub renderer annotates a file whose last change failed, reading the results' shapes and
error codes (never a tool's name): a failed read is no failed change, and a later edit that worked
clears an earlier one that did not."""

from __future__ import annotations

import io
from typing import Any

from cogcli.wire.events import FinishEvent, StartEvent, ToolCallEndEvent, ToolCallStartEvent, ToolResultEvent
from cogcli.render.github import GithubRenderer

DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _call(i: int, name: str, args: dict[str, Any], *, details: Any = None, error: str | None = None, code: str | None = None) -> list[Any]:
    cid = f"c{i}"
    return [
        ToolCallStartEvent(id=cid, tool_name=name),
        ToolCallEndEvent(id=cid, tool_name=name, arguments=args),
        ToolResultEvent(id=cid, tool_call_id=cid, tool_name=name, result=None if error else "ok", details=details, error=error, error_code=code),
    ]


def _annotations(*calls: list[Any]) -> list[str]:
    out = io.StringIO()
    renderer = GithubRenderer(out)
    events = [StartEvent(message_id="m", thread_id="t"), *(e for c in calls for e in c), FinishEvent(message_id="m", thread_id="t", status="completed")]
    for event in events:
        renderer.handle(event)
    renderer.close()
    return [line for line in out.getvalue().splitlines() if line.startswith("::error file=")]


def test_a_failed_change_is_annotated_and_a_failed_read_is_not() -> None:
    lines = _annotations(
        _call(1, "open_it", {"path": "missing.py"}, error="missing.py does not exist", code="FILE_NOT_FOUND"),
        _call(2, "patch", {"path": "a.py", "old_text": "y", "new_text": "z"}, error="no match", code="EDIT_NO_MATCH"),
        _call(3, "put", {"path": "b.py", "content": "x"}, error="could not write b.py", code="TOOL_ERROR"),
    )
    assert [line.split("::")[1].split(",")[0] for line in lines] == ["error file=a.py", "error file=b.py"]


def test_a_later_change_that_worked_clears_the_failure() -> None:
    lines = _annotations(
        _call(1, "patch", {"path": "a.py", "old_text": "y", "new_text": "z"}, error="no match", code="EDIT_NO_MATCH"),
        _call(2, "patch", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}, details={"diff": DIFF, "added": 1, "removed": 1}),
    )
    assert lines == []
