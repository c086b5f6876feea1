"""What the renderers read of a call's details and arguments is declared in cogcli/contract/details_readers.py:
they draw through its accessors and never sniff a details key or an argument's name themselves."""

from __future__ import annotations

import ast
import io
from pathlib import Path

from render_helpers import call, render_events

import cogcli.render
from cogcli.contract.details import TestReportDetails, details_json_schema
from cogcli.contract.details_readers import file_argument, file_touched, run_outcome, sandbox_note
from cogcli.wire.events import FinishEvent, StartEvent
from cogcli.render.github import GithubRenderer

DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
NOTE = "These failures look like the sandbox's: the tests had no network."

#: the receivers a renderer must not read keys of: a call's details and arguments
_SHAPES = {"details", "arguments"}


def _receiver_names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def test_no_renderer_reads_a_key_of_details_or_arguments() -> None:
    sniffs = []
    for path in sorted(Path(cogcli.render.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                receiver = node.func.value
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                receiver = node.value
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                receiver = node.comparators[-1]
            else:
                continue
            if _receiver_names(receiver) & _SHAPES:
                sniffs.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert sniffs == []


def test_the_accessors_read_the_declared_shapes_and_nothing_else() -> None:
    assert sandbox_note({"sandbox_note": NOTE}) == NOTE
    assert sandbox_note({"sandbox_note": ""}) is sandbox_note({"sandbox_note": 3}) is sandbox_note("x") is None
    assert run_outcome({"outcome": "build-failed", "exit_code": 2}) == ("build-failed", 2)
    assert run_outcome({"outcome": 1, "exit_code": True}) == run_outcome(None) == (None, None)
    assert file_argument({"path": "a.py"}) == "a.py" and file_argument({"path": 3}) is file_argument("a.py") is None
    change = {"diff": DIFF, "added": 1, "removed": 1}
    assert file_touched({"path": "a.py"}, change, failed=False) == "a.py"
    assert file_touched({"path": "a.py"}, {"diff": DIFF, "files": [], "added": 1, "removed": 1}, failed=False) is None
    assert file_touched({"path": "a.py", "new_text": "y"}, None, failed=True, error_code="FILE_NOT_FOUND") == "a.py"
    assert file_touched({"path": "a.py"}, None, failed=True, error_code="FILE_NOT_FOUND") is None
    assert file_touched({"path": "a.py"}, None, failed=True, error_code="EDIT_NO_MATCH") == "a.py"
    assert file_touched({}, change, failed=False) is None


def test_the_run_details_declare_the_sandbox_note_and_the_outcome() -> None:
    fields = TestReportDetails.model_fields
    assert {"sandbox_note", "outcome"} <= set(fields)
    report = details_json_schema()["$defs"]["TestReportDetails"]["properties"]
    assert {"sandbox_note", "outcome"} <= set(report)


def test_the_text_renderer_shows_the_sandbox_note_under_the_row() -> None:
    out = io.StringIO()
    details = {"command": "pytest", "exit_code": 1, "passed": 0, "failed": 1, "sandbox_note": NOTE}
    render_events(call("c1", "run_tests", {}, details=details, presentation={"label": "Run tests", "detail": "all"}), out, tty=False, color=False)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Run tests  all" and lines[1].strip() == NOTE


def test_the_github_renderer_annotates_the_file_a_failed_change_named() -> None:
    out = io.StringIO()
    renderer = GithubRenderer(out)
    events = [
        StartEvent(message_id="m", thread_id="t"),
        *call("c1", "put", {"path": "b.py", "content": "x"}, error="could not write b.py", error_code="TOOL_ERROR"),
        *call("c2", "look", {"path": "c.py"}, error="c.py does not exist", error_code="FILE_NOT_FOUND"),
        *call("c3", "patch", {"path": "a.py"}, result="ok", details={"diff": DIFF, "added": 1, "removed": 1}),
        FinishEvent(message_id="m", thread_id="t", status="completed"),
    ]
    for event in events:
        renderer.handle(event)
    renderer.close()
    annotated = [line.split("::")[1] for line in out.getvalue().splitlines() if line.startswith("::error file=")]
    assert [a.split(",")[0] for a in annotated] == ["error file=b.py"]
