"""A finished call's fields are declared once (contract.call_fields.CallEndFields): the result, the wire event and
the thread's metadata are made from that declaration, and their bytes are the ones they always were."""

from __future__ import annotations

import json

from cogcli.threads.entries import _ENTRY, ToolResultEntry, ToolResultMetadata
from cogcli.wire.events import ToolResultEvent, parse_event
from cogcli.contract.call_fields import END_FIELDS, CallEndFields
from cogcli.threads.store import _entry_json
from cogcli.contract.presentation import ToolPresentation
from cogcli.contract.result import ToolResult

FULL = ToolResult(
    call_id="c1", name="edit", arguments={"path": "a.py"}, result={"n": 1}, details={"diff": "d"},
    presentation=ToolPresentation(label="Edit", detail="a.py"), error="no", error_code="E", duration_ms=2.5, redacted=1,
)


def test_every_format_of_a_finished_call_is_made_from_the_one_declaration() -> None:
    for fmt in (ToolResult, ToolResultEvent, ToolResultMetadata):
        assert issubclass(fmt, CallEndFields)
        assert set(END_FIELDS) <= set(fmt.model_fields)
    event = parse_event(json.dumps(ToolResultEvent.of(FULL).to_wire()))
    stored = _ENTRY.validate_python(json.loads(_entry_json(ToolResultEntry.of(FULL))))
    (back,) = stored.results()  # type: ignore[union-attr]
    assert back == FULL
    for name in END_FIELDS:
        assert getattr(event, name) == getattr(stored.metadata, name) == getattr(FULL, name)  # type: ignore[union-attr]


def test_the_wire_line_and_the_stored_entry_keep_their_key_order() -> None:
    assert json.dumps(ToolResultEvent.of(FULL).to_wire()) == (
        '{"type": "tool-result", "id": "c1", "toolCallId": "c1", "toolName": "edit", "result": {"n": 1}, "details": {"diff": "d"}, '
        '"presentation": {"label": "Edit", "detail": "a.py"}, "error": "no", "errorCode": "E", "durationMs": 2.5, "redacted": 1}'
    )
    assert json.loads(_entry_json(ToolResultEntry.of(FULL)))["metadata"] == {
        "details": {"diff": "d"}, "presentation": {"label": "Edit", "detail": "a.py"}, "content": {"n": 1}, "error": "no",
        "error_code": "E", "arguments": {"path": "a.py"}, "duration_ms": 2.5, "redacted": 1,
    }
    assert list(json.loads(_entry_json(ToolResultEntry.of(FULL)))["metadata"]) == [
        "details", "presentation", "content", "error", "error_code", "arguments", "duration_ms", "redacted"
    ]
    assert list(FULL.model_dump()) == [
        "call_id", "name", "arguments", "result", "details", "presentation", "error", "error_code", "duration_ms", "redacted"
    ]
    # nothing to say: absent, and a stored call without them reads back with the result's defaults
    bare = ToolResult(call_id="c2", name="x")
    assert ToolResultEvent.of(bare).to_wire() == {"type": "tool-result", "id": "c2", "toolCallId": "c2", "toolName": "x", "durationMs": 0.0}
    assert ToolResultEntry.of(bare).model_copy(update={"metadata": ToolResultMetadata()}).results() == [bare]
