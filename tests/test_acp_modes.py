"""`cog acp`, the rest of ACP v1, through the SDK's own client over stdio: session modes and
session/set_mode (plan mode refused at the gate whatever the editor answers; accept-edits runs
edits unasked), available_commands_update and /NAME prompts, plan updates, fs/read_text_file for
reads inside the workspace only, and session/list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema as acp_schema
from acp.helpers import text_block

from cli_helpers import cog_argv, cog_env
from test_acp import Editor, write_cassette

pytestmark = pytest.mark.anyio

EDIT = {"id": "e1", "name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": "return a - b\n\n\ndef sub", "new_text": "return a + b\n\n\ndef sub"}}
READ = {"id": "r1", "name": "read_file", "arguments": {"path": "calc/ops.py"}}
PLAN_CALL = {"id": "p1", "name": "update_plan", "arguments": {"steps": [{"step": "Fix add", "status": "pending"}, {"step": "Run the tests"}]}}


class FsEditor(Editor):
    """An editor that offers fs/read_text_file with an unsaved buffer of its own."""

    def __init__(self, buffers: dict[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.buffers = buffers
        self.reads: list[str] = []

    async def read_text_file(self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any) -> acp_schema.ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return acp_schema.ReadTextFileResponse(content=self.buffers[path])
        return acp_schema.ReadTextFileResponse(content=Path(path).read_text())


async def _connect(editor: Any, repo: Path, cassette: Path, err: Any, *args: str, fs: bool = False) -> Any:
    argv = cog_argv()
    cm = acp.spawn_agent_process(editor, argv[0], *argv[1:], "acp", "--model", f"replay:{cassette}", *args, env=cog_env(ci=False), cwd=repo, transport_kwargs={"stderr": err})
    conn, _ = await cm.__aenter__()
    caps = acp_schema.ClientCapabilities(fs=acp_schema.FileSystemCapabilities(read_text_file=True, write_text_file=False)) if fs else None
    init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=caps)
    return cm, conn, init


async def test_plan_mode_refuses_writes_even_when_the_editor_allows_then_a_switch_runs_the_plan(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    before = (repo / "calc/ops.py").read_text()
    cassette = write_cassette(tmp_path / "c.jsonl", [
        {"toolCalls": [READ, EDIT, PLAN_CALL]}, {"text": "Plan:\n1. Fix add\n2. Run the tests"},
        {"toolCalls": [EDIT]}, {"text": "Done."},
    ])
    editor = Editor(answer="allow_always")
    with (tmp_path / "err").open("w") as err:
        cm, conn, init = await _connect(editor, repo, cassette, err)
        try:
            assert init.agent_capabilities.session_capabilities.list is not None
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            assert session.modes.current_mode_id == "ask"
            assert [m.id for m in session.modes.available_modes] == ["ask", "accept-edits", "plan"]
            with pytest.raises(acp.RequestError):
                await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
            await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            await conn.prompt(session_id=session.session_id, prompt=[text_block("Fix add")])
            assert (repo / "calc/ops.py").read_text() == before  # refused at the gate: the editor was never asked
            assert editor.permissions == []
            calls = editor.calls()
            assert calls["e1"]["status"] == "failed" and calls["r1"]["status"] == "completed"
            plans = editor.of("plan")
            assert [e.content for e in plans[-1].entries] == ["Fix add", "Run the tests"]

            await conn.set_session_mode(session_id=session.session_id, mode_id="accept-edits")
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
            assert response.stop_reason == "end_turn"
            assert "return a + b" in (repo / "calc/ops.py").read_text()
            assert editor.permissions == []  # accept-edits: an edit runs unasked

            editor.updates.clear()  # a reload redraws the stored thread, its plan included
            loaded = await conn.load_session(cwd=str(repo), session_id=session.session_id, mcp_servers=[])
            assert loaded.modes.current_mode_id == "accept-edits"
            assert [e.content for e in editor.of("plan")[-1].entries] == ["Fix add", "Run the tests"]
        finally:
            await cm.__aexit__(None, None, None)


async def test_commands_are_offered_and_plan_and_custom_commands_run_from_the_prompt(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    (repo / ".agents/commands").mkdir(parents=True)
    (repo / ".agents/commands/review.md").write_text("---\ndescription: Review $1\nargument-hint: PATH\n---\nReview $1 carefully.\n")
    (repo / ".agents/commands/go.md").write_text("rm everything\n")  # a built-in's name: left out
    cassette = write_cassette(tmp_path / "c.jsonl", [{"text": "1. read it\n2. fix it"}, {"text": "Reviewed."}])
    editor = Editor()
    editor.watch = lambda u: u.session_update == "available_commands_update"
    with (tmp_path / "err").open("w") as err:
        cm, conn, _ = await _connect(editor, repo, cassette, err)
        try:
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            await editor.seen.wait()
            offered = editor.of("available_commands_update")[0].available_commands
            assert [c.name for c in offered] == ["plan", "go", "undo", "rewind", "jobs", "attempts", "review"]
            assert offered[6].description == "Review $1" and offered[6].input.root.hint == "PATH"

            await conn.prompt(session_id=session.session_id, prompt=[text_block("/plan tidy calc")])
            assert [u.current_mode_id for u in editor.of("current_mode_update")] == ["plan"]
            assert [e.content for e in editor.of("plan")[-1].entries] == ["read it", "fix it"]  # from the plan it ended with
            await conn.prompt(session_id=session.session_id, prompt=[text_block("/review calc/ops.py")])
        finally:
            await cm.__aexit__(None, None, None)
    assert "Reviewed." in editor.text()
    from cogcli.threads.store import UserEntry, default_store

    store = default_store(repo)
    try:
        asked = [s.entry.content for s in store.entries(session.session_id) if isinstance(s.entry, UserEntry)]
    finally:
        store.close()
    assert asked == ["tidy calc", "Review calc/ops.py carefully."]


async def test_reads_go_through_the_editor_inside_the_workspace_only_and_sessions_are_listed(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret\n")
    ops = str((repo / "calc/ops.py").resolve())
    escape = {"id": "x1", "name": "read_file", "arguments": {"path": "../outside.txt"}}
    cassette = write_cassette(tmp_path / "c.jsonl", [{"toolCalls": [READ, escape]}, {"text": "read"}])
    editor = FsEditor({ops: "def add(a, b):\n    return a * b  # unsaved\n", str(outside): "host secret\n"})
    with (tmp_path / "err").open("w") as err:
        cm, conn, _ = await _connect(editor, repo, cassette, err, "--yes", fs=True)
        try:
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("read ops")])
            listed = await conn.list_sessions(cwd=str(repo))
        finally:
            await cm.__aexit__(None, None, None)
    assert editor.reads == [ops]  # the path outside was refused before the editor was asked
    calls = editor.calls()
    read_text = "".join(c.content.text for u in calls["r1"]["updates"] for c in (u.content or []) if getattr(c, "type", "") == "content")
    assert "return a * b  # unsaved" in read_text
    assert calls["x1"]["status"] == "failed"
    assert [s.session_id for s in listed.sessions] == [session.session_id]
    assert listed.sessions[0].title == "read ops" and listed.sessions[0].cwd == str(repo.resolve())


@pytest.mark.slow
async def test_an_http_mcp_server_from_the_editor_is_connected_with_its_headers_kept_out_of_logs(make_repo, tmp_path: Path) -> None:
    import subprocess

    import anyio

    from test_mcp_stdio import cog_mcp, free_port

    repo = make_repo("calc")
    other = make_repo("calc", dest="other")
    (other / "REMOTE.md").write_text("served over http\n")
    port = free_port()
    server = subprocess.Popen(cog_mcp(other, "--http", str(port)), stderr=subprocess.DEVNULL)
    try:
        with anyio.fail_after(60):  # until the port accepts
            while True:
                assert server.poll() is None
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.05)
        remote = {"id": "m1", "name": "cog_read_file", "arguments": {"path": "REMOTE.md"}}
        cassette = write_cassette(tmp_path / "c.jsonl", [{"toolCalls": [remote]}, {"text": "ok"}])
        editor = Editor()
        http = acp_schema.HttpMcpServer(type="http", name="other", url=f"http://127.0.0.1:{port}/mcp", headers=[acp_schema.HttpHeader(name="Authorization", value="Bearer s3cr3t-t0ken")])
        with (tmp_path / "err").open("w") as err:
            cm, conn, init = await _connect(editor, repo, cassette, err, "--yes")
            try:
                assert init.agent_capabilities.mcp_capabilities.http is True
                session = await conn.new_session(cwd=str(repo), mcp_servers=[http])
                await conn.prompt(session_id=session.session_id, prompt=[text_block("read the remote file")])
            finally:
                await cm.__aexit__(None, None, None)
    finally:
        server.terminate()
        server.wait(timeout=30)
    calls = editor.calls()
    assert calls["m1"]["status"] == "completed", (tmp_path / "err").read_text()[-2000:]
    shown = "".join(c.content.text for u in calls["m1"]["updates"] for c in (u.content or []) if getattr(c, "type", "") == "content")
    assert "served over http" in shown
    assert "s3cr3t-t0ken" not in (tmp_path / "err").read_text()
