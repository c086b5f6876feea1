"""The `cog edit --json` stream CI can trust: each line leaves through a pipe as it happens, every
line is numbered and stamped in UTC, and one `finish` line ends the run with its whole outcome."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli_helpers import REPLAY, cog_argv, cog_env, json_lines, run_cog

LEGS = [f"tests/test_relay.py::test_leg_{n}" for n in (1, 2, 3, 4)]


def write_cassette(path: Path, turns: list[dict[str, Any]]) -> str:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}, *({"type": "turn", **t} for t in turns)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return f"replay:{path}"


def test_each_tool_update_reaches_a_pipe_reader_before_the_next_test_can_finish(make_repo, tmp_path: Path) -> None:
    repo = make_repo("relay")
    model = write_cassette(
        tmp_path / "relay.jsonl",
        [{"toolCalls": [{"id": "c1", "name": "run_tests", "arguments": {}}]}, {"text": "The relay ran."}],
    )
    env = cog_env()
    env.pop("PYTHONUNBUFFERED")  # cog's own flushing is under test, not Python's -u
    proc = subprocess.Popen(
        [*cog_argv(), "edit", "--json", "--model", model, "Run the tests"],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    updates: list[str] = []
    lines: list[dict[str, Any]] = []
    for raw in proc.stdout:  # a pipe reader, line by line
        event = json.loads(raw)
        lines.append(event)
        if event["type"] == "tool-update":
            updates.append(event["content"])
            test_id, outcome = event["content"].rsplit(" ", 1)
            if outcome == "passed" and test_id in LEGS[:-1]:
                # only now may the next leg finish: open its gate
                (repo / f"gate-{LEGS.index(test_id) + 1}").touch()
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.wait(timeout=120) == 0, err

    assert updates == [f"{leg} passed" for leg in LEGS]  # every leg passed: no update was held back
    result = next(e for e in lines if e["type"] == "tool-result")
    assert {t["id"]: t["outcome"] for t in result["details"]["tests"]} == dict.fromkeys(LEGS, "passed")
    assert lines[-1]["type"] == "finish" and lines[-1]["status"] == "completed"


def test_every_line_is_numbered_and_stamped_and_one_finish_carries_the_outcome(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "--json", "--model", REPLAY, "Fix the failing test"], repo)
    assert out.returncode == 0, out.stderr
    events = json_lines(out.stdout)

    start, finish = events[0], events[-1]
    assert start["type"] == "start" and isinstance(start["schemaVersion"], int) and start["schemaVersion"] >= 1
    assert [e["seq"] for e in events] == list(range(len(events)))
    stamps = []
    for e in events:
        assert e["timestamp"].endswith("Z"), e["timestamp"]  # ISO 8601, UTC
        moment = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
        assert moment.utcoffset() == UTC.utcoffset(None)
        stamps.append(moment)
    assert stamps == sorted(stamps)

    assert [e["type"] for e in events].count("finish") == 1
    assert finish["messageId"] == start["messageId"] and finish["threadId"] == start["threadId"]
    assert finish["status"] == "completed" and finish["steps"] == 5
    assert set(finish["usage"]) == {"inputTokens", "outputTokens", "totalTokens"}
    assert finish["usage"]["totalTokens"] == finish["usage"]["inputTokens"] + finish["usage"]["outputTokens"] > 0
    assert isinstance(finish["durationMs"], float) and finish["durationMs"] > 0
    assert finish["filesChanged"] == [{"path": "calc/ops.py", "added": 1, "removed": 1}]
