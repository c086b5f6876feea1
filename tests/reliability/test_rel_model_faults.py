"""Model server faults through the whole CLI: `cog edit --json` against a loopback OpenAI server
that refuses, fails, sends bad calls or cuts the stream. Each ends in a clear error (the model
reads INVALID_ARGUMENTS / TOOL_NOT_FOUND and retries; transport failures end the run with
MODEL_STREAM_ERROR and exit 1), never a traceback, with the thread kept and readable.

The client's retry rules themselves are unit-tested in tests/test_models_openai.py; the run loop's
with an in-process model in tests/test_runtime.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cog
from model_servers import Cut, Fail, OpenAIServer, Reply, ToolCall, unused_port
from rel_helpers import db_check, events_of, results_of, thread_status

FIX = "Fix the failing test"
MODEL = "openai:gpt-4o-mini"
READ = ToolCall("c_ok", "read_file", {"path": "calc/ops.py"})


def cog_edit(repo: Path, base_url: str) -> tuple[Any, list[dict[str, Any]]]:
    out = run_cog(["edit", "--json", "--model", MODEL, FIX], repo, env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base_url})
    assert "Traceback" not in out.stderr, out.stderr
    return out, events_of(out.stdout)


def tool_messages(server: OpenAIServer, request: int) -> list[str]:
    """What the model read of each tool call, as the ``request``-th request sent it."""
    return [m["content"] for m in server.requests[request].body["messages"] if m["role"] == "tool"]


def test_a_refused_connection_on_this_machine_is_said_once_and_stores_nothing(make_repo) -> None:
    """A model server on this machine that is not running (issue 49): one check before the run, no
    retries, exit 2 with how to start one, and no thread stored. (A remote provider that refuses is
    retried and kept: tests/test_models_openai.py.)"""
    repo = make_repo("calc")
    out, events = cog_edit(repo, f"http://127.0.0.1:{unused_port()}/v1")
    assert out.returncode == 2, out.stderr
    assert "cannot connect" in out.stderr and "connection refused" in out.stderr and "retry" not in out.stderr
    assert events[-1]["type"] == "finish" and events[-1]["threadId"] == "" and events[-1]["steps"] == 0
    assert not (repo / ".cog" / "threads.db").exists()


def test_two_500s_then_an_answer_completes_after_retries(make_repo) -> None:
    repo = make_repo("calc")
    script = [Fail(500, "overloaded", retry_after="0"), Fail(500, "overloaded", retry_after="0"), Reply("", [READ]), Reply("Looked.")]
    with OpenAIServer(script) as server:
        out, events = cog_edit(repo, server.base_url)
    assert out.returncode == 0, out.stderr
    assert len(server.requests) == 4
    assert out.stderr.count("retry ") == 2 and "HTTP 500" in out.stderr
    assert [r.get("errorCode") for r in results_of(events)] == [None]
    assert events[-1]["status"] == "completed"
    assert db_check(repo)[events[-1]["threadId"]] == ["user", "assistant", "tool_result", "assistant", "run_end"]


def test_invalid_json_arguments_are_read_by_the_model_which_retries(make_repo) -> None:
    repo = make_repo("calc")
    broken = ToolCall("c_bad", "read_file", '{"path": "calc/ops.py"')  # the closing brace never came
    with OpenAIServer([Reply("", [broken]), Reply("", [READ]), Reply("Read it.")]) as server:
        out, events = cog_edit(repo, server.base_url)
    assert out.returncode == 0, out.stderr
    first, second = results_of(events)
    assert first["errorCode"] == "INVALID_ARGUMENTS" and "not valid JSON" in first["error"]
    end = next(e for e in events if e["type"] == "tool-call-end" and e["id"] == "c_bad")
    assert end["arguments"] == '{"path": "calc/ops.py"'  # the raw text, as the model sent it
    assert tool_messages(server, 1) == [f"Error: {first['error']}"]
    assert second.get("errorCode") is None and "def add" in second["result"]
    assert db_check(repo)[events[-1]["threadId"]].count("tool_result") == 2


def test_an_unknown_tool_is_read_by_the_model_which_retries(make_repo) -> None:
    repo = make_repo("calc")
    with OpenAIServer([Reply("", [ToolCall("c_rm", "delete_everything", {})]), Reply("", [READ]), Reply("Read it.")]) as server:
        out, events = cog_edit(repo, server.base_url)
    assert out.returncode == 0, out.stderr
    first, second = results_of(events)
    assert first["errorCode"] == "TOOL_NOT_FOUND"
    assert "unknown tool 'delete_everything'" in first["error"] and "read_file" in first["error"]
    assert tool_messages(server, 1) == [f"Error: {first['error']}"]
    assert second.get("errorCode") is None


def test_a_stream_cut_mid_tool_call_ends_the_run_and_runs_nothing(make_repo) -> None:
    repo = make_repo("calc")
    before = (repo / "calc" / "ops.py").read_bytes()
    edit = ToolCall("c_cut", "edit_file", {"path": "calc/ops.py", "old_text": "return a - b", "new_text": "return a + b"})
    # role chunk, the call's head, two argument fragments — then the connection drops
    with OpenAIServer([Reply("", [READ]), Cut(Reply("", [edit]), after=4)]) as server:
        out, events = cog_edit(repo, server.base_url)
    assert out.returncode == 1
    assert len(server.requests) == 2  # a stream that broke after it started is not retried
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "MODEL_STREAM_ERROR" and "broke mid-turn" in error["message"]
    cut = results_of(events)[-1]
    assert cut["toolCallId"] == "c_cut" and cut["errorCode"] == "MODEL_STREAM_ERROR" and "was not run" in cut["error"]
    assert (repo / "calc" / "ops.py").read_bytes() == before
    finish = events[-1]
    assert finish["status"] == "error"
    # the completed first step is kept; the cut call (arguments incomplete) is not
    assert db_check(repo)[finish["threadId"]] == ["user", "assistant", "tool_result", "run_end"]
    shown = run_cog(["thread", "show", finish["threadId"]], repo)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr
    assert "Read file  calc/ops.py" in shown.stdout and shown.stdout.endswith(" = 19 tokens\n") and "\nFailed · 2 steps · " in shown.stdout


@pytest.mark.parametrize("fragment", [4096, 256])
def test_a_megabyte_of_arguments_gets_a_short_clear_error(make_repo, fragment: int) -> None:
    repo = make_repo("calc")
    huge = ToolCall("c_huge", "read_file", {"path": "x" * (1 << 20)})
    with OpenAIServer([Reply("", [huge], chunk=fragment), Reply("", [READ]), Reply("Read it.")]) as server:
        out, events = cog_edit(repo, server.base_url)
    assert out.returncode == 0, out.stderr
    first, second = results_of(events)
    assert first["errorCode"] == "INVALID_ARGUMENTS"
    assert first["error"].startswith("path is 1,048,576 characters long") and len(first["error"]) < 400
    assert len(first["presentation"]["detail"]) <= 201  # the row shows a cut path
    read = tool_messages(server, 1)
    assert read == [f"Error: {first['error']}"]  # the model reads the short message, not its own megabyte
    assert second.get("errorCode") is None
    deltas = "".join(e["argsTextDelta"] for e in events if e["type"] == "tool-call-delta" and e["id"] == "c_huge")
    assert len(deltas) == len(huge.text)  # every fragment was passed on
    assert db_check(repo)[events[-1]["threadId"]].count("tool_result") == 2
