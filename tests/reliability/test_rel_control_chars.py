"""Issue 13 §6: terminal control sequences from files, models and tools are shown escaped by every
renderer; cog's own colours appear only on a terminal. Reproduced first: ``cog tool read_file`` of
a file holding OSC 52 (writes the clipboard) and ``ESC[2J`` (clears the screen), and a model whose
reply holds them, printed them raw — also off a terminal, where the README promises no control codes."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_cog

from cogcli.wire.events import FinishEvent, TextDeltaEvent, TextEndEvent, TextStartEvent, ToolCallStartEvent, ToolResultEvent
from cogcli.render.github import GithubRenderer
from cogcli.render.text import TextRenderer
from cogcli.shown.visible import visible

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CLEAR = "\x1b[2J\x1b[H"
HOSTILE = f"look {OSC52}here{CLEAR} and \u202eevil\x9b31m\r!"


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text and "\r" not in text, repr(text)


def test_visible_escapes_every_control_and_is_idempotent() -> None:
    shown = visible(HOSTILE)
    assert shown == "look \\x1b]52;c;ZWNobyBwd25lZA==\\x07here\\x1b[2J\\x1b[H and \\u202eevil\\x9b31m\\x0d!"
    assert visible(shown) == shown and visible("tab\tand\nnewline") == "tab\tand\nnewline"
    assert visible("\x1b[1mx\x1b[0m", keep=("\x1b[1m", "\x1b[0m")) == "\x1b[1mx\x1b[0m"


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    repo = make_repo("calc")
    (repo / "evil.txt").write_text(f"line one {OSC52}\nline two {CLEAR}\n")
    return repo


def test_cog_tool_read_file_prints_a_hostile_file_escaped(calc: Path) -> None:
    done = run_cog(["tool", "read_file", "path=evil.txt"], calc)
    assert done.returncode == 0, done.stderr
    _no_raw_controls(done.stdout)
    assert "\\x1b]52;c;" in done.stdout and "\\x1b[2J" in done.stdout


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_cog_edit_prints_a_hostile_model_reply_escaped(calc: Path, tmp_path: Path, fmt: str) -> None:
    cassette = tmp_path / "evil.jsonl"
    cassette.write_text(
        json.dumps({"type": "cassette", "schemaVersion": 1, "model": "test:evil"}) + "\n"
        + json.dumps({"type": "turn", "text": HOSTILE, "toolCalls": [], "usage": {"inputTokens": 1, "outputTokens": 1}, "stopReason": "stop"}) + "\n"
    )
    summary = tmp_path / "summary.md"
    done = run_cog(["edit", "--format", fmt, "--model", f"replay:{cassette}", "hi"], calc, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 0, done.stderr
    _no_raw_controls(done.stdout)
    assert "\\x1b]52;c;" in done.stdout
    if fmt == "github":
        _no_raw_controls(summary.read_text())


def _events() -> list:
    return [
        TextStartEvent(id="t1"),
        TextDeltaEvent(id="t1", delta=HOSTILE),
        TextEndEvent(id="t1"),
        ToolCallStartEvent(id="c1", tool_name="read_file", presentation={"label": "Read file", "detail": f"a{CLEAR}.py"}),
        ToolResultEvent(id="c1", tool_call_id="c1", tool_name="read_file", result="x", error=f"bad {OSC52}", error_code="TOOL_ERROR",
                        presentation={"label": "Read file", "detail": f"a{CLEAR}.py"}),
        FinishEvent(message_id="m", thread_id="t", status="completed"),
    ]


def test_on_a_terminal_only_cogs_own_colours_get_through() -> None:
    out = io.StringIO()
    renderer = TextRenderer(out, tty=True, color=True)
    for event in _events():
        renderer.handle(event)
    renderer.close()
    text = out.getvalue()
    assert "\x1b[1m" in text and "\x1b[31m" in text  # cog's own colours
    assert "\x1b]" not in text and "\x1b[2J" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b]52;c;" in text and "\\x1b[2J" in text


def test_off_a_terminal_there_is_no_control_code_at_all() -> None:
    for renderer_of in (lambda o: TextRenderer(o, tty=False, color=False), lambda o: GithubRenderer(o)):
        out = io.StringIO()
        renderer = renderer_of(out)
        for event in _events():
            renderer.handle(event)
        renderer.close()
        _no_raw_controls(out.getvalue())
