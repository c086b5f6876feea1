"""Hooks on Claude Code's contract (:mod:`cogcli.hooks`), run for real: shell and Python hook scripts
in the person's config (``$XDG_CONFIG_HOME/cog/config.toml``), a library :class:`Session` on a temp
git repository, a scripted model whose requests show what the model was told."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cogcli.settings.load import load_settings
from cogcli.wire.events import BaseEvent, HookEvent
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.session import Session
from cli_helpers import REPLAY

PY = sys.executable


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """``person(toml)`` writes the person's config.toml (under a temp ``XDG_CONFIG_HOME``)."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for name in ("COG_MODEL", "COG_TEST_COMMAND", "COG_MAX_STEPS", "COG_SANDBOX"):
        monkeypatch.delenv(name, raising=False)

    def write(text: str) -> Path:
        path = home / "cog" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return write


def script(folder: Path, name: str, body: str) -> Path:
    """A Python hook script (made executable), run by the shell as ``python3 path``."""
    path = folder / name
    path.write_text(f"#!{PY}\nimport json, os, sys\n{body}")
    path.chmod(0o755)
    return path


def hook_table(event: str, command: str, matcher: str = "", timeout: float = 10, extra: str = "") -> str:
    return f"[[hooks.{event}]]\nmatcher = {json.dumps(matcher)}\ncommand = {json.dumps(command)}\ntimeout = {timeout}\n{extra}\n"


async def run_session(repo: Path, turns: list[Turn], instruction: str = "go", **run: Any) -> tuple[Any, list[BaseEvent], ScriptedModel]:
    events: list[BaseEvent] = []
    model = ScriptedModel(turns)
    session = Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False)
    await session.model.aclose()
    session.model = model
    async with session:
        result = await session.run(instruction, on_event=events.append, **run)
    return result, events, model


def alive(pid: int) -> bool:
    """Running (a killed process its parent has not reaped yet is a zombie: not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def hooks_of(events: list[BaseEvent]) -> list[HookEvent]:
    return [e for e in events if isinstance(e, HookEvent)]


def tool_message(model: ScriptedModel, request: int, call_id: str) -> str:
    return next(m.content for m in model.requests[request] if m.role == "tool" and m.tool_call_id == call_id)


GUARD = """
data = json.load(sys.stdin)
path = data["tool_input"].get("path", "")
if path.startswith("secrets/") or path == "calc/ops.py":
    print(f"{path} is protected: edit calc/extra.py instead", file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.anyio
async def test_a_pre_tool_use_hook_blocks_an_edit_and_the_model_hears_why(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    before = (repo / "calc" / "ops.py").read_bytes()
    guard = script(tmp_path, "guard.py", GUARD)
    person(hook_table("PreToolUse", f"{guard}", matcher="edit_file|write_file"))
    edit = Call("c1", "edit_file", {"path": "calc/ops.py", "old_text": "return a - b", "new_text": "return a + b"})
    result, events, model = await run_session(repo, [Turn("Fixing.", [edit, Call("c2", "read_file", {"path": "calc/ops.py"})]), Turn("Blocked, so done.")])

    assert (repo / "calc" / "ops.py").read_bytes() == before
    told = tool_message(model, 1, "c1")
    assert "PreToolUse hook blocked it" in told and "calc/ops.py is protected: edit calc/extra.py instead" in told
    assert "return a - b" in tool_message(model, 1, "c2")  # read_file: not matched, it ran
    [hook] = hooks_of(events)
    assert (hook.hook_event_name, hook.tool_name, hook.outcome, hook.exit_code, hook.source) == ("PreToolUse", "edit_file", "blocked", 2, "config.toml")
    assert result.tool_calls[0].error_code == "DENIED"
    assert str(result.status) == "completed"


POST_LOG = """
with open(os.environ["HOOK_LOG"], "a") as f:
    f.write(sys.stdin.read().replace("\\n", " ") + "\\n")
"""


@pytest.mark.anyio
async def test_post_tool_use_gets_the_details_of_every_result_ran_failed_invalid_and_denied(
    make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo("calc")
    log = tmp_path / "post.jsonl"
    monkeypatch.setenv("HOOK_LOG", str(log))
    person(hook_table("PostToolUse", f"{script(tmp_path, 'post.py', POST_LOG)}"))
    calls = [
        Call("ok", "read_file", {"path": "calc/ops.py"}),
        Call("missing", "read_file", {"path": "no/such.py"}),
        Call("invalid", "edit_file", {"path": "calc/ops.py"}),
        Call("unknown", "no_such_tool", {}),
        Call("refused", "write_file", {"path": "new.txt", "content": "x"}),
    ]

    async def refuse(approvals: list[Any]) -> dict[str, bool]:
        return {a.tool_call_id: False for a in approvals}

    await run_session(repo, [Turn("", calls), Turn("Done.")], approve=refuse)
    seen = {d["tool_use_id"]: d for d in map(json.loads, log.read_text().splitlines())}
    assert set(seen) == {"ok", "missing", "invalid", "unknown", "refused"}
    ok = seen["ok"]
    assert ok["hook_event_name"] == "PostToolUse" and ok["tool_name"] == "read_file" and ok["cwd"] == str(repo)
    assert "return a - b" in ok["tool_response"]["content"] and ok["tool_response"]["is_error"] is False
    assert ok["details"]["path"] == "calc/ops.py" and ok["presentation"]["label"] and ok["error_code"] is None
    assert ok["session_id"] and "transcript_path" in ok
    assert seen["missing"]["error_code"] == "FILE_NOT_FOUND" and seen["missing"]["tool_response"]["is_error"] is True
    assert seen["invalid"]["error_code"] == "INVALID_ARGUMENTS"
    assert seen["unknown"]["error_code"] == "TOOL_NOT_FOUND"
    assert seen["refused"]["error_code"] == "DENIED" and not (repo / "new.txt").exists()


CLAUDE_STYLE = """
# a hook written for Claude Code, unchanged: it reads the common fields and answers in hookSpecificOutput
input_data = json.load(sys.stdin)
for field in ("session_id", "transcript_path", "cwd", "hook_event_name", "tool_name", "tool_input"):
    assert field in input_data, field
if input_data["hook_event_name"] == "PreToolUse" and "secret" in json.dumps(input_data["tool_input"]):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": "No secrets in this repository (" + input_data["session_id"] + ")"}}))
sys.exit(0)
"""


@pytest.mark.anyio
async def test_a_claude_code_hook_script_works_unchanged(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    person(hook_table("PreToolUse", f"{script(tmp_path, 'claude.py', CLAUDE_STYLE)}", matcher="write_file"))
    calls = [Call("w1", "write_file", {"path": "a.txt", "content": "a secret"}), Call("w2", "write_file", {"path": "b.txt", "content": "fine"})]
    result, events, model = await run_session(repo, [Turn("", calls), Turn("Done.")])
    assert not (repo / "a.txt").exists() and (repo / "b.txt").read_text() == "fine"
    assert f"No secrets in this repository ({result.thread_id})" in tool_message(model, 1, "w1")
    assert sorted((h.tool_call_id, h.outcome) for h in hooks_of(events)) == [("w1", "blocked"), ("w2", "ok")]  # the turn's calls' hooks ran at once


@pytest.mark.anyio
async def test_modified_input_is_validated_again_and_runs(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    rewrite = script(tmp_path, "rewrite.py", """
data = json.load(sys.stdin)
args = dict(data["tool_input"])
if args["path"] == "bad.txt":
    args = {"path": "bad.txt"}  # no content: not valid for write_file
else:
    args["content"] = args["content"].upper()
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": args}}))
""")
    person(hook_table("PreToolUse", str(rewrite), matcher="write_file"))
    calls = [Call("w1", "write_file", {"path": "a.txt", "content": "shout"}), Call("w2", "write_file", {"path": "bad.txt", "content": "x"})]
    seen: list[Any] = []

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        seen.extend(approvals)
        return {a.tool_call_id: True for a in approvals}

    result, events, model = await run_session(repo, [Turn("", calls), Turn("Done.")], approve=approve)
    assert (repo / "a.txt").read_text() == "SHOUT"
    assert [a.arguments["content"] for a in seen] == ["SHOUT"]  # the person approved what runs, previewed anew
    assert "SHOUT" in json.dumps(seen[0].preview)
    assert not (repo / "bad.txt").exists()
    assert result.tool_calls[1].error_code == "INVALID_ARGUMENTS" and "PreToolUse hook changed the arguments" in result.tool_calls[1].error
    updates = [e for e in events if getattr(e, "type", "") == "tool-update" and getattr(e, "arguments", None)]
    assert [u.tool_call_id for u in updates] == ["w1", "w2"]


@pytest.mark.anyio
async def test_additional_context_reaches_the_model(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    ctx = script(tmp_path, "ctx.py", """
data = json.load(sys.stdin)
event = data["hook_event_name"]
if event == "SessionStart":
    print("The team's style: four spaces.")  # plain stdout: context, as in Claude Code
else:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": f"{event} says hi to {data.get('tool_name', data.get('prompt'))}"}}))
""")
    person("".join(hook_table(e, str(ctx)) for e in ("SessionStart", "UserPromptSubmit", "PostToolUse")))
    _, events, model = await run_session(repo, [Turn("", [Call("r", "read_file", {"path": "calc/ops.py"})]), Turn("Done.")], instruction="fix it")
    first = [m.content for m in model.requests[0] if m.role == "user"][-1]
    assert first.startswith("fix it") and "The team's style: four spaces." in first and "UserPromptSubmit says hi to fix it" in first
    assert "[PostToolUse hook] PostToolUse says hi to read_file" in tool_message(model, 1, "r")
    assert sorted(h.hook_event_name for h in hooks_of(events)) == ["PostToolUse", "SessionStart", "UserPromptSubmit"]


@pytest.mark.anyio
async def test_exit_codes_block_a_prompt_or_warn_and_go_on(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    person(hook_table("UserPromptSubmit", "echo 'no deploys on Friday' >&2; exit 2") + hook_table("PreToolUse", "echo broken >&2; exit 1"))
    result, events, model = await run_session(repo, [Turn("Done.")], instruction="deploy")
    assert str(result.status) == "denied" and "no deploys on Friday" in (result.error or "") and not model.requests

    person(hook_table("PreToolUse", "echo broken >&2; exit 1"))
    result, events, model = await run_session(repo, [Turn("", [Call("r", "read_file", {"path": "calc/ops.py"})]), Turn("Done.")])
    [hook] = hooks_of(events)
    assert hook.outcome == "error" and hook.exit_code == 1 and "broken" in (hook.message or "")
    assert result.tool_calls[0].error is None and str(result.status) == "completed"


@pytest.mark.anyio
async def test_a_hook_past_its_timeout_is_killed_with_its_children(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    pids = tmp_path / "pids"
    person(hook_table("PreToolUse", f"sleep 60 & echo $! > {pids}; wait", timeout=0.5))
    started = time.monotonic()
    result, events, _ = await run_session(repo, [Turn("", [Call("r", "read_file", {"path": "calc/ops.py"})]), Turn("Done.")])
    assert time.monotonic() - started < 10
    [hook] = hooks_of(events)
    assert hook.outcome == "error" and hook.timed_out and hook.exit_code is None
    child = int(pids.read_text())
    assert not alive(child)
    assert result.tool_calls[0].error is None  # a failed hook is a warning: the call ran


@pytest.mark.anyio
async def test_a_stop_hook_sends_the_model_back_once(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    stop = script(tmp_path, "stop.py", """
data = json.load(sys.stdin)
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "run the tests before you stop"}))
""")
    person(hook_table("Stop", str(stop)))
    result, _, model = await run_session(repo, [Turn("All done."), Turn("Ran them, done.")])
    assert result.output == "Ran them, done." and str(result.status) == "completed"
    assert "[Stop hook] run the tests before you stop" in model.requests[1][-1].content


@pytest.mark.anyio
async def test_hooks_get_no_credentials_unless_passed_and_a_notification_while_asked(
    make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo("calc")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-hookstest0123456789abcdefABCDEF")
    monkeypatch.setenv("MY_WEBHOOK_TOKEN", "hook-token-0123456789")
    out = tmp_path / "env"
    person(
        hook_table("Notification", f"env > {out}; cat >> {out}", extra='pass_env = ["MY_WEBHOOK_TOKEN"]')
    )

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        return {a.tool_call_id: True for a in approvals}

    await run_session(repo, [Turn("", [Call("w", "write_file", {"path": "a.txt", "content": "x"})]), Turn("Done.")], approve=approve)
    seen = out.read_text()
    assert "OPENAI_API_KEY" not in seen and "MY_WEBHOOK_TOKEN=hook-token-0123456789" in seen
    assert f"CLAUDE_PROJECT_DIR={repo}" in seen and '"notification_type": "permission_prompt"' in seen
    assert "cog needs your approval" in seen


def test_matchers_and_bad_config_are_named(person: Callable[[str], Path], tmp_path: Path) -> None:
    from cogcli.contract.errors import ConfigError
    from cogcli.settings.hook_tables import compile_matcher
    from cogcli.settings.person_file import read_person_config

    def person_hooks() -> Any:
        return read_person_config(tmp_path / "elsewhere").sections.hooks

    exact = compile_matcher("edit_file|write_file")
    assert exact("edit_file") and not exact("multi_edit_file") and not exact("read_file")
    assert compile_matcher("")("anything") and compile_matcher("*")("x")
    mcp = compile_matcher("^mcp__.*")
    assert mcp("mcp__memory__read") and not mcp("read_file")
    hostile = compile_matcher("(a+)+$")
    started = time.monotonic()
    assert not hostile("a" * 5000 + "b")  # RE2: linear, no backtracking
    assert time.monotonic() - started < 1
    with pytest.raises(ValueError, match="lookahead"):
        compile_matcher("(?=x)edit")
    person('[[hooks.PostToolUse]]\nmatcher = "Edit|Write"\nhooks = [{type = "command", command = "fmt.sh", timeout = 5}, {command = "log.sh"}]\n')
    assert [(h.matcher, h.command, h.timeout) for h in person_hooks()["PostToolUse"]] == [("Edit|Write", "fmt.sh", 5.0), ("Edit|Write", "log.sh", 60.0)]
    person('[[hooks.PreToolUse]]\ncommand = "x"\ntimeout = -1\n')
    with pytest.raises(ConfigError, match=r"hooks\.PreToolUse\.0\.timeout .*config\.toml"):
        person_hooks()
    person('[[hooks.PreTool]]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="PreTool"):
        person_hooks()


@pytest.mark.anyio
async def test_pre_compact_runs_before_a_requested_compaction(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    seen = tmp_path / "compact.json"
    person(hook_table("PreCompact", f"cat > {seen}", matcher="manual"))
    model = ScriptedModel([Turn("", [Call("r", "read_file", {"path": "calc/ops.py"})]), Turn("Read it."), Turn("A summary.")])
    session = Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False)
    await session.model.aclose()
    session.model = model
    async with session:
        result = await session.run("read ops")
        assert not seen.exists()  # nothing was compacted in the run
        compacted = await session.compact(result.thread_id)
    assert compacted is not None
    told = json.loads(seen.read_text())
    assert (told["hook_event_name"], told["trigger"], told["session_id"]) == ("PreCompact", "manual", result.thread_id)


async def run_with(repo: Path, turns: list[Turn], settings: Any, **run: Any) -> tuple[Any, list[BaseEvent], ScriptedModel]:
    events: list[BaseEvent] = []
    model = ScriptedModel(turns)
    session = Session.open(settings, cwd=repo, interactive=False)
    await session.model.aclose()
    session.model = model
    async with session:
        result = await session.run("go", on_event=events.append, **run)
    return result, events, model


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_mcp_servers_tools_fire_the_hooks_too(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    log = tmp_path / "post.jsonl"
    server = f"{PY} {Path(__file__).with_name('mcp_progress_server.py')}"
    person(hook_table("PreToolUse", "echo 'fail is off limits' >&2; exit 2", matcher="^fa") + hook_table("PostToolUse", f"cat >> {log}; echo >> {log}", matcher="count|fail"))
    settings = load_settings(repo, model=REPLAY, sandbox="off", mcp_servers=[server])
    calls = [Call("n", "count", {"n": 2}), Call("f", "fail", {"message": "boom"})]
    result, events, model = await run_with(repo, [Turn("", calls), Turn("Done.")], settings)
    seen = {d["tool_use_id"]: d for d in map(json.loads, filter(None, log.read_text().splitlines()))}
    assert seen["n"]["tool_name"] == "count" and seen["n"]["error_code"] is None
    assert seen["n"]["tool_response"]["content"] == {"counted": 2} and seen["n"]["presentation"]["label"] == "Count items"
    assert seen["f"]["error_code"] == "DENIED"  # blocked before it ran: PostToolUse still hears of it
    assert "fail is off limits" in tool_message(model, 1, "f")
    assert sorted((h.hook_event_name, h.tool_name, h.outcome) for h in hooks_of(events)) == [
        ("PostToolUse", "count", "ok"), ("PostToolUse", "fail", "ok"), ("PreToolUse", "fail", "blocked")]


@pytest.mark.anyio
async def test_allow_skips_the_approval_ask_asks_and_refuses_with_nobody_to_ask(make_repo: Callable[..., Path], person: Callable[[str], Path]) -> None:
    repo = make_repo("calc")
    decide = """python3 -c 'import json,sys; d=json.load(sys.stdin); p=d["tool_input"]["path"]; print(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow" if p.startswith("docs/") else "ask", "permissionDecisionReason": "check " + p}}))'"""
    person(hook_table("PreToolUse", decide, matcher="write_file|read_file"))
    asked: list[str] = []

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        asked.extend(a.tool_call_id for a in approvals)
        return {a.tool_call_id: True for a in approvals}

    calls = [Call("d", "write_file", {"path": "docs/a.md", "content": "x"}), Call("r", "read_file", {"path": "calc/ops.py"})]
    result, _, _ = await run_session(repo, [Turn("", calls), Turn("Done.")], approve=approve)
    assert asked == ["r"]  # docs/ allowed without asking; a read (no side effects) asked because the hook said ask
    assert (repo / "docs" / "a.md").exists() and all(r.error is None for r in result.tool_calls)

    result, _, model = await run_session(repo, [Turn("", [Call("r", "read_file", {"path": "calc/ops.py"})]), Turn("Done.")])
    assert result.tool_calls[0].error_code == "DENIED" and "check calc/ops.py, and this run asks nobody" in tool_message(model, 1, "r")


@pytest.mark.anyio
async def test_continue_false_stops_the_run_and_a_hooks_words_are_redacted(
    make_repo: Callable[..., Path], person: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo("calc")
    key = "sk-proj-hookleak0123456789abcdefABCDEF"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    stop = f"""echo '{{"continue": false, "stopReason": "budget spent", "hookSpecificOutput": {{"additionalContext": "key {key}"}}}}'"""
    person(hook_table("PostToolUse", stop, matcher="read_file"))
    turns = [Turn("", [Call("r", "read_file", {"path": "calc/ops.py"})]), Turn("", [Call("r2", "read_file", {"path": "calc/ops.py"})]), Turn("Done.")]
    result, events, model = await run_session(repo, turns)
    assert str(result.status) == "denied" and "a hook stopped the run: budget spent" in (result.error or "")
    assert len(model.requests) == 1 and [r.call_id for r in result.tool_calls] == ["r"]
    assert key not in result.tool_calls[0].result and "[REDACTED]" in result.tool_calls[0].result
    assert all(key not in e.model_dump_json() for e in events)


@pytest.mark.anyio
async def test_an_abort_kills_a_running_pre_tool_use_hook(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    from cogcli.contract.context import AbortSignal

    repo = make_repo("calc")
    pids = tmp_path / "pids"
    person(hook_table("PreToolUse", f"echo $$ > {pids}; sleep 30", timeout=60))
    signal = AbortSignal()
    model = ScriptedModel([Turn("", [Call("r", "read_file", {"path": "calc/ops.py"})]), Turn("Done.")])
    session = Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo, interactive=False)
    await session.model.aclose()
    session.model = model

    def on_event(event: BaseEvent) -> None:
        if getattr(event, "type", "") == "tool-call-end":
            signal.abort()  # Ctrl-C as the call is about to reach its hook

    started = time.monotonic()
    async with session:
        result = await session.run("go", on_event=on_event, signal=signal)
    assert time.monotonic() - started < 10 and str(result.status) == "aborted"
    assert result.tool_calls[0].error_code == "ABORTED"
    assert not pids.exists() or not alive(int(pids.read_text()))


@pytest.mark.anyio
async def test_pre_compact_runs_before_a_runs_own_compaction(tmp_path: Path) -> None:
    """The library path (``Cogitator.run(…, hooks=…)``) without a session: big results pass the window."""
    from runtime_helpers import big

    from cogcli.wire.events import CompactionEvent
    from cogcli.settings.hook_tables import HookSpec
    from cogcli.hooks.engine import HookSet
    from cogcli.loop.runtime import Agent, Cogitator

    seen = tmp_path / "compact.jsonl"
    hooks = HookSet(tmp_path, {"PreCompact": [HookSpec(matcher="auto", command=f"cat >> {seen}; echo >> {seen}")]})
    turns = [Turn("", [Call(f"b{i}", "big", {"size": 8000})]) for i in range(4)] + [Turn("Done.")]
    agent = Agent(name="t", instructions="be brief", model=ScriptedModel(turns), tools=[big], context_window=2048)
    events: list[BaseEvent] = []
    result = await Cogitator().run(agent, input="go", on_event=events.append, hooks=hooks)
    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    told = [json.loads(line) for line in seen.read_text().splitlines() if line]
    assert compactions and len(told) == len(compactions) and str(result.status) == "completed"
    assert {(t["hook_event_name"], t["trigger"], t["reason"]) for t in told} == {("PreCompact", "auto", "threshold")}
    kinds = [e.type for e in events if e.type in ("hook", "compaction")]
    assert kinds[:2] == ["hook", "compaction"]  # told before it is made


BASH_VALIDATOR = """
# Claude Code's documented Bash validator, pointed at cog's run_command: tool_input.command is the same field
import re
data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
issues = [message for pattern, message in ((r"\\brm\\s+-rf\\b", "rm -rf is not allowed here; delete files one by one"),) if re.search(pattern, command)]
if issues:
    print("\\n".join(f"• {m}" for m in issues), file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.anyio
async def test_a_command_validator_blocks_run_command(make_repo: Callable[..., Path], person: Callable[[str], Path], tmp_path: Path) -> None:
    repo = make_repo("calc")
    person(hook_table("PreToolUse", str(script(tmp_path, "bash_validator.py", BASH_VALIDATOR)), matcher="run_command"))
    calls = [Call("rm", "run_command", {"command": "rm -rf calc"}), Call("ok", "run_command", {"command": "echo hello"})]
    result, _, model = await run_session(repo, [Turn("", calls), Turn("Done.")])
    assert (repo / "calc" / "ops.py").exists()
    assert "• rm -rf is not allowed here" in tool_message(model, 1, "rm")
    assert result.tool_calls[1].error is None and "hello" in tool_message(model, 1, "ok")
