"""``cog thread import``: sessions of other agents (fixtures/sessions/, shaped as Claude Code, Codex
CLI and ATIF producers write them) read into threads cog continues — as text, no call re-run,
thinking dropped, credentials redacted, hostile input bounded and refused with a clear error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from cli_helpers import run_cog

from cogcli.compaction import ContextBudget
from cogcli.contract.errors import ConfigError
from cogcli.models import ToolCallRequest
from cogcli.threads import imported as imp
from cogcli.threads.atif import trajectory
from cogcli.threads.entries import (
    AssistantEntry,
    ModelToolResult,
    ToolResultEntry,
    UserEntry,
)
from cogcli.threads.history import build_history
from cogcli.threads.import_readers import read_atif, sniff
from cogcli.threads.store import ThreadStore

SESSIONS = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
KEY = "sk-ant-api03-" + "Q9x" * 30 + "AA"  # an Anthropic key's shape


def texts(found: imp.Imported) -> str:
    return "\n".join(text for _, text in found.messages)


@pytest.mark.parametrize(("name", "fmt", "agent", "session", "call"), [
    ("claude-code.jsonl", "claude-code", "Claude Code", "5f1c2a9e-7b3d-4e8a-9c61-2d4b8f0e3a17", "[Claude Code's tool call, not run here: Bash (toolu_02Bash)]"),
    ("codex-rollout.jsonl", "codex", "Codex CLI", "019a4b2c-5d6e-7f80-9a1b-2c3d4e5f6a7b", "[Codex CLI's tool call, not run here: apply_patch (call_Patch2)]"),
    ("atif.json", "atif", "mini-swe-agent", "mini-swe-run-42", "[mini-swe-agent's tool call, not run here: bash_command (call_1)]"),
])
def test_each_format_is_recognised_and_read_as_alternating_text(name: str, fmt: str, agent: str, session: str, call: str) -> None:
    path = SESSIONS / name
    assert sniff(path.read_text()[:65536]) == fmt
    found = imp.import_file(path)
    origin = found.origin
    assert (origin.format, origin.agent, origin.session_id, origin.skipped_lines) == (fmt, agent, session, 0)
    # the person's words on the user's side; the agent's words, calls and what they returned on its own
    assert [role for role, _ in found.messages] == ["user", "assistant"]
    assert found.messages[0][1] == "Why does add fail in calc/ops.py?"
    assert call in texts(found) and "a + b" in found.messages[-1][1]
    text = texts(found)
    # thinking and reasoning belong to another provider; Claude Code's abandoned branch, subagent
    # and notes, and Codex's environment and instructions messages are not the conversation
    for absent in ("SECRET", "ABANDONED", "SIDECHAIN", "local-command-caveat", "environment_context", "permissions instructions",
                   "You are a helpful assistant", "EqQB", "gAAAA"):
        assert absent not in text


def test_results_keep_their_tool_and_failures_say_so() -> None:
    claude = texts(imp.import_file(SESSIONS / "claude-code.jsonl"))
    assert "[result of Claude Code's Read (toolu_01Read)]\n     1→def add(a, b):" in claude
    assert "[error from Claude Code's Bash (toolu_02Bash)]\nF\nFAILED tests/test_ops.py::test_add" in claude
    codex = texts(imp.import_file(SESSIONS / "codex-rollout.jsonl"))  # the shell's JSON envelope unwrapped
    assert "[result of Codex CLI's shell (call_Shell1)]\ndef add(a, b):\n    return a - b" in codex


def test_cogs_own_atif_export_reads_back() -> None:
    store = ThreadStore()
    info = store.create_thread(title="t")
    call = ToolCallRequest(id="c1", name="read_file", arguments={"path": "calc/ops.py"})
    store.append(info.id, [UserEntry(content="Why?", message_id="m1"), AssistantEntry(content="Reading.", tool_calls=[call]),
                           ToolResultEntry(tool_results=[ModelToolResult(call_id="c1", name="read_file", content="return a - b")]),
                           AssistantEntry(content="It subtracts.")])
    doc = trajectory(info.id, store.entries(info.id))
    found = imp.conversation(read_atif(json.dumps(doc)), "atif", "x.json")
    assert found.origin.agent == "cog" and found.origin.session_id == info.id
    assert found.messages == [
        ("user", "Why?"),
        ("assistant", ('Reading.\n\n[cog\'s tool call, not run here: read_file (c1)]\n{"path": "calc/ops.py"}\n\n'
                       "[result of cog's read_file (c1)]\nreturn a - b\n\nIt subtracts.")),
    ]


def hostile(tmp_path: Path) -> Path:
    """A Claude Code transcript with terminal escapes, a 5 MB tool result holding a key at each
    end, a lone surrogate, malformed lines and a session id and cwd that would climb out of a folder."""
    meta = {"sessionId": "../../../../tmp/evil\x1b]0;pwned\x07", "cwd": "/home/x/\x1b[2J../../etc", "isSidechain": False}
    huge = f"export ANTHROPIC_API_KEY={KEY}\n" + "x" * (5 * 1024 * 1024) + f"\nlast line {KEY} end"
    records = [
        {**meta, "type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "run it\x1b[31m red\x00\x07\r\nok \ud800"}},
        {**meta, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash\x1b[8m", "input": {"command": "env"}}]}},
        {**meta, "type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": huge}]}},
        {**meta, "type": "assistant", "uuid": "a2", "parentUuid": "u2", "message": {"role": "assistant", "content": "done"}},
    ]
    lines = [json.dumps(records[0]), "not json at all", json.dumps(records[1]), "[1, 2]", '{"type": "user", "trunc',
             json.dumps(records[2]), json.dumps(records[3])]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_hostile_content_is_cleaned_redacted_and_bounded(tmp_path: Path) -> None:
    path = hostile(tmp_path)
    assert path.stat().st_size > 5 * 1024 * 1024 and path.read_text().count(KEY) == 2  # the attack is in the file
    found = imp.import_file(path)
    text = texts(found)
    origin = found.origin
    assert origin.format == "claude-code" and origin.skipped_lines == 3 and origin.cut == 1 and origin.redacted == 2
    assert KEY not in text and "sk-ant-api03" not in text and text.count("[REDACTED]") == 2
    assert not any(ord(c) < 32 and c not in "\n\t" for c in text)  # no escape, NUL, bell or carriage return
    assert "\ud800" not in text and "run it[31m red\nok \ufffd" in text
    assert max(len(t) for _, t in found.messages) < imp.MESSAGE_CHARS + 500
    assert "characters left out on import" in text and "last line [REDACTED] end" in text  # the head and the tail kept
    assert "\x1b" not in origin.session_id and "\x1b" not in (origin.cwd or "")


def test_a_first_line_longer_than_the_sniffed_head_is_still_recognised(tmp_path: Path) -> None:
    path = tmp_path / "pasted.jsonl"
    record = {"parentUuid": None, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "look: " + "z" * 200_000}}
    path.write_text(json.dumps(record) + "\n")
    found = imp.import_file(path)
    assert found.origin.format == "claude-code" and found.origin.cut == 1 and found.messages[0][1].startswith("look: zzz")
    codex = tmp_path / "rollout.jsonl"
    codex.write_text(json.dumps({"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "z" * 200_000}]}}) + "\n")
    assert imp.import_file(codex).origin.format == "codex"


def test_without_the_redactor_the_key_would_reach_the_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The defence is the redactor on the way in: with it made a no-op the key lands in the thread."""
    from cogcli.secrets import redactor

    monkeypatch.setattr(redactor, "redact", lambda text, **_: (text, 0))
    assert KEY in texts(imp.import_file(hostile(tmp_path)))


def test_the_origin_is_text_never_a_path(tmp_path: Path) -> None:
    store_dir = tmp_path / "ws"
    store_dir.mkdir()
    found = imp.import_file(hostile(tmp_path))
    made = imp.entries(found)
    store = ThreadStore(store_dir / "threads.db")
    info = store.create_thread(title=imp.title(found))
    store.append(info.id, made)
    assert info.id.startswith("thr_") and "evil" not in info.id
    assert sorted(p.name for p in store_dir.iterdir()) == ["threads.db", "threads.db-shm", "threads.db-wal"]
    assert not (tmp_path / "evil").exists() and not Path("/tmp/evil").exists()
    origin = imp.origin_of(store.entries(info.id))
    assert origin is not None and origin.session_id == "../../../../tmp/evil]0;pwned"


def test_what_the_model_reads_of_an_imported_thread() -> None:
    found = imp.import_file(SESSIONS / "claude-code.jsonl")
    history = build_history("system", [s for s in _stored(imp.entries(found))])
    assert [m.role for m in history] == ["system", "user", "user", "assistant"]
    assert "brought over from Claude Code (session 5f1c2a9e" in history[1].content and "none was run again here" in history[1].content
    assert all(not m.tool_calls and not m.reasoning for m in history)  # no call the model could think it may make


def test_a_huge_session_keeps_its_first_message_and_fits_the_context_budget(tmp_path: Path) -> None:
    lines = [json.dumps({"type": "user", "message": {"role": "user", "content": "The task: fix add."}})]
    for n in range(400):
        lines.append(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": f"turn {n} " + "w" * 4000}}))
        lines.append(json.dumps({"type": "user", "message": {"role": "user", "content": f"more {n}, please"}}))
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines))
    found = imp.import_file(path, "claude-code")
    assert found.origin.dropped > 0 and sum(len(t) for _, t in found.messages) <= imp.TOTAL_CHARS + 1000
    assert found.messages[0][1] == "The task: fix add." and "earlier messages of Claude Code's session left out" in found.messages[1][1]
    assert found.messages[-1][1] == "more 399, please"  # the newest kept
    history = build_history("You are cog.", _stored(imp.entries(found)))
    budget = ContextBudget(window=60_000)
    assert budget.estimate(history) > 60_000
    sent = anyio.run(budget.before_request, history)
    assert budget.estimate(sent) <= 60_000 * 0.8
    assert sent[1].content == history[1].content  # the note stays first, as kept_head promises


def test_files_that_are_not_session_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = SESSIONS / "codex-rollout.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="is a symbolic link"):
        imp.import_file(link)
    with pytest.raises(ConfigError, match="is a FIFO"):
        imp.import_file(fifo)  # refused before any open: reading it would wait for a writer forever
    with pytest.raises(ConfigError, match="is a folder"):
        imp.import_file(tmp_path)
    monkeypatch.setattr(imp, "MAX_FILE_BYTES", 1000)
    with pytest.raises(ConfigError, match=r"is 3,\d+ bytes; cog thread import reads at most 1,000"):
        imp.import_file(target)
    other = tmp_path / "notes.jsonl"
    other.write_text('{"role": "user", "content": "hi"}\n')
    with pytest.raises(ConfigError, match="none of the formats.*atif.*claude-code.*codex"):
        imp.import_file(other)
    with pytest.raises(ConfigError, match="--format must be one of atif, claude-code, codex"):
        imp.import_file(target, "gemini")


def test_cli_refuses_clearly(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "bad.txt").write_text("hello\n")
    out = run_cog(["thread", "import", "-C", ".", str(fifo)], tmp_path, timeout=60)
    assert out.returncode == 2 and "is a FIFO" in out.stderr and "Traceback" not in out.stderr
    out = run_cog(["thread", "import", "-C", ".", "bad.txt"], tmp_path, timeout=60)
    assert out.returncode == 2 and "atif" in out.stderr and "claude-code" in out.stderr and "codex" in out.stderr


def _stored(entries: list) -> list:
    from cogcli.threads.entries import StoredEntry

    return [StoredEntry(seq=n, created_at="2026-01-01T00:00:00Z", entry=e) for n, e in enumerate(entries)]


@pytest.mark.slow  # an import and one cog edit run against a loopback model: a few seconds
def test_an_imported_claude_code_session_is_continued_with_edit_thread(make_repo) -> None:
    from cli_helpers import json_lines
    from model_servers import AnthropicServer, Reply

    repo = make_repo("calc")
    out = run_cog(["thread", "import", "--json", str(SESSIONS / "claude-code.jsonl")], repo)
    assert out.returncode == 0, out.stderr
    thread = json.loads(out.stdout)["threadId"]
    with AnthropicServer([Reply("Picking up: add subtracts, so I will fix it.")]) as server:
        edit = run_cog(["edit", "--json", "--model", "anthropic:claude-sonnet-4-5", "--thread", thread, "Go on and fix it."], repo,
                       env={"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url})
        assert edit.returncode == 0, edit.stderr
        body = server.requests[-1].body
    assert json_lines(edit.stdout)[-1]["threadId"] == thread
    sent = json.dumps(body["messages"], ensure_ascii=False)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    first, agent, last = (" ".join(b.get("text", "") for b in m["content"]) for m in body["messages"])
    assert "brought over from Claude Code" in first and "Why does add fail in calc/ops.py?" in first
    assert "[Claude Code's tool call, not run here: Bash (toolu_02Bash)]" in agent and "[error from Claude Code's Bash (toolu_02Bash)]" in agent
    assert last.endswith("Go on and fix it.")
    assert '"tool_use"' not in sent and '"tool_result"' not in sent and '"type": "thinking"' not in sent and "SECRET" not in sent
    offered = {t["name"] for t in body["tools"]}
    assert "read_file" in offered and not offered & {"Bash", "Read"}  # the other agent's tools are history, never offered
    shown = run_cog(["thread", "show", thread], repo)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == ("── imported from Claude Code · session 5f1c2a9e-7b3d-4e8a-9c61-2d4b8f0e3a17 · in /home/ana/calc · "
                        "2 messages, 2 tool calls as text ──")
    assert lines[1].startswith("── run 1 · imp_") and "Picking up: add subtracts" in shown.stdout
    listed = run_cog(["thread", "list"], repo)
    assert "imported from Claude Code: Why does add fail in calc/ops.py?" in listed.stdout


def test_an_older_codex_rollout_and_an_empty_session(tmp_path: Path) -> None:
    """Codex wrote its items one a line, after a line of facts, before the {timestamp, type, payload} lines."""
    old = tmp_path / "rollout-2025-05-01.jsonl"
    old.write_text("\n".join(json.dumps(r) for r in [
        {"id": "0a1b-old", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files."}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "call_9"},
        {"type": "function_call_output", "call_id": "call_9", "output": '{"output": "boom", "metadata": {"exit_code": 2}}'},
    ]) + "\n")
    found = imp.import_file(old)
    assert found.origin.format == "codex" and found.origin.session_id == "0a1b-old"
    assert found.messages[1][1].endswith("[error from Codex CLI's shell (call_9)]\nboom\n(exit code 2)")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"type": "summary", "summary": "nothing", "leafUuid": "x"}) + "\nnot json\n")
    with pytest.raises(ConfigError, match=r"holds no conversation to import \(1 malformed lines skipped\)"):
        imp.import_file(empty)
