"""run_tests on a Node package whose test script is not one runner invocation: the script runs as
written (``npm test``) and its exit code is the verdict, counts come from the ``node --test`` runs
in it (cog's reporter through NODE_OPTIONS and a named pipe) or are said to be unavailable; a
``node --test`` script runs node even with jest in devDependencies; ``test_command = "npm test"``
is what runs; a command the shell cannot find is an error naming it and the fix. Real npm, real
node, real processes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_helpers import run_cog
from cogcli import ErrorCode
from run_tests_helpers import run_tool
from runner_fixtures import copy_project, need
from workspace_tools.sandbox import bwrap
from workspace_tools.workspace.paths import Workspace
from workspace_tools.runners import detect

MATH = "test/math.test.mjs::"


@pytest.fixture
def script_package(tmp_path: Path) -> Path:
    """fixtures/node_script: ``npm run test:unit && node check.js`` (test:unit is ``node --test``)."""
    need("node", "apt install nodejs npm")
    need("npm", "apt install npm")
    return copy_project("node_script", tmp_path)


def set_test_script(root: Path, script: str, **more: object) -> None:
    data = json.loads((root / "package.json").read_text())
    data["scripts"]["test"] = script
    data.update(more)
    (root / "package.json").write_text(json.dumps(data))


@pytest.mark.anyio
async def test_a_chained_script_that_passes_is_passed_with_the_node_test_counts(script_package: Path) -> None:
    run = await run_tool(script_package)

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["runner"], d["command"], d["outcome"], d["exit_code"], d["counted"]) == ("npm", "npm test", "passed", 0, True)
    assert run.outcomes() == {MATH + "adds": "passed", MATH + "multiplies": "passed", MATH + "is skipped": "skipped"}
    assert "check passed" in d["output_tail"]  # the script's second command ran
    assert any(u.content == MATH + "adds passed" for u in run.updates)  # one update per test, as it finished
    assert run.result.result.startswith("npm (all tests): 2 passed, 1 skipped")
    assert "ran as written because it chains commands: its exit code is the verdict" in run.result.result


@pytest.mark.anyio
async def test_a_chained_script_whose_other_command_fails_is_failed(script_package: Path) -> None:
    (script_package / "check.fail").touch()
    run = await run_tool(script_package)

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["outcome"], d["exit_code"], d["passed"], d["failed"]) == ("failed", 1, 2, 0)
    assert "exited 1 although every test cog counted passed: another command in it failed" in run.result.result
    assert "check failed: the exports list is out of date" in run.result.result  # the output's end is shown

    (script_package / "check.fail").unlink()
    (script_package / "fail.flag").touch()
    failing_test = await run_tool(script_package)
    d = failing_test.details
    assert (d["outcome"], d["exit_code"], d["passed"], d["failed"]) == ("failed", 1, 1, 1)
    (failure,) = d["failures"]
    assert (failure["id"], failure["file"], failure["line"]) == (MATH + "multiplies", "test/math.test.mjs", 10)


@pytest.mark.anyio
async def test_a_script_with_no_node_test_in_it_is_judged_by_its_exit_code_and_says_counts_are_unavailable(
    script_package: Path,
) -> None:
    set_test_script(script_package, "node check.js && node check.js")
    passing = await run_tool(script_package)
    assert passing.result.ok, passing.result.error
    assert (passing.details["outcome"], passing.details["counted"]) == ("passed", False)
    assert "passed" not in {k for k in passing.details if k != "outcome"}  # no counts are made up
    assert "counts unavailable: the test script (`node check.js && node check.js`) ran as written because it chains " \
           "commands; judged by its exit code" in passing.result.result

    (script_package / "check.fail").touch()
    failing = await run_tool(script_package)
    assert (failing.details["outcome"], failing.details["exit_code"], failing.details["counted"]) == ("failed", 1, False)
    assert failing.result.presentation.detail == "all · failed (exit 1), no counts"

    (script_package / "check.fail").unlink()
    set_test_script(script_package, "node --test --test-reporter=dot && node check.js")  # its own reporter: left alone
    own = await run_tool(script_package)
    assert (own.details["outcome"], own.details["counted"]) == ("passed", False)
    assert "(its node --test runs are not counted: the package sets node's test reporters itself)" in own.result.result


@pytest.mark.anyio
async def test_a_script_that_runs_node_test_and_jest_runs_both_as_written(script_package: Path) -> None:
    """The shape of issue 24: ``npm run test:unit && npm run test:jest``. jest must not run the
    node --test files; its own tests run, uncounted, and its exit code counts."""
    modules = script_package.parents[1] / "node_jest_modules"
    installed = Path(__file__).resolve().parents[1] / "fixtures" / "node_jest" / "node_modules"
    if not installed.is_dir():
        pytest.skip("NOT TESTED: fixtures/node_jest/node_modules is missing: run `npm ci` in fixtures/node_jest")
    modules.symlink_to(installed)
    (script_package / "node_modules").symlink_to(modules)
    (script_package / "jest").mkdir()
    (script_package / "jest" / "sum.test.js").write_text(
        'test("sums", () => { expect(1 + 1).toBe(require("node:fs").existsSync("jest.fail") ? 3 : 2); });\n')
    data = json.loads((script_package / "package.json").read_text())
    data["scripts"].update({"test": "npm run test:unit && npm run test:jest", "test:unit": "node --test test/",
                            "test:jest": "jest --rootDir jest"})
    (script_package / "package.json").write_text(json.dumps(data))

    run = await run_tool(script_package)
    assert run.result.ok, run.result.error
    d = run.details
    assert (d["runner"], d["outcome"], d["exit_code"], d["passed"], d["errors"]) == ("npm", "passed", 0, 2, 0)
    assert "Tests:       1 passed, 1 total" in d["output_tail"]  # jest ran its one file, not the node --test ones
    assert "(jest takes cog's reporter only on the command line, so its tests are not counted here)" in run.result.result

    (script_package / "jest.fail").touch()
    failing = await run_tool(script_package)
    assert (failing.details["outcome"], failing.details["exit_code"], failing.details["passed"]) == ("failed", 1, 2)
    assert "Expected: 3" in failing.result.result  # jest's own failure text, in the output's end


@pytest.mark.anyio
async def test_a_node_test_script_runs_node_even_with_jest_in_dev_dependencies(tmp_path: Path) -> None:
    need("node", "apt install nodejs npm")
    root = copy_project("node_test_jest_devdep", tmp_path)  # jest is not even installed: node needs nothing
    assert [r.name for r in detect(Workspace(root))] == ["node"]
    run = await run_tool(root)

    assert run.result.ok, run.result.error
    assert (run.details["runner"], run.details["outcome"], run.details["passed"]) == ("node", "passed", 1)
    assert run.outcomes() == {"test/a.test.mjs::runs under node --test, not jest": "passed"}


@pytest.mark.anyio
async def test_the_test_command_npm_test_is_what_runs(tmp_path: Path) -> None:
    need("npm", "apt install npm")
    root = copy_project("node_test_jest_devdep", tmp_path)
    set_test_script(root, "node --test && echo the-whole-script-ran")
    run = await run_tool(root, test_command="npm test")

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["runner"], d["command"], d["outcome"], d["passed"]) == ("npm", "npm test", "passed", 1)
    assert "the-whole-script-ran" in d["output_tail"]
    assert "`npm test` (the test_command) ran as written because it is the test_command" in run.result.result


@pytest.mark.anyio
async def test_paths_run_the_one_runner_inside_the_script_directly_and_say_so(script_package: Path) -> None:
    (script_package / "check.fail").touch()  # the whole script would fail; the selected tests pass
    run = await run_tool(script_package, {"paths": ["test/math.test.mjs"], "keyword": "adds"})

    assert run.result.ok, run.result.error
    assert (run.details["runner"], run.details["outcome"]) == ("node", "passed")
    assert {k: v for k, v in run.outcomes().items() if v != "skipped"} == {MATH + "adds": "passed"}
    assert "ran node directly for the selection: the package's test script (`npm run test:unit && node check.js`)" \
           in run.result.result


@pytest.mark.anyio
async def test_paths_for_a_script_that_runs_two_runners_ask_which_one(script_package: Path) -> None:
    set_test_script(script_package, "node --test && jest")
    refused = await run_tool(script_package, {"paths": ["test/math.test.mjs"]})
    assert refused.result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert ("the test script in the workspace root (`node --test && jest`) runs as written, whole, and runs node and "
            "jest: paths, keyword and args cannot go to it") in (refused.result.error or "")
    assert "set runner to one of node, jest" in (refused.result.error or "")

    chosen = await run_tool(script_package, {"paths": ["test/math.test.mjs"]}, runner="node")
    assert chosen.result.ok, chosen.result.error
    assert (chosen.details["runner"], chosen.details["passed"]) == ("node", 2)


@pytest.mark.anyio
async def test_a_runner_missing_inside_the_script_is_an_error_naming_it_and_npm_ci(script_package: Path) -> None:
    set_test_script(script_package, "node --test && jest", devDependencies={"jest": "29.7.0"})
    run = await run_tool(script_package)

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["outcome"], d["exit_code"], d["passed"]) == ("error", 127, 2)  # the node --test part ran
    assert "(jest takes cog's reporter only on the command line, so its tests are not counted here)" in run.result.result
    assert ("command not found: jest — the test script runs it from node_modules/.bin, which is not "
            "installed: run `npm ci` (or `npm install`) in the workspace outside cog") in run.result.result


@pytest.mark.anyio
async def test_a_test_command_that_is_not_installed_is_an_error_not_a_failure(make_repo) -> None:
    run = await run_tool(make_repo("calc"), test_command="nosetests")

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["runner"], d["outcome"], d["exit_code"], d["counted"]) == ("command", "error", 127, False)
    assert run.result.result.startswith("`nosetests` could not run (exit 127)")
    assert "command not found: nosetests — install it, or set test_command" in run.result.result
    assert run.result.presentation.detail == "all · error (exit 127), no counts"


@pytest.mark.anyio
async def test_npm_not_installed_is_an_error_naming_npm(script_package: Path, tmp_path: Path, monkeypatch) -> None:
    only_node = tmp_path / "bin"
    only_node.mkdir()
    (only_node / "node").symlink_to(str(shutil.which("node")))  # node, and no npm
    monkeypatch.setenv("PATH", str(only_node))
    run = await run_tool(script_package)

    assert run.result.ok, run.result.error
    assert (run.details["outcome"], run.details["exit_code"]) == ("error", 127)
    assert "command not found: npm — install Node.js with npm" in run.result.result


def test_cog_tool_exits_1_and_names_the_missing_command(make_repo) -> None:
    out = run_cog(["tool", "run_tests", "--test-command", "nosetests", "--sandbox", "off"], make_repo("calc"))
    assert out.returncode == 1, out.stderr
    assert "command not found: nosetests" in out.stdout


@pytest.mark.anyio
@pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="NOT TESTED: bubblewrap is not usable here")
async def test_a_chained_script_reports_its_counts_from_inside_the_sandbox(script_package: Path) -> None:
    run = await run_tool(script_package, sandbox="on")

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["sandbox"], d["outcome"], d["passed"], d["skipped"]) == ("bwrap", "passed", 2, 1)


@pytest.mark.parametrize(
    ("scripts", "dev", "kind", "args", "env"),
    [
        ({"test": "vitest run --coverage"}, {}, "vitest", ["--coverage"], {}),
        ({"test": "jest --ci"}, {}, "jest", ["--ci"], {}),
        ({"test": "NODE_ENV=test cross-env TZ=UTC jest"}, {}, "jest", [], {"NODE_ENV": "test", "TZ": "UTC"}),
        ({"test": "node --test test/"}, {"jest": "29"}, "node", ["--test", "test/"], {}),
        ({"test": "npx vitest"}, {}, "vitest", [], {}),
        ({"test": "c8 --100 node --test"}, {}, "npm", [], {}),
        ({"test": "node --test && node check.js"}, {}, "npm", [], {}),
        ({"test": "npm run test:unit", "test:unit": "node --test"}, {}, "npm", [], {}),
        ({"test": "jest", "pretest": "tsc"}, {}, "npm", [], {}),
        ({"test": "mocha"}, {"jest": "29"}, "mocha", [], {}),  # issue 49: mocha is driven through cog's reporter
        ({"test": "vitest bench"}, {}, "npm", [], {}),
        ({"test": 'echo "Error: no test specified" && exit 1'}, {}, None, [], {}),
        ({}, {"jest": "29"}, "jest", [], {}),
        ({}, {}, None, [], {}),
    ],
)
def test_the_test_script_is_driven_only_when_it_is_one_runner_invocation(
    tmp_path: Path, scripts: dict[str, str], dev: dict[str, str], kind: str | None, args: list[str], env: dict[str, str],
) -> None:
    from workspace_tools.runners.node_script import test_script

    (tmp_path / "package.json").write_text(json.dumps({"scripts": scripts, "devDependencies": dev}))
    script = test_script(tmp_path)
    assert (script.kind, script.args, script.env) == (kind, args, env)


def test_the_runners_inside_a_script_are_found_through_npm_run(tmp_path: Path) -> None:
    from workspace_tools.runners.node_script import test_script

    scripts = {"test": "npm run test:unit && npm run test:jest && tsd", "test:unit": "c8 --100 node --test",
               "test:jest": "jest --ci"}
    (tmp_path / "package.json").write_text(json.dumps({"scripts": scripts}))
    script = test_script(tmp_path)
    assert (script.kind, script.why, script.inside) == ("npm", "it chains commands", ["node", "jest"])


@pytest.mark.parametrize(
    ("command", "runner"),
    [("npm test", "npm"), ("npm run test:ci", "npm"), ("yarn test", "npm"), ("pnpm run unit", "npm"),
     ("npx jest", "jest"), ("yarn jest", "jest"), ("pnpm exec vitest run", "vitest"), ("node --test", "node"),
     ("npm test && echo done", "command"), ("nosetests", "command")],
)
def test_a_package_script_in_test_command_runs_as_written(tmp_path: Path, command: str, runner: str) -> None:
    from workspace_tools.runners import from_command

    assert from_command(Workspace(tmp_path), command).name == runner
