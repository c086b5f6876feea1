"""``openai:`` over the Responses API end to end: ``cog edit --json --reasoning high`` against a
loopback Responses server (the SDK's own event types; every request body checked against its
params and the API's ``store: false`` rules) — the reasoning shown, kept in the thread and sent back
encrypted across tool calls and ``--thread``; the native ``apply_patch`` call run as cog's
apply_patch (the file fixed, the diff in the result, undone by ``cog undo``); the run recorded to
a cassette and replayed with the same events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import json_lines, run_cog
from model_servers import ToolCall
from responses_server import Answer, ResponsesServer

from cogcli.threads.store import AssistantEntry, ThreadStore

FIX = "Fix the failing test"
READ = ToolCall("call_r1", "read_file", {"path": "calc/ops.py"})
UPDATE = {"type": "update_file", "path": "calc/ops.py",
          "diff": "@@ def add(a: int, b: int) -> int:\n     \"\"\"Return the sum of a and b.\"\"\"\n-    return a - b\n+    return a + b\n"}
SCRIPT = [
    Answer("", [READ], summary=["add subtracts?", "Read ops.py first."]),
    Answer("", patches=[("call_p1", UPDATE)], summary=["It returns a - b: patch it."]),
    Answer("add returns a + b now.", summary=["Done."]),
    Answer("Yes: add returns a + b."),
]


def model_turns(lines: list[dict]) -> list[str]:
    """The run's model-written event types, each run of deltas as one."""
    kinds = ("reasoning-start", "reasoning-end", "text-start", "text-end", "tool-call-start", "tool-call-end")
    return [line["type"] for line in lines if line["type"] in kinds]


@pytest.mark.slow
def test_reasoning_and_native_apply_patch_over_the_responses_api(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    cassette = tmp_path / "responses.jsonl"
    with ResponsesServer(SCRIPT) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "COG_OPENAI_API": "responses"}
        out = run_cog(["edit", "--json", "--reasoning", "high", "--record", str(cassette), "--model", "openai:gpt-5.2", FIX], repo, env=env)
        assert out.returncode == 0, out.stderr
        lines = json_lines(out.stdout)
        thread = lines[-1]["threadId"]
        again = run_cog(["edit", "--json", "--thread", thread, "--reasoning", "high", "--model", "openai:gpt-5.2", "Is add fixed?"], repo, env=env)
        assert again.returncode == 0, again.stderr
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()

    # the reasoning shown as it streamed, a blank line between summary parts
    shown = "".join(line["delta"] for line in lines if line["type"] == "reasoning-delta")
    assert shown == "add subtracts?\n\nRead ops.py first.It returns a - b: patch it.Done."
    assert model_turns(lines)[:4] == ["reasoning-start", "reasoning-end", "tool-call-start", "tool-call-end"]
    # the native call ran as cog's apply_patch: its diff in the result's details
    patched = next(line for line in lines if line["type"] == "tool-result" and line["toolName"] == "apply_patch")
    assert patched["toolCallId"] == "call_p1" and not patched.get("error")
    assert "+    return a + b" in patched["details"]["diff"]
    assert lines[-1]["usage"]["outputTokens"] >= 7 and lines[-1]["filesChanged"][0]["path"] == "calc/ops.py"

    # the thread keeps each reasoning item as it came: id, summary parts, encrypted content
    with ThreadStore(repo / ".cog" / "threads.db") as store:
        kept = [e.entry for e in store.entries(thread) if isinstance(e.entry, AssistantEntry)]
    first = kept[0].reasoning[0]
    assert (first.format, first.id, first.data, first.model_extra["summary"]) == (
        "openai-responses", "rs_1_0", "gAAAA-enc-1-0", ["add subtracts?", "Read ops.py first."])
    assert kept[1].tool_calls[0].arguments == {"operation": UPDATE}

    # every request after the first sends the earlier turns' reasoning back first in each turn, the
    # native call as the apply_patch_call it was and its output (the server checked each one)
    third, thread_request = server.requests[2].body["input"], server.requests[3].body["input"]
    kinds = [item.get("type", "message") for item in third]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output", "reasoning", "apply_patch_call", "apply_patch_call_output"]
    assert third[5] == {"type": "apply_patch_call", "call_id": "call_p1", "status": "completed", "operation": UPDATE}
    assert third[6]["status"] == "completed" and third[6]["call_id"] == "call_p1"
    assert thread_request[: len(third)] == third
    assert [item["id"] for item in thread_request if item.get("type") == "reasoning"] == ["rs_1_0", "rs_2_0", "rs_3_0"]
    assert all(r.body["store"] is False and r.body["tools"][1:] != [] for r in server.requests)
    assert {"type": "apply_patch"} in server.requests[0].body["tools"]

    # the recorded run replays with the same events, and fixes the file the same way
    replayed = run_cog(["edit", "--json", "--model", f"replay:{cassette}", FIX], make_repo("calc", dest="again"))
    assert replayed.returncode == 0, replayed.stderr
    replay_lines = json_lines(replayed.stdout)
    assert model_turns(replay_lines) == model_turns(lines)
    assert "".join(line["delta"] for line in replay_lines if line["type"] == "reasoning-delta") == shown
    recorded = [json.loads(line) for line in cassette.read_text().splitlines()[1:]]
    assert recorded[1]["toolCalls"][0]["arguments"] == {"operation": UPDATE}
    assert recorded[0]["reasoning"][0]["data"] == "gAAAA-enc-1-0"

    # cog undo puts the file back as it was
    undo = run_cog(["undo"], repo)
    assert undo.returncode == 0, undo.stderr
    assert "return a - b" in (repo / "calc" / "ops.py").read_text().split("def sub")[0]
