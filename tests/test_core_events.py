"""The wire protocol: camelCase lines, unknown types skipped, the exported JSON Schema."""

from __future__ import annotations

import json

import pytest

from cogcli.wire.events import (
    SCHEMA_VERSION,
    EVENT_TYPES,
    FinishEvent,
    StartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
    UnknownEventType,
    Usage,
    events_json_schema,
    parse_event,
)
from cogcli.contract.presentation import ToolPresentation


def test_events_are_camel_case_on_the_wire_and_snake_case_in_python() -> None:
    event = ToolResultEvent(
        id="c1",
        tool_call_id="c1",
        tool_name="edit_file",
        result={"path": "a.py"},
        details={"diff": "..."},
        presentation=ToolPresentation(label="Edit file", detail="a.py"),
        seq=3,
        timestamp="2026-12-02T00:00:00.000Z",
    )
    wire = event.to_wire()
    assert wire["type"] == "tool-result" and wire["toolCallId"] == "c1" and wire["toolName"] == "edit_file"
    assert "error" not in wire and "errorCode" not in wire  # absent, not null
    assert parse_event(json.dumps(wire)) == event


def test_start_carries_the_schema_version() -> None:
    assert StartEvent(message_id="m", thread_id="t").to_wire()["schemaVersion"] == SCHEMA_VERSION


def test_unknown_types_are_told_apart_from_malformed_lines() -> None:
    with pytest.raises(UnknownEventType):
        parse_event('{"type": "from-the-future", "x": 1}')
    with pytest.raises(ValueError, match="not JSON"):
        parse_event('{"type": "finish", ')
    with pytest.raises(ValueError, match="invalid finish event"):
        parse_event('{"type": "finish", "status": "completed"}')
    # unknown fields are allowed (fields are only ever added)
    update = parse_event('{"type": "tool-update", "toolCallId": "c", "content": "x", "newField": 1}')
    assert isinstance(update, ToolUpdateEvent) and update.content == "x"


def test_the_json_schema_covers_every_event_type() -> None:
    schema = events_json_schema()
    text = json.dumps(schema)
    for kind in EVENT_TYPES:
        assert f'"{kind}"' in text
    assert schema["discriminator"]["propertyName"] == "type"
    finish = schema["$defs"]["FinishEvent"]
    assert {"messageId", "threadId", "status"} <= set(finish["required"])


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=1, output_tokens=2, total_tokens=3) + Usage(input_tokens=10, output_tokens=20, total_tokens=30)
    assert total == Usage(input_tokens=11, output_tokens=22, total_tokens=33)
    assert FinishEvent(message_id="m", thread_id="t", status="completed", usage=total).to_wire()["usage"]["inputTokens"] == 11
