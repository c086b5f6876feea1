"""Issue 13 §6: errors, not tracebacks. Each case was reproduced first against the code before the
fix: ``cog render`` of a line nested 100,000 deep (RecursionError), the same in a cassette and in a
model's SSE stream; ``.cog`` existing as a file and a full disk at thread creation (ExceptionGroup,
empty stdout, no finish); a threads.db row with invalid JSON (``cog thread show``); ``--json``
failures before the run that left stdout empty; a run that went on applying edits after its stdout
was closed (``| head -1``) and exited 0."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPLAY, cog_argv, cog_env, json_lines, run_cog
from model_servers import OpenAIServer, Raw

OPS = Path("calc") / "ops.py"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    return make_repo("calc")


def _error_then_finish(stdout: str) -> tuple[dict[str, Any], dict[str, Any]]:
    events = json_lines(stdout)
    assert [e["type"] for e in events] == ["error", "finish"], events
    assert [e["seq"] for e in events] == [0, 1] and events[1]["status"] == "error"
    return events[0], events[1]


def test_cog_render_of_a_line_nested_100000_deep_names_the_line(tmp_path: Path) -> None:
    good = json.dumps({"type": "error", "message": "fine", "seq": 0, "timestamp": "2026-12-02T00:00:00Z"})
    (tmp_path / "run.jsonl").write_text(f'{{"type": "start", "x": {DEEP}}}\n{good}\n')
    done = run_cog(["render", str(tmp_path / "run.jsonl")], tmp_path)
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert "line 1: not JSON: nested too deeply to read" in done.stderr
    assert "fine" in done.stdout + done.stderr  # the next line is still drawn


def test_a_cassette_nested_100000_deep_is_a_configuration_error_with_json_lines(calc: Path) -> None:
    cassette = calc / "deep.jsonl"
    cassette.write_text(json.dumps({"type": "cassette", "schemaVersion": 1, "model": "x"}) + f'\n{{"type": "turn", "text": {DEEP}}}\n')
    done = run_cog(["edit", "--json", "--model", f"replay:{cassette}", "fix"], calc)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    error, _ = _error_then_finish(done.stdout)
    assert "deep.jsonl:2" in error["message"] and "nested too deeply" in error["message"]


def test_a_model_stream_nested_100000_deep_ends_the_run_with_an_error(calc: Path) -> None:
    deep_chunk = Raw(f"data: {{\"choices\": {DEEP}}}\n\n")
    with OpenAIServer([deep_chunk] * 6) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-0000"}
        done = run_cog(["edit", "--json", "--model", "openai:gpt-4o", "fix"], calc, env=env, timeout=300)
    # (stderr may still show asyncio's note on closing the abandoned stream generator: the model
    # clients do not aclose() post_sse when a chunk is unreadable — reported to the coordinator)
    assert "RecursionError" not in done.stderr
    events = json_lines(done.stdout)
    assert events[-1]["type"] == "finish" and events[-1]["status"] == "error" and done.returncode == 1
    assert any(e["type"] == "error" and "unreadable stream" in e["message"] for e in events)


def test_cog_as_a_file_is_an_error_line_and_a_finish(calc: Path) -> None:
    (calc / ".cog").write_text("in the way\n")
    done = run_cog(["edit", "--json", "--model", REPLAY, "fix"], calc)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr
    error, _ = _error_then_finish(done.stdout)
    assert ".cog is a file" in error["message"] and "move the file away" in error["message"]
    assert b"return a - b" in (calc / OPS).read_bytes()  # nothing ran


def test_a_full_disk_at_thread_creation_is_an_error_line_and_a_finish(calc: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from cogcli.commands.edit import EditOptions, run_edit
    from cogcli.settings.options import SettingFlags
    from cogcli.threads.store import ThreadStore

    def full(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ThreadStore, "create_thread", full)
    monkeypatch.setenv("CI", "1")
    code = run_edit(EditOptions(instruction="fix", root=calc, flags=SettingFlags(model=REPLAY, sandbox="off"), format="jsonl"))
    out = capsys.readouterr()
    assert code == 1
    error, _ = _error_then_finish(out.out)
    assert "database or disk is full" in error["message"] and "free some disk space" in error["message"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["edit", "--json", "fix"], "no model configured"),
        (["edit", "--json", "--model", "replay:missing.jsonl", "fix"], "cassette not found"),
        (["edit", "--json", "--model", REPLAY, "--mcp", "/nonexistent/mcp-server", "fix"], "failed to start"),
        (["edit", "--json", "--model", REPLAY, "   "], "the instruction is empty"),
    ],
)
def test_json_failures_before_the_run_still_print_an_error_and_a_finish(calc: Path, args: list[str], words: str) -> None:
    done = run_cog(args, calc)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    error, finish = _error_then_finish(done.stdout)
    assert words in error["message"] and finish["threadId"] == ""


def test_thread_show_of_a_row_with_invalid_json_names_it(calc: Path) -> None:
    run = run_cog(["edit", "--json", "--model", REPLAY, "--sandbox", "off", "fix"], calc)
    thread_id = json_lines(run.stdout)[0]["threadId"]
    db = sqlite3.connect(calc / ".cog" / "threads.db")
    db.execute("UPDATE entries SET data = '{\"kind\": \"user\", not json' WHERE thread_id = ? AND seq = 2", (thread_id,))
    db.commit()
    db.close()
    done = run_cog(["thread", "show", thread_id], calc)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"thread {thread_id} cannot be shown: its entry 2 is not valid JSON" in done.stderr


def test_a_run_whose_stdout_is_closed_stops(calc: Path) -> None:
    """``cog edit --json … | head -1``: the reader goes after one line; the run aborts (its thread
    says so), its edit never lands, and it exits 141 (128 + SIGPIPE), not 0."""
    proc = subprocess.Popen(
        [*cog_argv(), "edit", "--json", "--model", REPLAY, "--sandbox", "off", "fix"],
        cwd=calc, env=cog_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "stdout was closed" in err
    assert b"return a - b" in (calc / OPS).read_bytes()
    db = sqlite3.connect(calc / ".cog" / "threads.db")
    (status,) = db.execute("SELECT status FROM threads WHERE id = ?", (first["threadId"],)).fetchone()
    db.close()
    assert status == "aborted"


def test_tool_arguments_nested_100000_deep_are_an_invalid_arguments_error(calc: Path) -> None:
    cassette = calc / "deepargs.jsonl"
    lines = [
        {"type": "cassette", "schemaVersion": 1, "model": "x"},
        {"type": "turn", "text": "", "toolCalls": [{"id": "c1", "name": "read_file", "arguments": '{"path": ' + DEEP + "}"}],
         "usage": {"inputTokens": 1, "outputTokens": 1}, "stopReason": "tool_calls"},
        {"type": "turn", "text": "done", "toolCalls": [], "usage": {"inputTokens": 1, "outputTokens": 1}, "stopReason": "stop"},
    ]
    cassette.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_cog(["edit", "--json", "--model", f"replay:{cassette}", "fix"], calc)
    assert "Traceback" not in done.stderr
    results = [e for e in json_lines(done.stdout) if e["type"] == "tool-result"]
    assert results and results[0]["errorCode"] == "INVALID_ARGUMENTS"
