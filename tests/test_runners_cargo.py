"""run_tests on a cargo crate: cargo test's per-test lines streamed as they arrive, panics with
file and line, compiler errors as build errors, offline, in the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from run_tests_helpers import run_tool
from runner_fixtures import copy_project, gate, need
from workspace_tools.sandbox import bwrap


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    need("cargo", "rustup, or apt install cargo")
    return copy_project("cargo_crate", tmp_path)


@pytest.mark.anyio
async def test_streams_each_test_while_cargo_runs_and_names_failures(crate: Path) -> None:
    seen: list[str] = []
    run = await run_tool(crate, on_update=gate(crate, seen))

    assert run.result.ok, run.result.error
    lib = "src/lib.rs::"
    assert run.outcomes() == {
        lib + "tests::adds": "passed", lib + "tests::subtracts": "failed", lib + "tests::ignored": "skipped",
        lib + "tests::hangs": "passed", lib + "gate::waits_for_an_update": "passed",
        "tests/integration.rs::integration_passes": "passed", "src/lib.rs - add (line 3)": "passed",
    }
    assert seen and all(not s.startswith(lib + "gate::") for s in seen[:1])  # the gate test waited for an update
    d = run.details
    assert (d["runner"], d["outcome"], d["exit_code"]) == ("cargo", "failed", 101)
    assert (d["passed"], d["failed"], d["skipped"]) == (5, 1, 1)
    (failure,) = d["failures"]
    assert (failure["file"], failure["line"]) == ("src/lib.rs", 26)
    assert failure["message"] == "assertion `left == right` failed: sub is broken"
    skipped = next(t for t in d["tests"] if t["outcome"] == "skipped")
    assert skipped["message"] == "not today"
    assert d["command"].startswith("cargo test --offline --no-fail-fast")
    assert run.result.result.startswith("cargo (all tests): 1 failed, 5 passed, 1 skipped")
    assert "sub is broken" in run.result.result


@pytest.mark.anyio
async def test_a_compiler_error_is_a_build_failure(crate: Path) -> None:
    lib = crate / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("    a + b\n}\n\n/// Subtracts", "    a + missing_name\n}\n\n/// Subtracts", 1))
    run = await run_tool(crate, {"paths": ["tests/integration.rs"]})

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["outcome"], d["errors"], d["passed"]) == ("build-failed", 1, 0)
    (failure,) = d["failures"]
    assert failure["when"] == "build" and failure["id"].startswith("cogfixture")
    assert (failure["file"], failure["line"]) == ("src/lib.rs", 7)
    assert failure["message"].startswith("error[E0425]: cannot find value `missing_name`")
    assert "BUILD FAILED cogfixture" in run.result.result


@pytest.mark.anyio
async def test_paths_pick_a_test_target_and_keyword_filters_names(crate: Path) -> None:
    run = await run_tool(crate, {"paths": ["tests/integration.rs"], "keyword": "integration"})

    assert run.result.ok, run.result.error
    assert run.outcomes() == {"tests/integration.rs::integration_passes": "passed"}
    assert run.details["outcome"] == "passed"
    assert "--test integration -- integration" in run.details["command"]


@pytest.mark.anyio
@pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="NOT TESTED: bubblewrap is not usable here")
async def test_cargo_runs_offline_in_the_sandbox(crate: Path) -> None:
    run = await run_tool(crate, {"paths": ["tests/integration.rs"]}, sandbox="on")

    assert run.result.ok, run.result.error
    assert (run.details["sandbox"], run.details["outcome"]) == ("bwrap", "passed")
    assert (crate / "target").is_dir()  # the target folder is the project's own, writable
