"""Files that fight back: 200 MB (sparse, or one line without a newline) read with bounded memory,
read-only files left alone, a file deleted between read and edit, and two dependent edits of one
file in one model turn. (Binary, latin-1, CRLF, BOM, no final newline, modes and concurrent
independent edits: tests/test_ws_edit.py and tests/test_ws_read_write.py.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio
from cogcli.models.scripted import Call, ScriptedModel, Turn
from ws_helpers import call, snapshot

from cogcli.loop.runtime import Agent, Cogitator
from workspace_tools import workspace_tools

MB = 1 << 20

#: runs read_file in a fresh process and reports each result with the peak memory it added
MEASURE = r"""
import json, resource, sys, anyio
from cogcli.contract.invoke import invoke_tool
from workspace_tools import workspace_tools
tools = workspace_tools(sys.argv[1], include_git=False)
call = lambda args: anyio.run(lambda: invoke_tool("read_file", args, tools=tools))
call({"path": "warmup.txt"})
out = {}
for case in json.loads(sys.argv[2]):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = call(case)
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    out[json.dumps(case)] = {"code": r.error_code, "error": r.error, "grew_kb": grew, "result": (r.result or "")[:300], "details": r.details}
print(json.dumps(out))
"""


def test_200_mb_files_are_refused_whole_and_read_in_ranges_with_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "warmup.txt").write_text("hi\n")
    with open(tmp_path / "sparse.bin", "wb") as f:  # 200 MB of NUL bytes, made in no time
        f.truncate(200 * MB)
    with open(tmp_path / "headed.log", "wb") as f:  # 1,000 lines of text, then 200 MB of NUL bytes
        f.write(b"".join(b"entry %d\n" % i for i in range(1, 1001)))
        f.truncate(200 * MB)
    with open(tmp_path / "oneline.txt", "wb") as f:  # 200 MB of text and not one newline
        chunk = "é" * (MB // 2)
        for _ in range(200):
            f.write(chunk.encode())
    cases = [
        {"path": "sparse.bin"},
        {"path": "sparse.bin", "offset": 1, "limit": 10},
        {"path": "headed.log", "offset": 995, "limit": 10},
        {"path": "oneline.txt", "offset": 1, "limit": 1},
    ]
    try:
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(tmp_path), json.dumps(cases)], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
    finally:
        for name in ("sparse.bin", "headed.log", "oneline.txt"):
            (tmp_path / name).unlink()
    assert done.returncode == 0, done.stderr
    results = {json.loads(k)["path"] + str(json.loads(k).get("offset", "")): v for k, v in json.loads(done.stdout).items()}
    whole = results["sparse.bin"]
    assert whole["code"] == "FILE_TOO_LARGE" and "209,715,200 bytes" in whole["error"] and "offset and limit" in whole["error"]
    assert results["sparse.bin1"]["code"] == "FILE_NOT_TEXT"
    assert results["headed.log995"]["code"] == "FILE_NOT_TEXT"  # binary after the range is still found
    line = results["oneline.txt1"]
    assert line["code"] is None and line["details"]["truncated"] and line["details"]["total_lines"] == 1
    assert line["result"].startswith("     1\té")  # the start of the line, cut on a character boundary
    for case, r in results.items():
        assert r["grew_kb"] < 64 * 1024, f"{case}: reading grew the process by {r['grew_kb'] // 1024} MB"


def test_read_only_files_are_not_replaced_and_say_why(tmp_path: Path) -> None:
    target = tmp_path / "locked.py"
    target.write_text("x = 1\n")
    target.chmod(0o444)
    tools = workspace_tools(tmp_path, include_git=False)
    before = snapshot(tmp_path)
    edit = call(tools, "edit_file", path="locked.py", old_text="x = 1", new_text="x = 2")
    write = call(tools, "write_file", path="locked.py", content="x = 3\n")
    for result in (edit, write):
        assert result.error_code == "TOOL_ERROR"
        assert result.error == "could not write locked.py: it is read-only (mode 444); make it writable first if it should change; the file was not changed"
    assert snapshot(tmp_path) == before and stat.S_IMODE(target.stat().st_mode) == 0o444
    assert sorted(os.listdir(tmp_path)) == ["locked.py"]  # no temp file left behind


def test_a_file_deleted_between_read_and_edit_is_not_brought_back(tmp_path: Path) -> None:
    (tmp_path / "gone.py").write_text("x = 1\n")
    tools = workspace_tools(tmp_path, include_git=False)
    assert call(tools, "read_file", path="gone.py").ok
    (tmp_path / "gone.py").unlink()
    result = call(tools, "edit_file", path="gone.py", old_text="x = 1", new_text="x = 2")
    assert result.error_code == "FILE_NOT_FOUND" and "gone.py does not exist" in result.error
    assert os.listdir(tmp_path) == []


def test_two_edits_of_one_file_in_one_turn_run_in_call_order(tmp_path: Path) -> None:
    """The second call's old_text exists only after the first call's edit: it must see it."""
    target = tmp_path / "ops.py"
    for attempt in range(20):
        target.write_text("def add(a, b):\n    return a - b\n")
        first = Call("c1", "edit_file", {"path": "ops.py", "old_text": "return a - b", "new_text": "return a + b"})
        second = Call("c2", "edit_file", {"path": "ops.py", "old_text": "return a + b", "new_text": "return (a + b)"})
        model = ScriptedModel([Turn("Two edits.", [first, second]), Turn("Done.")])
        agent = Agent(name="t", instructions="", model=model, tools=workspace_tools(tmp_path, include_git=False))
        result = anyio.run(lambda: Cogitator().run(agent, input="fix"))
        assert [r.error for r in result.tool_calls] == [None, None], f"attempt {attempt}"
        assert target.read_text() == "def add(a, b):\n    return (a + b)\n"


def test_a_file_name_that_is_not_utf8_does_not_break_the_run(make_repo) -> None:
    """Python reads the name as lone surrogates: the events, the request to the model and the
    thread must still carry it (escaped) instead of failing the run on a UnicodeEncodeError."""
    from cli_helpers import run_cog
    from model_servers import OpenAIServer, Reply, ToolCall
    from rel_helpers import db_check, events_of

    repo = make_repo("calc")
    with open(os.path.join(os.fsencode(repo), b"caf\xe9.txt"), "wb") as f:
        f.write(b"hello\n")
    script = [Reply("", [ToolCall("c1", "list_files", {}), ToolCall("c2", "search_text", {"pattern": "hello"})]), Reply("Found it.")]
    with OpenAIServer(script) as server:
        out = run_cog(["edit", "--json", "--model", "openai:gpt-4o-mini", "Find hello"], repo,
                      env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url})
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    events = events_of(out.stdout)
    listed = next(e for e in events if e["type"] == "tool-result" and e["toolName"] == "list_files")
    assert os.fsdecode(b"caf\xe9.txt") in listed["result"]  # the exact name, as a JSON escape
    read = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "caf\\udce9.txt" in read[0] and "caf\\udce9.txt:1: hello" in read[1]  # visible, sendable
    assert db_check(repo)[events[-1]["threadId"]] == ["user", "assistant", "tool_result", "tool_result", "assistant", "run_end"]


def test_a_write_sweeps_the_temp_files_a_killed_write_left_but_not_fresh_ones(tmp_path: Path) -> None:
    import time

    from workspace_tools.text.textfile import STALE_TEMP_SECONDS, atomic_write

    target = tmp_path / "ops.py"
    target.write_bytes(b"old\n")
    stale = tmp_path / ".ops.py.deadbeef.cogtmp"  # what a SIGKILL mid-write leaves
    fresh = tmp_path / ".ops.py.0badf00d.cogtmp"  # another process writing right now
    other = tmp_path / ".other.py.deadbeef.cogtmp"  # another file's: not ours to judge here
    for p in (stale, fresh, other):
        p.write_bytes(b"partial")
    old = time.time() - STALE_TEMP_SECONDS - 5
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    atomic_write(target, b"new\n", root=tmp_path)
    assert target.read_bytes() == b"new\n"
    assert not stale.exists()
    assert fresh.exists() and other.exists()
