"""The pieces of `cog acp` that need no process: a diff as ACP diff items, an approval as the
permission request the editor shows (with the tool's preview), a prompt as cog's instruction,
the editor's MCP servers as --mcp command lines."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from acp import schema as acp_schema
from acp.helpers import embedded_text_resource, resource_block, resource_link_block, text_block

from cogcli.acp.agent import mcp_commands
from cogcli.acp.mapping import EventMapper, diff_items, first_changed_line, inside
from cogcli.acp.permissions import EditorApprover, permission_tool_call
from cogcli.acp.prompt import fenced, instruction_of
from cogcli.wire.events import Approval, ToolCallEndEvent, ToolResultEvent

ROOT = Path("/work/repo")

EDIT_DIFF = """\
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,4 +1,4 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
@@ -10,2 +10,3 @@
 def mul(a, b):
     return a * b
+# end
"""

NEW_FILE = """\
--- /dev/null
+++ b/notes/new.txt
@@ -0,0 +1,2 @@
+first
+second
"""


def test_a_diff_is_one_item_per_changed_region_with_its_old_and_new_text() -> None:
    items = diff_items(ROOT, EDIT_DIFF)
    assert [(i.type, i.path) for i in items] == [("diff", "/work/repo/calc/ops.py")] * 2
    assert items[0].old_text == "def add(a, b):\n    return a - b\n\n\n"
    assert items[0].new_text == "def add(a, b):\n    return a + b\n\n\n"
    assert items[1].old_text == "def mul(a, b):\n    return a * b\n"
    assert items[1].new_text == "def mul(a, b):\n    return a * b\n# end\n"
    assert first_changed_line(EDIT_DIFF) == 1


def test_a_created_file_has_no_old_text_and_a_path_out_of_the_workspace_no_item() -> None:
    (created,) = diff_items(ROOT, NEW_FILE)
    assert (created.path, created.old_text, created.new_text) == ("/work/repo/notes/new.txt", None, "first\nsecond\n")
    escaping = NEW_FILE.replace("b/notes/new.txt", "b/../../etc/passwd")
    assert diff_items(ROOT, escaping) == []
    assert inside(ROOT, "../x") is None and inside(ROOT, "a/../b") == ROOT / "b"
    assert diff_items(ROOT, "not a diff") == []


def test_the_permission_request_shows_the_preview_diff_title_and_location(tmp_path: Path) -> None:
    from workspace_tools.files.edit import edit_file_tool
    from workspace_tools.workspace.paths import Workspace

    tool = edit_file_tool(Workspace(tmp_path))
    mapper = EventMapper(tmp_path, lambda: [tool])
    arguments = {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}
    (start,) = mapper.updates(ToolCallEndEvent(id="c1", tool_name="edit_file", arguments=arguments))
    assert (start.kind, start.status, start.title) == ("edit", "pending", "Edit file · calc/ops.py")
    approval = Approval(
        tool_call_id="c1", tool_name="edit_file", arguments=arguments, description="Edit file · calc/ops.py",
        side_effects=["writes files"], preview={"path": "calc/ops.py", "diff": EDIT_DIFF, "added": 2, "removed": 1},
    )
    asked = permission_tool_call(approval, tmp_path, mapper)
    assert (asked.tool_call_id, asked.kind, asked.title) == ("c1", "edit", "Edit file · calc/ops.py")
    assert [c.type for c in asked.content] == ["diff", "diff"]
    assert asked.content[0].path == str(tmp_path / "calc" / "ops.py")
    assert asked.content[0].new_text == "def add(a, b):\n    return a + b\n\n\n"
    assert asked.locations[0].path == str(tmp_path / "calc" / "ops.py")


def test_without_a_preview_the_request_says_what_the_call_would_do() -> None:
    approval = Approval(tool_call_id="c2", tool_name="run_tests", arguments={}, description="Run tests · all", side_effects=["runs code"])
    asked = permission_tool_call(approval, ROOT)
    assert asked.content[0].content.text == "Run tests · all (runs code)"
    command = Approval(tool_call_id="c3", tool_name="run_tests", arguments={}, description="Run tests", preview={"command": "pytest -q"})
    assert permission_tool_call(command, ROOT).content[0].content.text == "Runs: pytest -q"


def _answer(option: str | None):
    async def request(tool_call, options):
        assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
        outcome = (
            acp_schema.DeniedOutcome(outcome="cancelled")
            if option is None
            else acp_schema.AllowedOutcome(outcome="selected", option_id=option)
        )
        return acp_schema.RequestPermissionResponse(outcome=outcome)

    return request



@pytest.mark.anyio
async def test_the_editors_answers_are_decisions_and_always_is_remembered_per_tool() -> None:
    approval = Approval(tool_call_id="c1", tool_name="edit_file", arguments={}, description="Edit")
    asked: list[str] = []

    async def request(tool_call, options):
        asked.append(tool_call.tool_call_id)
        return acp_schema.RequestPermissionResponse(outcome=acp_schema.AllowedOutcome(outcome="selected", option_id=answer))

    approver = EditorApprover(request, ROOT)
    allowed: list[str] = []
    approver.on_allowed = allowed.append
    answer = "reject_once"
    decision = (await approver([approval]))["c1"]
    assert not decision.approved and "rejected" in (decision.reason or "")
    answer = "allow_always"
    assert (await approver([approval]))["c1"].approved
    again = approval.model_copy(update={"tool_call_id": "c2"})
    assert (await approver([again]))["c2"].approved
    assert asked == ["c1", "c1"] and allowed == ["c1", "c2"]  # the third was not asked


@pytest.mark.anyio
async def test_a_cancelled_answer_refuses_the_call() -> None:
    approver = EditorApprover(_answer(None), ROOT)
    decision = (await approver([Approval(tool_call_id="c1", tool_name="write_file", description="Write")]))["c1"]
    assert not decision.approved


def test_a_failed_call_says_its_error_code() -> None:
    mapper = EventMapper(ROOT, lambda: [])
    (update,) = mapper.updates(ToolResultEvent(id="c1", tool_call_id="c1", tool_name="read_file", error="no such file", error_code="FILE_NOT_FOUND"))
    assert update.status == "failed"
    assert update.content[0].content.text == "Error (FILE_NOT_FOUND): no such file"
    assert update.raw_output == {"errorCode": "FILE_NOT_FOUND", "error": "no such file"}


def test_a_prompt_is_its_text_then_the_attached_context() -> None:
    blocks = [
        text_block("Fix it"),
        resource_block(embedded_text_resource("file:///work/repo/calc/ops.py", "x = 1\n```\n")),
        resource_link_block("readme", "file:///elsewhere/README.md"),
    ]
    instruction = instruction_of(blocks, ROOT)
    assert instruction.startswith("Fix it\n\nContext attached by the person:\n\ncalc/ops.py:\n````\nx = 1\n```\n````")
    assert instruction.endswith("/elsewhere/README.md (referenced; read it if you need it)")
    assert fenced("a") == "```\na\n```"


def test_the_editors_mcp_servers_are_command_lines() -> None:
    stdio = acp_schema.McpServerStdio(name="m", command="/usr/bin/srv", args=["--dir", "a b"], env=[acp_schema.EnvVariable(name="TOKEN", value="x y")])
    http = acp_schema.HttpMcpServer(type="http", name="h", url="http://localhost:1", headers=[acp_schema.HttpHeader(name="Authorization", value="Bearer t")])
    command = shlex.join(["/usr/bin/srv", "--dir", "a b"])
    # the values are in no command line: a stdio server's environment and an HTTP server's headers are kept apart
    assert mcp_commands([stdio, http]) == ([command, "http://localhost:1"], {command: {"TOKEN": "x y"}, "http://localhost:1": {"Authorization": "Bearer t"}})
    assert mcp_commands(None) == ([], {})
