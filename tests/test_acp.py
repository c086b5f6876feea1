"""`cog acp` end to end: the ACP SDK's own client side (`acp.spawn_agent_process` and a `Client`)
drives the real `cog acp` subprocess on a fixture repository, the model a cassette."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema as acp_schema
from acp.helpers import text_block

from cli_helpers import CASSETTE, cog_argv, cog_env, run_cog
from conftest import init_git_repo

pytestmark = pytest.mark.anyio

FIX = "Fix the failing test in calc"


def write_cassette(path: Path, turns: list[dict[str, Any]]) -> Path:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}]
    lines += [{"type": "turn", **turn} for turn in turns]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


class Editor:
    """What an editor does: records every update, answers permission requests with ``answer``
    (an option id; None: "cancelled"), and runs ``on_update`` hooks."""

    def __init__(self, answer: str | None = "allow_once") -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[acp_schema.RequestPermissionRequest] = []
        self.answer = answer
        self.seen = anyio.Event()
        self.watch: Any = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if self.watch is not None and self.watch(update):
            self.seen.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> acp_schema.RequestPermissionResponse:
        self.permissions.append(acp_schema.RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options))
        if self.answer == "never":  # a person who walks away: only a cancel ends the turn
            self.seen.set()
            await anyio.sleep_forever()
        if self.answer is None:
            return acp_schema.RequestPermissionResponse(outcome=acp_schema.DeniedOutcome(outcome="cancelled"))
        return acp_schema.RequestPermissionResponse(outcome=acp_schema.AllowedOutcome(outcome="selected", option_id=self.answer))

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]

    def calls(self) -> dict[str, dict[str, Any]]:
        """Each call as the editor would draw it: the tool_call, then every update folded in."""
        drawn: dict[str, dict[str, Any]] = {}
        for _, u in self.updates:
            if u.session_update == "tool_call":
                drawn[u.tool_call_id] = {"start": u, "updates": [], "title": u.title, "kind": u.kind, "status": u.status}
            elif u.session_update == "tool_call_update":
                call = drawn[u.tool_call_id]
                call["updates"].append(u)
                call["status"] = u.status or call["status"]
                call["title"] = u.title or call["title"]
        return drawn

    def text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))


class Agent:
    """`cog acp` under the SDK's client connection."""

    def __init__(self, editor: Editor, cwd: Path, *args: str, stderr: Path) -> None:
        self.editor, self.cwd, self.args, self.stderr_path = editor, cwd, args, stderr

    async def __aenter__(self) -> acp.core.ClientSideConnection:
        self.stderr = self.stderr_path.open("w")
        argv = cog_argv()
        self.cm = acp.spawn_agent_process(
            self.editor, argv[0], *argv[1:], "acp", *self.args, env=cog_env(ci=False), cwd=self.cwd, transport_kwargs={"stderr": self.stderr}
        )
        conn, self.process = await self.cm.__aenter__()
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.protocol_version == 1
        return conn

    async def __aexit__(self, *exc: Any) -> None:
        await self.cm.__aexit__(*exc)
        self.stderr.close()


EDIT = {
    "toolCalls": [
        {"id": "e1", "name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": "return a - b\n\n\ndef sub", "new_text": "return a + b\n\n\ndef sub"}}
    ]
}


def _repo(make_repo: Any) -> Path:
    return make_repo("calc")


async def test_initialize_says_what_cog_supports(make_repo, tmp_path: Path) -> None:
    editor = Editor()
    argv = cog_argv()
    with (tmp_path / "err").open("w") as err:
        async with acp.spawn_agent_process(editor, argv[0], *argv[1:], "acp", env=cog_env(), cwd=_repo(make_repo), transport_kwargs={"stderr": err}) as (conn, _):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    caps = init.agent_capabilities
    assert init.protocol_version == 1 and caps is not None
    assert caps.load_session is True
    assert caps.prompt_capabilities is not None and caps.prompt_capabilities.embedded_context is True
    assert caps.prompt_capabilities.image is True and caps.prompt_capabilities.audio is False
    assert init.agent_info is not None and init.agent_info.name == "cog"


async def test_a_turn_draws_calls_with_kinds_titles_locations_progress_and_the_diff(make_repo, tmp_path: Path) -> None:
    repo = _repo(make_repo)
    editor = Editor()
    # the demo's turns without its second test run (the tests run once, before the fix)
    turns = [json.loads(line) for line in CASSETTE.read_text().splitlines()[1:]]
    cassette = write_cassette(tmp_path / "fix.jsonl", [{k: v for k, v in t.items() if k != "type"} for t in turns[:3]] + [{"text": "Fixing the operator in add: done."}])
    async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        assert session.session_id.startswith("thr_")
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block(FIX)])
    assert response.stop_reason == "end_turn"
    assert response.usage is not None and response.usage.input_tokens > 0
    assert "Fixing the operator" in editor.text()

    calls = editor.calls()
    read, tests, edit = (calls[f"call_{i}"] for i in range(1, 4))
    assert (read["kind"], read["title"]) == ("read", "Read file · calc/ops.py")
    assert read["start"].locations[0].path == str(repo / "calc" / "ops.py")  # absolute
    assert (tests["kind"], edit["kind"]) == ("execute", "edit")
    assert edit["title"].startswith("Edit file · calc/ops.py")
    assert all(c["status"] == "completed" for c in calls.values())

    # the tests' progress: one in_progress update per test, its text, before the result
    progress = [u for u in tests["updates"] if u.status == "in_progress" and u.content]
    assert any("test_add" in u.content[0].content.text for u in progress)
    first_run = tests["updates"][-1]
    assert first_run.status == "completed" and "failed" in first_run.content[0].content.text.lower()

    # the edit's result: what the model read, and the diff of the changed region
    done = edit["updates"][-1]
    diffs = [c for c in done.content if c.type == "diff"]
    assert len(diffs) == 1
    assert diffs[0].path == str(repo / "calc" / "ops.py")
    assert "return a - b" in diffs[0].old_text and "return a + b" in diffs[0].new_text
    assert "return a + b" not in diffs[0].old_text
    assert done.locations[0].path == str(repo / "calc" / "ops.py") and done.locations[0].line >= 1
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()
    assert "Traceback" not in (tmp_path / "err").read_text()


async def test_a_session_is_a_thread_loaded_again_redrawn_and_continued(make_repo, tmp_path: Path) -> None:
    repo = _repo(make_repo)
    first = Editor()
    read = {"text": "I'll look at the code first.", "toolCalls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "calc/ops.py", "offset": 2, "limit": 3}}]}
    cassette = write_cassette(tmp_path / "first.jsonl", [read, {**EDIT, "text": "Fixing the operator in add."}, {"text": "Done."}])
    async with Agent(first, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err1") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        await conn.prompt(session_id=session_id, prompt=[text_block(FIX)])

    more = write_cassette(tmp_path / "more.jsonl", [{"text": "Nothing left to do."}])
    editor = Editor()
    async with Agent(editor, repo, "--yes", "--model", f"replay:{more}", stderr=tmp_path / "err2") as conn:
        with pytest.raises(acp.RequestError) as unknown:
            await conn.load_session(cwd=str(repo), session_id="thr_nosuchthread", mcp_servers=[])
        assert "no session" in str(unknown.value)
        await conn.load_session(cwd=str(repo), session_id=session_id, mcp_servers=[])
        replayed = list(editor.updates)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("Anything else?")])

    kinds = [u.session_update for _, u in replayed]
    assert kinds[0] == "user_message_chunk" and replayed[0][1].content.text == FIX
    assert {sid for sid, _ in replayed} == {session_id}
    drawn_then = {cid: (c["title"], c["kind"], c["status"]) for cid, c in first.calls().items()}
    editor.updates = replayed
    drawn_now = {cid: (c["title"], c["kind"], c["status"]) for cid, c in editor.calls().items()}
    assert drawn_now == drawn_then and set(drawn_now) == {"call_1", "e1"}  # the same rows as live
    read_call = editor.calls()["call_1"]["start"]
    assert [(loc.path, loc.line) for loc in read_call.locations] == [(str(repo / "calc" / "ops.py"), 2)]  # the read range's first line
    edit_done = editor.calls()["e1"]["updates"][-1]
    assert [c.type for c in edit_done.content] == ["content", "diff"]
    assert "Fixing the operator" in "".join(u.content.text for u in editor.of("agent_message_chunk"))

    assert response.stop_reason == "end_turn"
    listed = subprocess.run([*cog_argv(), "thread", "list", "--json"], cwd=repo, env=cog_env(), capture_output=True, text=True, timeout=60)
    threads = json.loads(listed.stdout)
    assert [t["id"] for t in threads] == [session_id]  # continued, not a new thread
    shown = subprocess.run([*cog_argv(), "thread", "show", "--json", session_id], cwd=repo, env=cog_env(), capture_output=True, text=True, timeout=60)
    assert [json.loads(line)["type"] for line in shown.stdout.splitlines()].count("start") == 2


@pytest.mark.parametrize(("answer", "changed", "stop"), [("allow_once", True, "end_turn"), ("reject_once", False, "refusal")])
async def test_the_editor_is_asked_before_an_edit(make_repo, tmp_path: Path, answer: str, changed: bool, stop: str) -> None:
    repo = _repo(make_repo)
    before = (repo / "calc" / "ops.py").read_text()
    cassette = write_cassette(tmp_path / "edit.jsonl", [EDIT, {"text": "Done."}])
    editor = Editor(answer)
    async with Agent(editor, repo, "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        response = await conn.prompt(session_id=session_id, prompt=[text_block("Fix add")])

    assert len(editor.permissions) == 1
    asked = editor.permissions[0]
    assert asked.tool_call.tool_call_id == "e1" and asked.tool_call.kind == "edit"
    assert {o.kind for o in asked.options} == {"allow_once", "allow_always", "reject_once"}
    assert asked.tool_call.locations[0].path == str(repo / "calc" / "ops.py")
    after = (repo / "calc" / "ops.py").read_text()
    call = editor.calls()["e1"]
    assert response.stop_reason == stop
    if changed:
        assert after != before and "return a + b" in after
        assert call["status"] == "completed"
        assert [u.status for u in call["updates"]][0] == "in_progress"  # it ran once allowed
    else:
        assert after == before
        assert call["status"] == "failed"
        done = call["updates"][-1]
        assert done.raw_output["errorCode"] == "DENIED"
        assert "DENIED" in done.content[0].content.text


async def test_cancel_while_the_editor_is_asked_refuses_the_call_and_ends_the_turn(make_repo, tmp_path: Path) -> None:
    repo = _repo(make_repo)
    before = (repo / "calc" / "ops.py").read_text()
    cassette = write_cassette(tmp_path / "edit.jsonl", [EDIT, {"text": "Still here."}])
    editor = Editor("never")
    async with Agent(editor, repo, "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        result: list[Any] = []

        async def turn() -> None:
            result.append(await conn.prompt(session_id=session_id, prompt=[text_block("Fix add")]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            with anyio.fail_after(60):
                await editor.seen.wait()
            await conn.cancel(session_id=session_id)
        assert result[0].stop_reason == "cancelled"
        assert (repo / "calc" / "ops.py").read_text() == before
        assert editor.calls()["e1"]["status"] == "failed"
        editor.answer = "allow_once"
        again = await conn.prompt(session_id=session_id, prompt=[text_block("Are you there?")])
        assert again.stop_reason == "end_turn" and "Still here." in editor.text()
        # the model fails (the cassette has no more turns): the turn ends, the editor is told why
        failed = await conn.prompt(session_id=session_id, prompt=[text_block("And now?")])
    assert failed.stop_reason == "end_turn"
    assert failed.field_meta["cog"]["status"] == "error" and failed.field_meta["cog"]["threadId"] == session_id
    assert "cog: cassette" in editor.text() and "exhausted" in editor.text()


def _is_subsequence(seen: list[str], full: list[str]) -> bool:
    it = iter(full)
    return all(any(x == y for y in it) for x in seen)


def _slow_repo(make_repo: Any) -> Path:
    repo = make_repo("calc", git=False)
    (repo / "tests" / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(120)\n")
    return init_git_repo(repo)


async def test_cancel_stops_the_turn_within_seconds_and_the_session_goes_on(make_repo, tmp_path: Path) -> None:
    repo = _slow_repo(make_repo)
    cassette = write_cassette(
        tmp_path / "slow.jsonl",
        [{"toolCalls": [{"id": "t1", "name": "run_tests", "arguments": {}}]}, {"text": "Still here."}],
    )
    editor = Editor()
    # the tests are running once two progress updates came (the first, then the latest of the
    # fast ones, coalesced: at most 10 a second)
    editor.watch = lambda u: u.session_update == "tool_call_update" and u.status == "in_progress" and sum(
        1 for _, x in editor.updates if x.session_update == "tool_call_update" and x.content) >= 2
    async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        result: list[Any] = []

        async def turn() -> None:
            result.append(await conn.prompt(session_id=session_id, prompt=[text_block("Run the tests")]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            with anyio.fail_after(60):
                await editor.seen.wait()
            cancelled_at = time.monotonic()
            await conn.cancel(session_id=session_id)
        took = time.monotonic() - cancelled_at
        assert result[0].stop_reason == "cancelled"
        assert took < 10
        assert editor.calls()["t1"]["status"] == "failed"

        again = await conn.prompt(session_id=session_id, prompt=[text_block("Are you there?")])
    assert again.stop_reason == "end_turn"
    assert "Still here." in editor.text()


async def test_live_progress_reaches_the_editor_while_the_tests_run(make_repo, tmp_path: Path) -> None:
    repo = make_repo("slowtests")
    cassette = write_cassette(tmp_path / "t.jsonl", [{"toolCalls": [{"id": "t1", "name": "run_tests", "arguments": {}}]}, {"text": "One test fails."}])
    editor = Editor()

    def gate(update: Any) -> bool:  # test_waits_for_first_update passes only if this ran while pytest did
        if update.session_update == "tool_call_update" and update.content and "test_first" in update.content[0].content.text:
            (repo / "gate.flag").write_text("")
        return False

    editor.watch = gate
    async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        response = await conn.prompt(session_id=session_id, prompt=[text_block("Run the tests")])
    assert response.stop_reason == "end_turn"
    call = editor.calls()["t1"]
    progress = [u.content[0].content.text for u in call["updates"] if u.status == "in_progress" and u.content]
    # coalesced (at most 10 a second): the first and the last state always, in order, none made up
    states = [p.split()[-1] for p in progress if "::" in p]
    assert states[0] == "passed" and states[-1] == "passed" and _is_subsequence(states, ["passed", "passed", "failed", "passed"])
    done = call["updates"][-1]
    assert done.status == "completed"
    failing = repo / "tests" / "test_stream.py"
    lines = failing.read_text().splitlines()
    assert [(loc.path, loc.line) for loc in done.locations] == [(str(failing), lines.index('    assert 1 + 1 == 3, "arithmetic is broken"') + 1)]


async def test_a_cwd_outside_a_repository_is_refused_clearly(make_repo, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    editor = Editor()
    async with Agent(editor, _repo(make_repo), "--model", f"replay:{CASSETTE}", stderr=tmp_path / "err") as conn:
        with pytest.raises(acp.RequestError) as refused:
            await conn.new_session(cwd=str(plain), mcp_servers=[])
    assert refused.value.code == -32602
    assert "not in a git repository" in str(refused.value)


async def test_embedded_context_reaches_the_model_and_stdout_stays_json_rpc(make_repo, tmp_path: Path) -> None:
    """A resource block's contents are part of the instruction the thread keeps; every stdout line
    is JSON-RPC, even with an instruction file note (said on stderr)."""
    repo = _repo(make_repo)
    (repo / "AGENTS.md").write_text("Be brief.\n")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("Never seen.\n")
    (repo / "calc" / "AGENTS.md").symlink_to(outside)  # left out, and a note says so: on stderr
    cassette = write_cassette(tmp_path / "t.jsonl", [{"text": "Seen."}])
    observed: list[str] = []
    argv = cog_argv()
    editor = Editor()
    with (tmp_path / "err").open("w") as err:
        async with acp.spawn_agent_process(
            editor, argv[0], *argv[1:], "acp", "--model", f"replay:{cassette}", env=cog_env(), cwd=repo,
            transport_kwargs={"stderr": err}, observers=[lambda e: observed.append(json.dumps(e.message))],
        ) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session_id = (await conn.new_session(cwd=str(repo / "calc"), mcp_servers=[])).session_id
            resource = acp.resource_block(acp.embedded_text_resource(f"file://{repo}/notes.txt", "the secret word is PLUM\n"))
            link = acp.resource_link_block("ops.py", f"file://{repo}/calc/ops.py")
            response = await conn.prompt(session_id=session_id, prompt=[text_block("Read the note"), resource, link])
    assert response.stop_reason == "end_turn"
    assert all(json.loads(line).get("jsonrpc") == "2.0" for line in observed)
    assert "calc/AGENTS.md not read" in (tmp_path / "err").read_text()
    shown = subprocess.run([*cog_argv(), "thread", "show", "--json", session_id], cwd=repo, env=cog_env(), capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    from cogcli.threads.store import default_store

    with default_store(repo) as store:
        user = next(e.entry for e in store.entries(session_id) if e.entry.kind == "user")
    assert user.content.startswith("Read the note")
    assert "notes.txt" in user.content and "the secret word is PLUM" in user.content
    assert "calc/ops.py (referenced" in user.content


async def test_an_image_block_reaches_the_thread_and_a_broken_one_is_refused_clearly(make_repo, tmp_path: Path) -> None:
    """An editor's image goes with the instruction (the thread keeps it, bytes and all, for the model
    to see); one whose bytes are no image is refused naming the block and why, and nothing runs."""
    import base64
    import io

    from PIL import Image

    repo = _repo(make_repo)
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), (0, 90, 200)).save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode()
    cassette = write_cassette(tmp_path / "t.jsonl", [{"text": "A blue box."}])
    async with Agent(Editor(), repo, "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        with pytest.raises(acp.RequestError) as refused:
            await conn.prompt(session_id=session_id, prompt=[text_block("What is this?"), acp.image_block(base64.b64encode(b"\x89PNG\r\n\x1a\nnot really").decode(), "image/png")])
        response = await conn.prompt(session_id=session_id, prompt=[text_block("What is this?"), acp.image_block(data, "image/png")])
    assert "image 1 of the prompt cannot be used" in str(refused.value.data or refused.value)
    assert response.stop_reason == "end_turn"
    from cogcli.threads.store import default_store

    with default_store(repo) as store:
        [user] = [e.entry for e in store.entries(session_id) if e.entry.kind == "user"]
    assert user.content == "What is this?"
    assert [(i.media_type, i.width, i.height, i.data) for i in user.images or []] == [("image/png", 32, 24, data)]


#: a token an editor gives an MCP server: it must reach the server and nothing else
MARK = "mcp-token-5f1c9a"


async def test_a_server_that_fails_to_start_is_named_without_the_editors_variables(make_repo, tmp_path: Path) -> None:
    """The error names the command the editor gave, never the values of its variables (they were
    once put on the command line as ``env NAME=VALUE cmd``, and so in ``ps`` and this message)."""
    repo = _repo(make_repo)
    server = acp_schema.McpServerStdio(name="broken", command="false", args=[], env=[acp_schema.EnvVariable(name="API_TOKEN", value=MARK)])
    editor = Editor()
    async with Agent(editor, repo, "--yes", "--model", f"replay:{CASSETTE}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[server])).session_id
        try:
            response = await conn.prompt(session_id=session_id, prompt=[text_block("Fix the failing test")])
            said = repr(response) + "".join(str(u) for _, u in editor.updates)
        except Exception as exc:  # a JSON-RPC error naming the server that did not start
            said = repr(exc) + str(getattr(exc, "data", ""))
    said += (tmp_path / "err").read_text()
    assert "false" in said and MARK not in said, said
    # without the defence: the variable on the command line (as `cog acp` once did) is in the message
    plain = run_cog(["edit", "--yes", "--model", f"replay:{CASSETTE}", "--mcp", f"env API_TOKEN={MARK} false", "Fix it"], repo)
    assert plain.returncode == 2 and MARK in plain.stdout + plain.stderr


@pytest.mark.slow  # starts an MCP server
async def test_the_editors_mcp_servers_are_added_like_mcp(make_repo, tmp_path: Path) -> None:
    repo = _repo(make_repo)
    server = acp_schema.McpServerStdio(
        name="progress",
        command=sys.executable,
        args=[str(Path(__file__).with_name("mcp_progress_server.py"))],
        env=[acp_schema.EnvVariable(name="COG_TEST_MARK", value=MARK), acp_schema.EnvVariable(name="COG_TEST_SEEN", value=str(tmp_path / "seen.json"))],
    )
    editor = Editor()
    cassette = Path(__file__).resolve().parents[1] / "fixtures" / "cassettes" / "mcp_progress.jsonl"
    async with Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err") as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[server])).session_id
        response = await conn.prompt(session_id=session_id, prompt=[text_block("Count three items")])
    assert response.stop_reason == "end_turn", (tmp_path / "err").read_text()
    # the editor's variables reach the server, apart from its command line (no `env NAME=VALUE …`)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["mark"] == MARK and not any(MARK in arg for arg in seen["argv"])
    call = editor.calls()["call_1"]
    assert (call["title"], call["kind"], call["status"]) == ("Count items · progress-demo", "other", "completed")
    progress = [u.content[0].content.text for u in call["updates"] if u.status == "in_progress" and u.content]
    assert progress[0] == "item 1 of 3" and progress[-1] == "item 3 of 3"  # coalesced: the first and the last always
    assert _is_subsequence(progress, ["item 1 of 3", "item 2 of 3", "item 3 of 3"])


async def test_sigterm_aborts_the_running_turn_keeps_its_thread_and_exits_143(make_repo, tmp_path: Path) -> None:
    repo = _slow_repo(make_repo)
    cassette = write_cassette(tmp_path / "slow.jsonl", [{"toolCalls": [{"id": "t1", "name": "run_tests", "arguments": {}}]}])
    editor = Editor()
    editor.watch = lambda u: sum(1 for _, x in editor.updates if x.session_update == "tool_call_update" and x.content) >= 2
    agent = Agent(editor, repo, "--yes", "--model", f"replay:{cassette}", stderr=tmp_path / "err")
    stopped: list[Any] = []
    async with agent as conn:
        session_id = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        async with anyio.create_task_group() as tg:

            async def turn() -> None:  # the turn still ends, cancelled, before cog exits
                stopped.append(await conn.prompt(session_id=session_id, prompt=[text_block("Run the tests")]))

            tg.start_soon(turn)
            with anyio.fail_after(60):
                await editor.seen.wait()
            agent.process.terminate()
            with anyio.fail_after(10):
                code = await agent.process.wait()
    assert code == 143, (tmp_path / "err").read_text()
    assert [r.stop_reason for r in stopped] == ["cancelled"]
    assert "Traceback" not in (tmp_path / "err").read_text()
    listed = subprocess.run([*cog_argv(), "thread", "list", "--json"], cwd=repo, env=cog_env(), capture_output=True, text=True, timeout=60)
    assert [(t["id"], t["status"]) for t in json.loads(listed.stdout)] == [(session_id, "aborted")]


def test_a_directory_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([*cog_argv(), "acp", "-C", str(tmp_path / "nope")], env=cog_env(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "cannot start in" in done.stderr and "nope" in done.stderr
