"""``--format github`` escaping, as properties: whatever the model or a tool writes, the runner
(:mod:`tests.security.workflow_log`, written from GitHub's rules) obeys only cog's own commands,
and cog's annotations carry their text and properties exactly."""

from __future__ import annotations

import io
import re

from hypothesis import given, settings, strategies as st

from cogcli.render.github import GithubRenderer, command, plain
from cogcli.wire.events import StartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent, ToolCallStartEvent, ToolResultEvent
from security.workflow_log import WorkflowLog, parse

#: what makes a line a command, and the whitespace the runner trims
HOSTILE = st.lists(st.sampled_from(list(":#[]%,= \t\r\n\xa0\u2028\u3000\x85ab-") + ["::", "##[", "::stop-commands::x", "::x::", "\n::error::"]),
                   max_size=30).map("".join)
COG_OWN = {"group", "endgroup", "stop-commands", "error"}


def rendered(text: str, output: str) -> str:
    out = io.StringIO()
    renderer = GithubRenderer(out)
    for event in [StartEvent(thread_id="t", message_id="m"), TextStartEvent(id="x"), TextDeltaEvent(id="x", delta=text), TextEndEvent(id="x"),
                  ToolCallStartEvent(id="c", tool_name="run_command"),
                  ToolResultEvent(id="c", tool_call_id="c", tool_name="run_command", result=output, presentation={"label": output[:30] or "x", "detail": text[:30]},
                                  details={"diff": output})]:
        renderer.handle(event)
    renderer.close()
    return out.getvalue()


@settings(max_examples=300, deadline=None)
@given(HOSTILE, HOSTILE)
def test_no_text_the_model_or_a_tool_writes_is_obeyed_by_the_runner(text: str, output: str) -> None:
    log = WorkflowLog().read(rendered(text, output))
    tokens = {c.data for c in log.commands if c.name == "stop-commands"}
    assert log.names() <= COG_OWN, log.commands
    assert all(re.fullmatch(r"[0-9a-f]{32}", t) for t in tokens)
    assert log.stopped is None  # commands resumed: the rest of the step may use them


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_a_plain_line_is_never_a_command(line: str) -> None:
    for piece in line.replace("\r", "\n").split("\n"):
        assert parse(plain(piece)) is None


@settings(max_examples=300, deadline=None)
@given(HOSTILE, HOSTILE)
def test_an_annotation_is_one_command_whose_text_and_properties_come_back_exactly(message: str, file: str) -> None:
    line = command("error", message, file=file, title="t")
    found = WorkflowLog().read(line).commands
    assert [c.name for c in found] == ["error"]
    if "%" not in message + file:  # the runner's unescaping of % sequences is its own affair
        assert found[0].properties == {"file": file.replace("##[", "##\\["), "title": "t"}
        assert found[0].data == message.replace("##[", "##\\[")


def test_each_run_of_text_gets_its_own_unguessable_token() -> None:
    out = rendered("hello\n::add-mask::x", "line one\n  ::error::pwned")
    tokens = re.findall(r"^::stop-commands::(\w+)$", out, re.M)
    assert len(tokens) == len(set(tokens)) >= 2
    assert out.splitlines()[-1] == "Unfinished · 0 steps"  # the last line is still the headline, after commands resumed
