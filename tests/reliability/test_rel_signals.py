"""Issue 13 §5: SIGINT and SIGTERM always end ``cog edit`` with exactly one ``finish`` within 2 s,
even while a CPU-bound synchronous tool runs that never looks at its abort flag. Reproduced first:
the run wrote its ``finish`` but the process never exited — Python waits at exit for the worker
thread the spinning tool runs in (it can stop a task, not a thread)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import cog_env

HERE = Path(__file__).resolve().parent


def _cassette(path: Path) -> str:
    lines = [
        {"type": "cassette", "schemaVersion": 1, "model": "test:spin"},
        {"type": "turn", "text": "", "toolCalls": [{"id": "c1", "name": "spin", "arguments": {"seconds": 120}}],
         "usage": {"inputTokens": 1, "outputTokens": 1}, "stopReason": "tool_calls"},
        {"type": "turn", "text": "done", "toolCalls": [], "usage": {"inputTokens": 1, "outputTokens": 1}, "stopReason": "stop"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return f"replay:{path}"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_a_run_stuck_in_a_spinning_sync_tool_within_two_seconds(tmp_path: Path, signum: int, code: int) -> None:
    (tmp_path / ".git").mkdir()
    model = _cassette(tmp_path / "spin.jsonl")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "spin_driver.py"), "edit", "--json", "--sandbox", "off", "--model", model, "spin"],
        cwd=tmp_path, env=cog_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(json.loads(line))
        if lines[-1]["type"] == "tool-call-end":
            break
    time.sleep(0.5)  # the tool is spinning now
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        rest, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("cog did not exit within 30 s of the signal")
    elapsed = time.monotonic() - sent
    events = lines + [json.loads(line) for line in rest.splitlines()]
    assert [e["type"] for e in events].count("finish") == 1 and events[-1]["type"] == "finish"
    assert events[-1]["status"] == "aborted"
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert elapsed < 2.0, f"exited {elapsed:.2f} s after the signal"
