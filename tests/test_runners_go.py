"""run_tests on a Go module: go test -json streamed per test, failures with file and line, build
errors as build errors, -run for keyword, offline (a missing module names go mod download)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cogcli import ErrorCode
from run_tests_helpers import run_tool, wait_until_dead
from runner_fixtures import copy_project, gate, need
from workspace_tools.sandbox import bwrap


@pytest.fixture
def module(tmp_path: Path) -> Path:
    need("go", "apt install golang-go")
    return copy_project("go_mod", tmp_path)


@pytest.mark.anyio
async def test_streams_each_test_while_go_runs_and_names_failures(module: Path) -> None:
    seen: list[str] = []
    run = await run_tool(module, {"paths": ["mathx"]}, on_update=gate(module / "mathx", seen))

    assert run.result.ok, run.result.error
    t = "mathx::"
    assert run.outcomes() == {
        t + "TestAdd": "passed", t + "TestSub": "failed", t + "TestSkipped": "skipped", t + "TestTable": "failed",
        t + "TestHang": "skipped", t + "TestWaitsForAnUpdate": "passed",
    }
    assert seen[0] == f"{t}TestAdd passed"  # the gate test passed: updates came while go test ran
    d = run.details
    assert (d["runner"], d["outcome"], d["exit_code"]) == ("go", "failed", 1)
    assert (d["passed"], d["failed"], d["skipped"], d["errors"]) == (2, 2, 2, 0)
    assert d["subtests"] == {"passed": 1, "failed": 1, "skipped": 0}
    assert d["command"] == "go test -json ./mathx"
    failures = {f["id"]: f for f in d["failures"]}
    assert failures[t + "TestSub"]["message"] == "Sub(5, 3) = 8, want 2"
    assert (failures[t + "TestSub"]["file"], failures[t + "TestSub"]["line"]) == ("mathx/mathx_test.go", 17)
    assert failures[t + "TestTable"]["message"] == "big: Add(100, 1) = 101, want 102"
    assert failures[t + "TestTable"]["line"] == 29
    assert run.updates[-1].details["runner"] == "go"
    content = run.result.result
    assert content.startswith("go (mathx): 2 failed, 2 passed, 2 skipped")
    assert f"FAILED {t}TestSub" in content and "Sub(5, 3) = 8, want 2" in content
    assert run.result.presentation is not None and run.result.presentation.detail.startswith("mathx · 2 failed, 2 passed")


@pytest.mark.anyio
async def test_a_build_error_is_a_build_failure_with_the_compiler_s_words(module: Path) -> None:
    run = await run_tool(module, {"paths": ["broken"]})

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["outcome"], d["errors"], d["passed"], d["failed"]) == ("build-failed", 1, 0, 0)
    assert d["exit_code"] != 0
    (failure,) = d["failures"]
    assert (failure["id"], failure["when"], failure["file"], failure["line"]) == ("broken", "build", "broken/broken.go", 3)
    assert failure["message"] == "broken/broken.go:3:28: undefined: undefinedName"
    assert "build failed (1 target)" in run.result.result
    assert "BUILD FAILED broken" in run.result.result and "undefined: undefinedName" in run.result.result


@pytest.mark.anyio
async def test_keyword_is_run_and_nested_packages_run_with_dots(module: Path) -> None:
    run = await run_tool(module, {"paths": ["mathx/..."], "keyword": "TestAdd|TestInner"})

    assert run.result.ok, run.result.error
    assert run.outcomes() == {"mathx::TestAdd": "passed", "mathx/inner::TestInnerPasses": "passed"}
    assert run.details["outcome"] == "passed"
    assert run.details["command"] == "go test -json -run 'TestAdd|TestInner' ./mathx/..."


@pytest.mark.anyio
async def test_a_module_missing_from_the_cache_names_go_mod_download(module: Path) -> None:
    (module / "go.mod").write_text("module example.com/cogfixture\n\ngo 1.19\n\nrequire example.invalid/nothere v1.0.0\n")
    (module / "mathx" / "uses.go").write_text('package mathx\n\nimport _ "example.invalid/nothere"\n')
    run = await run_tool(module, {"paths": ["mathx"]})

    assert run.result.error_code == ErrorCode.TOOL_ERROR
    assert "Run `go mod download`" in (run.result.error or "")
    assert (module / "go.mod").read_text().count("require") == 1  # nothing was fetched or rewritten


@pytest.mark.anyio
@pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="NOT TESTED: bubblewrap is not usable here")
async def test_go_runs_in_the_sandbox_offline_with_its_own_build_cache(module: Path, monkeypatch) -> None:
    monkeypatch.setenv("GOFLAGS", "-mod=mod")  # would let go rewrite go.mod and fetch: taken out
    run = await run_tool(module, {"paths": ["mathx/inner"]}, sandbox="on")

    assert run.result.ok, run.result.error
    assert (run.details["sandbox"], run.details["outcome"]) == ("bwrap", "passed")
    assert run.outcomes() == {"mathx/inner::TestInnerPasses": "passed"}


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_hanging_test_is_killed_with_its_tree_and_the_counts_so_far_are_kept(module: Path) -> None:
    (module / "mathx" / "hang.flag").touch()
    run = await run_tool(module, {"paths": ["mathx"]}, timeout=15)

    assert run.result.error_code == ErrorCode.TOOL_TIMEOUT
    error = run.result.error or ""
    assert "timed out after 15 s" in error and "2 failed, 1 passed" in error and "before it was stopped" in error
    assert ".cog/test-reports/" in error
    leftover = subprocess.run(["pgrep", "-f", "mathx.test"], capture_output=True, text=True).stdout.split()
    assert wait_until_dead([int(p) for p in leftover]) == []
