"""The workspace tools' details are typed (cogcli.contract.details), published by `cog schema details`, and
keep the JSON shape they always had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cog

from cogcli import invoke_tool
from cogcli.contract.details import FileEditDetails, FileWriteDetails, SearchDetails, details_json_schema
from cogcli.contract.details_readers import read_test_report
from workspace_tools import workspace_tools


@pytest.mark.anyio
async def test_edit_write_and_search_details_are_their_models_dumped(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    tools = {t.name: t for t in workspace_tools(tmp_path)}
    edited = await invoke_tool(tools["edit_file"], {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"})
    assert set(edited.details) == {"diff", "added", "removed", "match"} and edited.details["match"] == "exact"
    assert FileEditDetails.model_validate(edited.details).model_dump() == edited.details
    written = await invoke_tool(tools["write_file"], {"path": "b.py", "content": "y = 1\n"})
    assert set(written.details) == {"diff", "added", "removed", "created"} and written.details["created"] is True
    assert FileWriteDetails.model_validate(written.details).added == 1
    found = await invoke_tool(tools["search_text"], {"pattern": "x = "})
    assert set(found.details) == {
        "pattern", "path", "glob", "matches", "total", "truncated", "files_searched", "files_skipped", "secrets_skipped",
        "left_out",
    }
    assert SearchDetails.model_validate(found.details).matches[0].text == "x = 2"


def test_a_test_report_is_read_from_its_typed_shape() -> None:
    details = {"command": "pytest", "exit_code": 1, "passed": 2, "failed": 1, "tests": [
        {"id": "t.py::a", "outcome": "failed", "message": "boom", "longrepr": "t.py:3: AssertionError"}]}
    report = read_test_report(details)
    assert report is not None and report.counts() == {"passed": 2, "failed": 1, "errors": 0, "skipped": 0}
    assert [(f.name, f.file, f.line) for f in report.failures] == [("t.py::a", "t.py", 3)]


def test_cog_schema_details_publishes_every_model(tmp_path: Path) -> None:
    out = run_cog(["schema", "details"], tmp_path)
    assert out.returncode == 0, out.stderr
    schema = json.loads(out.stdout)
    assert schema == json.loads(json.dumps(details_json_schema()))
    assert {"FileEditDetails", "FileWriteDetails", "TestReportDetails", "CommandRunDetails", "SearchDetails"} <= set(schema["$defs"])
