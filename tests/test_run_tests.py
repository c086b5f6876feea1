"""run_tests with pytest: live updates per test, outcomes, report, selection and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogcli import ErrorCode, ToolUpdate
from run_tests_helpers import run_tool


def open_gate_on_first_update(root: Path, seen: list[str]):
    """The fixture's test_waits_for_first_update passes only once gate.flag exists; create it when
    the first update arrives, so that test passing proves updates came while pytest ran."""

    def on_update(update: ToolUpdate) -> None:
        seen.append(update.content)
        (root / "gate.flag").touch()

    return on_update


@pytest.mark.anyio
async def test_updates_stream_while_pytest_runs_in_finish_order(make_repo) -> None:
    root = make_repo("slowtests")
    seen: list[str] = []
    run = await run_tool(root, on_update=open_gate_on_first_update(root, seen))

    assert run.result.ok, run.result.error
    ids = [
        "tests/test_stream.py::test_first",
        "tests/test_stream.py::test_waits_for_first_update",
        "tests/test_stream.py::test_fails",
        "tests/test_stream.py::test_last",
    ]
    # the gate test passed: the first update reached us before pytest had finished it
    assert seen == [
        f"{ids[0]} passed",
        f"{ids[1]} passed",
        f"{ids[2]} failed",
        f"{ids[3]} passed",
    ]
    last = run.updates[-1]
    assert last.presentation is not None
    assert (last.presentation.label, last.presentation.icon, last.presentation.detail) == (
        "Run tests",
        "flask-conical",
        ids[3],
    )
    progress = [u.details for u in run.updates]
    assert [p["total_so_far"] for p in progress] == [1, 2, 3, 4]
    assert progress[2] == {**progress[2], "passed": 2, "failed": 1, "current": ids[2]}
    assert progress[-1]["passed"] == 3 and progress[-1]["failed"] == 1

    details = run.details
    assert [t["id"] for t in details["tests"]] == ids
    assert (details["passed"], details["failed"], details["skipped"], details["errors"]) == (3, 1, 0, 0)
    assert details["exit_code"] == 1
    assert "-m pytest -p cogcli_pytest_stream" in details["command"]
    assert details["duration_s"] > 0
    assert "1 failed" in details["output_tail"]  # pytest's own summary line
    assert set(details["tests"][0]) >= {"id", "outcome", "duration", "longrepr"}

    content = run.result.result
    assert content.startswith("No project environment found")  # no .venv: said first (cog's own Python ran them)
    assert "\npytest (all tests): 1 failed, 3 passed" in content
    assert "exit 1: some tests failed" in content
    assert f"FAILED {ids[2]}" in content
    assert "arithmetic is broken" in content
    assert run.result.presentation is not None and run.result.presentation.detail == "all · 1 failed, 3 passed"


@pytest.mark.anyio
async def test_streams_from_the_xdist_controller(make_repo, monkeypatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-n 2")
    root = make_repo("slowtests")
    seen: list[str] = []
    run = await run_tool(root, on_update=open_gate_on_first_update(root, seen))

    assert run.result.ok, run.result.error
    assert "created: 2/2 workers" in run.details["output_tail"] or "2 workers" in run.details["output_tail"]
    # one update per test, no duplicates from the workers, and the gate test passed
    assert sorted(seen) == sorted(
        [
            "tests/test_stream.py::test_first passed",
            "tests/test_stream.py::test_waits_for_first_update passed",
            "tests/test_stream.py::test_fails failed",
            "tests/test_stream.py::test_last passed",
        ]
    )
    assert (run.details["passed"], run.details["failed"]) == (3, 1)


@pytest.mark.anyio
async def test_every_outcome_is_reported(make_repo) -> None:
    root = make_repo("outcomes")
    run = await run_tool(root)

    assert run.result.ok, run.result.error
    t = "tests/test_outcomes.py::"
    assert run.outcomes() == {
        t + "test_pass": "passed",
        t + "test_fail": "failed",
        t + "test_skip": "skipped",
        t + "test_xfail": "xfailed",
        t + "test_setup_error": "error",
        t + "test_teardown_error": "error",
        t + "test_subtests": "failed",
    }
    d = run.details
    assert (d["passed"], d["failed"], d["skipped"], d["errors"], d["xfailed"]) == (1, 2, 1, 2, 1)
    by_id = {x["id"]: x for x in d["tests"]}
    assert by_id[t + "test_skip"]["message"].endswith("not today")
    assert by_id[t + "test_setup_error"]["when"] == "setup"
    assert by_id[t + "test_teardown_error"]["when"] == "teardown"
    sub = by_id[t + "test_subtests"]
    assert [s["outcome"] for s in sub["subtests"]] == ["passed", "failed", "passed"]
    assert "case 1 is wrong" in sub["longrepr"]

    content = run.result.result
    # the totals as the counts above say them (one number, one meaning), pytest's own line kept apart
    assert "2 failed, 1 passed, 1 skipped, 1 xfailed, 2 errors, 2 subtests passed, 1 subtest failed" in content
    assert d["summary"].startswith("2 failed, 1 passed, 1 skipped, 1 xfailed, 2 errors")
    assert d["runner_summary"].split(",")[0] in d["output_tail"]
    assert f"ERROR {t}test_setup_error (in setup)" in content and "setup exploded" in content
    assert f"ERROR {t}test_teardown_error (in teardown)" in content and "teardown exploded" in content
    assert "'apple' == 'orange'" in content
    assert "case 1 is wrong" in content
    assert f"{t}test_pass" not in content  # passing tests are counted, not listed


@pytest.mark.anyio
async def test_collection_error_is_a_report_not_a_tool_error(make_repo) -> None:
    run = await run_tool(make_repo("outcomes"), {"paths": ["broken"]})

    assert run.result.ok, run.result.error
    assert run.details["exit_code"] == 2
    assert run.details["errors"] == 1
    assert [u.content for u in run.updates] == ["broken/test_broken.py error"]
    assert "ERROR broken/test_broken.py (in collect)" in run.result.result
    assert "module_that_does_not_exist_anywhere" in run.result.result


@pytest.mark.anyio
async def test_paths_and_keyword_select_tests(make_repo) -> None:
    root = make_repo("calc")
    run = await run_tool(root, {"paths": ["tests/test_ops.py::test_sub", "tests/test_ops.py"], "keyword": "sub or mul"})

    assert run.result.ok, run.result.error
    assert set(run.outcomes()) == {"tests/test_ops.py::test_sub", "tests/test_ops.py::test_mul"}
    assert run.details["exit_code"] == 0
    assert "exit 0: all tests passed" in run.result.result
    assert run.result.presentation is not None
    assert run.result.presentation.detail == "tests/test_ops.py::test_sub tests/test_ops.py -k sub or mul · 2 passed, 1 deselected"


@pytest.mark.anyio
async def test_absolute_path_inside_the_workspace_is_made_relative(make_repo) -> None:
    root = make_repo("calc")
    run = await run_tool(root, {"paths": [str(root / "tests" / "test_ops.py") + "::test_add"]})

    assert run.result.ok, run.result.error
    assert run.outcomes() == {"tests/test_ops.py::test_add": "failed"}
    assert run.details["command"].endswith(" tests/test_ops.py::test_add")


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["../outside", "/etc", "tests/../../x.py::test_a"])
async def test_paths_outside_the_workspace_are_refused(make_repo, path: str) -> None:
    root = make_repo("slowtests")
    run = await run_tool(root, {"paths": [path]})

    assert run.result.error_code == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert "refused" in (run.result.error or "")
    assert run.updates == []


@pytest.mark.anyio
async def test_no_tests_collected_is_reported_clearly(make_repo) -> None:
    run = await run_tool(make_repo("calc"), {"keyword": "nothing_is_called_this"})

    assert run.result.ok, run.result.error
    assert run.details["exit_code"] == 5
    assert run.details["tests"] == []
    assert "exit 5: no tests were collected" in run.result.result
    assert "3 deselected" in run.result.result  # pytest's own words, from the output tail


@pytest.mark.anyio
async def test_pytest_usage_error_is_a_tool_error_with_the_output(make_repo) -> None:
    run = await run_tool(make_repo("calc"), {"keyword": "and ("})

    assert run.result.error_code == ErrorCode.TOOL_ERROR
    assert "pytest exit 4" in (run.result.error or "")
    assert "Wrong expression passed to '-k'" in (run.result.error or "")


@pytest.mark.anyio
async def test_unknown_argument_is_refused_before_running(make_repo) -> None:
    run = await run_tool(make_repo("calc"), {"path": "tests"})

    assert run.result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert run.updates == []


def test_tool_contract(tmp_path: Path) -> None:
    from workspace_tools.workspace.paths import Workspace
    from workspace_tools.runners.run_tests import run_tests_tool

    tool = run_tests_tool(Workspace(tmp_path), timeout=42)
    assert tool.name == "run_tests"
    assert tool.side_effects == ("runs code",)
    assert tool.timeout == 42
    assert set(tool.input_schema()["properties"]) == {"paths", "keyword", "args"}
