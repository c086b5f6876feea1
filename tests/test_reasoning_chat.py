"""The model's reasoning drawn dimmed as it streams on a terminal: the text renderer (``cog edit``,
``cog chat``, ``cog thread show``) prints each line of a block once it is complete, and on a
terminal shows the line still streaming in place; ``cog chat`` on a real pty against a loopback
Anthropic server held mid-thought shows the thinking before the model has finished it."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pexpect
from cli_helpers import cog_argv, cog_env, repo_with
from model_servers import AnthropicServer, Reply, Thinking

from cogcli.render.text import TextRenderer
from cogcli.render.words import ReasoningLines, reasoning_lines
from cogcli.wire.events import FinishEvent, ReasoningDeltaEvent, ReasoningEndEvent, ReasoningStartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent

DIM, RESET = "\x1b[2m", "\x1b[0m"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_printed_as_they_complete_not_at_the_blocks_end() -> None:
    out = io.StringIO()
    renderer = TextRenderer(out, tty=False, color=False)
    renderer.handle(ReasoningStartEvent(id="r1"))
    renderer.handle(ReasoningDeltaEvent(id="r1", delta="\nRead ops"))
    assert out.getvalue() == ""  # nothing complete yet (off a terminal nothing is drawn in place)
    renderer.handle(ReasoningDeltaEvent(id="r1", delta=".py first.\n\n\nThen "))
    assert out.getvalue().splitlines() == ["thinking…", "  Read ops.py first."]
    renderer.handle(ReasoningDeltaEvent(id="r1", delta="fix add.\n\n"))
    renderer.handle(ReasoningEndEvent(id="r1"))
    renderer.handle(ReasoningStartEvent(id="r2"))
    renderer.handle(ReasoningEndEvent(id="r2"))  # encrypted: nothing to draw
    for e in (TextStartEvent(id="t1"), TextDeltaEvent(id="t1", delta="Done."), TextEndEvent(id="t1")):
        renderer.handle(e)
    assert out.getvalue().splitlines() == ["thinking…", "  Read ops.py first.", "", "", "  Then fix add.", "Done."]


def test_streamed_lines_are_the_lines_of_the_whole_block() -> None:
    text = "\n\nFirst line.  \n\n  indented\nlast"
    for size in (1, 3, 7, len(text)):
        block = ReasoningLines()
        lines = [line for i in range(0, len(text), size) for line in block.feed(text[i : i + size])] + block.end()
        assert lines == reasoning_lines(text) == ["thinking…", "  First line.", "", "    indented", "  last"]
    assert reasoning_lines("") == reasoning_lines("\n \n") == []


def test_on_a_terminal_the_line_still_streaming_shows_in_place_dimmed() -> None:
    out, clock = io.StringIO(), Clock()
    renderer = TextRenderer(out, tty=True, color=True, width=40, clock=clock)
    renderer.handle(ReasoningDeltaEvent(id="r1", delta="Read ops"))
    assert out.getvalue() == f"{DIM}thinking…{RESET}\n{DIM}  Read ops{RESET}"  # the row, then the partial line in place
    clock.now += 0.01
    renderer.handle(ReasoningDeltaEvent(id="r1", delta=".py"))  # within 100 ms: held back, then drawn by the timer
    assert out.getvalue().endswith(f"{DIM}  Read ops{RESET}")
    clock.now += 0.2
    renderer._draw_pending()
    assert out.getvalue().endswith(f"\r\x1b[2K{DIM}  Read ops.py{RESET}")
    renderer.handle(ReasoningDeltaEvent(id="r1", delta=" first, then fix the long function that adds two numbers\nok"))
    # the line completed: the in-place line erased, the whole line printed, the next one in place
    assert out.getvalue().endswith(f"\r\x1b[2K{DIM}  Read ops.py first, then fix the long function that adds two numbers{RESET}\n{DIM}  ok{RESET}")
    clock.now += 0.2
    renderer.handle(ReasoningDeltaEvent(id="r1", delta=" " + "x" * 60 + " the latest words"))
    last = out.getvalue().rsplit("\r\x1b[2K", 1)[1]
    assert last == f"{DIM}  …{'x' * 19} the latest words{RESET}"  # the latest words, in the terminal's 39 columns
    renderer.handle(ReasoningEndEvent(id="r1"))
    renderer.handle(FinishEvent(status="completed", steps=1, message_id="m", thread_id="t"))
    renderer.close()
    assert f"{DIM}  ok {'x' * 60} the latest words{RESET}\n" in out.getvalue()


def test_cog_chat_draws_the_thinking_dimmed_while_the_model_still_thinks(tmp_path: Path) -> None:
    import threading

    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    hold = threading.Event()
    thought = Thinking("The person asks about x.\nRead a.py before answering.", signature="EqQBsigCHAT==")
    with AnthropicServer([Reply("x is one.", thinking=(thought,), hold=hold, chunk=6)]) as server:
        env = cog_env({"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url, "COG_REASONING": "medium",
                       "PROMPT_TOOLKIT_NO_CPR": "1"}, ci=False)
        env.pop("NO_COLOR", None)
        argv = cog_argv()
        child = pexpect.spawn(argv[0], [*argv[1:], "chat", "--model", "anthropic:claude-sonnet-4-5"], cwd=str(repo), env=env,
                              encoding="utf-8", timeout=60, dimensions=(40, 140))
        try:
            child.expect("cog>")
            child.send("what is x?\r")
            # mid-thought (the server holds the block's signature): the row and the first line are
            # printed dimmed, the line still streaming is shown in place as far as it is safe to
            # show (a last word that could be the start of a credential waits for what follows it)
            child.expect(re.escape(f"{DIM}thinking…{RESET}"))
            child.expect(re.escape(f"{DIM}  The person asks about x.{RESET}"))
            child.expect(re.escape(f"{DIM}  Read a.py before{RESET}"))
            assert not child.expect([re.escape("answering"), pexpect.TIMEOUT], timeout=1.5) == 0
            hold.set()
            child.expect(re.escape(f"\r\x1b[2K{DIM}  Read a.py before answering.{RESET}\r\n"))  # printed for good at the block's end
            child.expect("x is one.")
            child.expect(r"Done · 1 step")
            child.expect("cog>")
            child.sendeof()
            child.expect(pexpect.EOF)
        finally:
            hold.set()
            if child.isalive():
                child.terminate(force=True)
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
