"""run_tests on Node packages: vitest, jest and node --test, each through cog's reporter on an
inherited pipe: one update per test while the runner runs, failures with file and line, a test
file that does not load as an error, the project's own node_modules or an error naming npm ci."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cogcli import ErrorCode
from run_tests_helpers import run_tool
from runner_fixtures import copy_project, gate, need
from workspace_tools.sandbox import bwrap

PROJECTS = {"node": "node_test", "vitest": "node_vitest", "jest": "node_jest"}
EXT = {"node": "mjs", "vitest": "js", "jest": "js"}


@pytest.fixture(params=list(PROJECTS))
def package(request, tmp_path: Path) -> tuple[str, Path]:
    need("node", "apt install nodejs npm")
    return request.param, copy_project(PROJECTS[request.param], tmp_path)


@pytest.mark.anyio
async def test_streams_each_test_while_the_runner_runs_and_names_failures(package: tuple[str, Path]) -> None:
    runner, root = package
    seen: list[str] = []
    if runner == "vitest":
        # vitest 3 on a loaded 2-core machine sometimes holds a file's results until the file ends
        # (its worker's updates are batched), so its gate test could wait for nothing: outcomes only
        run = await run_tool(root, on_update=lambda update: seen.append(update.content or ""))
    else:
        run = await run_tool(root, on_update=gate(root, seen))

    assert run.result.ok, run.result.error
    math = f"test/math.test.{EXT[runner]}::"
    expected = {
        math + "math > adds": "passed", math + "math > subtracts wrongly": "failed",
        math + "math > is skipped": "skipped", math + "waits for an update": "passed",
        f"test/nested/deep.test.{EXT[runner]}::deep passes": "passed",
    }
    if runner == "node":
        expected["test/nested/deep.test.mjs::hangs when asked"] = "passed"
    assert run.outcomes() == expected
    assert seen  # and the gate test passed: an update came while the runner ran
    d = run.details
    assert (d["runner"], d["outcome"], d["exit_code"]) == (runner, "failed", 1)
    assert (d["failed"], d["skipped"]) == (1, 1)
    (failure,) = d["failures"]
    assert failure["file"] == f"test/math.test.{EXT[runner]}"
    assert failure["line"] == {"node": 10, "vitest": 9, "jest": 8}[runner]
    assert "subtraction is broken" in failure["text"] or "Expected: 3" in failure["text"]
    assert "node_modules/" not in failure["text"]  # the runner's own stack frames are left out
    assert run.result.result.startswith(f"{runner} (all tests): 1 failed, {len(expected) - 2} passed, 1 skipped")


@pytest.mark.anyio
async def test_keyword_selects_tests_by_name(package: tuple[str, Path]) -> None:
    runner, root = package
    run = await run_tool(root, {"keyword": "adds", "paths": ["test/math.test." + EXT[runner]]})

    assert run.result.ok, run.result.error
    ran = {k: v for k, v in run.outcomes().items() if v != "skipped"}
    assert ran == {f"test/math.test.{EXT[runner]}::math > adds": "passed"}
    assert run.details["outcome"] == "passed"


@pytest.mark.anyio
async def test_a_test_file_that_does_not_load_is_an_error(package: tuple[str, Path]) -> None:
    runner, root = package
    (root / "test" / f"broken.test.{EXT[runner]}").write_text("this is not javascript (\n")
    run = await run_tool(root, {"paths": ["test/broken.test." + EXT[runner]]})

    assert run.result.ok, run.result.error
    d = run.details
    assert d["outcome"] in ("error", "failed")
    assert d["errors"] + d["failed"] >= 1
    assert d["failures"][0]["id"].startswith(f"test/broken.test.{EXT[runner]}")


@pytest.mark.anyio
async def test_a_missing_install_names_npm_ci(tmp_path: Path) -> None:
    need("node", "apt install nodejs npm")
    root = tmp_path / "pkg"
    (root / "test").mkdir(parents=True)
    (root / "package.json").write_text('{"scripts": {"test": "vitest run"}, "devDependencies": {"vitest": "3.2.4"}}')
    run = await run_tool(root)

    assert run.result.error_code == ErrorCode.TOOL_ERROR
    assert "vitest is not installed in the workspace/node_modules: run `npm ci`" in (run.result.error or "")


@pytest.mark.anyio
@pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="NOT TESTED: bubblewrap is not usable here")
async def test_node_runners_run_in_the_sandbox(package: tuple[str, Path]) -> None:
    runner, root = package
    # node_modules as a project has it, in the workspace: the copy's link to the fixture's folder
    # leads out of the workspace, and the sandbox shows no such link when its target is hidden (a
    # checkout under /tmp, as CI's may be; tests/security/test_sandbox_binds.py plays that attack)
    linked = root / "node_modules"
    if linked.is_symlink():  # node --test needs no packages: its fixture has none
        target = linked.resolve()
        linked.unlink()
        shutil.copytree(target, linked, symlinks=True)
    run = await run_tool(root, {"keyword": "deep"}, sandbox="on")

    assert run.result.ok, run.result.error
    assert run.details["sandbox"] == "bwrap"
    assert run.details["passed"] == 1 and run.details["failed"] == 0


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_hanging_node_test_is_killed_and_the_counts_so_far_are_kept(tmp_path: Path) -> None:
    need("node", "apt install nodejs npm")
    root = copy_project("node_test", tmp_path)
    (root / "hang.flag").touch()
    run = await run_tool(root, {"paths": ["test/nested"]}, timeout=10)

    assert run.result.error_code == ErrorCode.TOOL_TIMEOUT
    assert "1 passed before it was stopped" in (run.result.error or "")
    assert shutil.which("node")
