"""Which runner run_tests drives, and what it passes on: projects found in the workspace, paths
routed to the project they point into, [tool.cog] runner, test_command (driven through cog's own
stream when it names a runner cog knows), pass-through args, and results sized for their readers."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from cogcli import ErrorCode
from run_tests_helpers import run_tool
from runner_fixtures import need
from workspace_tools.workspace.paths import Workspace
from workspace_tools.runners import detect, from_command


def two_projects(root: Path) -> Path:
    """A Python backend and a ``node --test`` frontend in one repository."""
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "calc", root / "backend")
    front = root / "frontend"
    (front / "test").mkdir(parents=True)
    (front / "package.json").write_text(json.dumps({"scripts": {"test": "node --test"}}))
    (front / "test" / "a.test.mjs").write_text('import test from "node:test";\ntest("front passes", () => {});\n')
    (root / "fixtures" / "sample").mkdir(parents=True)
    (root / "fixtures" / "sample" / "go.mod").write_text("module sample\n")  # a sample project, not the repo's own
    return root


def test_detect_finds_each_project_and_skips_sample_folders(tmp_path: Path) -> None:
    root = two_projects(tmp_path)
    found = [(r.name, r.rel_root) for r in detect(Workspace(root))]
    assert found == [("pytest", "backend"), ("node", "frontend")]
    (root / "pyproject.toml").write_text("[project]\nname = 'top'\n")
    assert [(r.name, r.rel_root) for r in detect(Workspace(root))][0] == ("pytest", "")


def test_an_empty_workspace_still_runs_pytest(tmp_path: Path) -> None:
    assert [(r.name, r.rel_root) for r in detect(Workspace(tmp_path))] == [("pytest", "")]


@pytest.mark.parametrize(
    ("command", "runner", "argv_part"),
    [
        ("pytest -q -x", "pytest", "-m pytest -p cogcli_pytest_stream -q -x"),
        ("python -m pytest tests", "pytest", "-m pytest -p cogcli_pytest_stream tests"),
        ("go test -count=1 ./...", "go", "go test -json -count=1 ./..."),
        ("cargo test --offline", "cargo", "cargo test --offline --no-fail-fast"),
        ("node --test", "node", "--test-reporter=spec"),
        ("make test", "command", "make test"),
        ("pytest -q && echo done", "command", "pytest -q && echo done"),
    ],
)
def test_a_test_command_that_names_a_known_runner_is_driven_through_its_stream(tmp_path: Path, command: str, runner: str, argv_part: str) -> None:
    from workspace_tools.runners.base import Selection

    chosen = from_command(Workspace(tmp_path), command)
    assert chosen.name == runner
    if runner in ("pytest", "go", "cargo", "command") or shutil.which("node"):
        inv = chosen.invocation(Selection())
        assert argv_part in (inv.shown or " ".join(inv.argv))


@pytest.mark.anyio
async def test_every_project_runs_as_its_own_section_and_paths_pick_one(tmp_path: Path) -> None:
    need("node", "apt install nodejs npm")
    root = two_projects(tmp_path)
    run = await run_tool(root)

    assert run.result.ok, run.result.error
    d = run.details
    assert d["runner"] == "several"
    assert [(s["runner"], s["root"], s["outcome"]) for s in d["sections"]] == [
        ("pytest", "backend", "failed"), ("node", "frontend", "passed")]
    assert (d["outcome"], d["passed"], d["failed"]) == ("failed", 3, 1)
    assert "frontend/test/a.test.mjs::front passes" in run.outcomes()
    assert "backend/tests/test_ops.py::test_add" in run.outcomes()
    content = run.result.result
    assert content.startswith("No project environment found")  # no .venv: said first (cog's own Python ran them)
    assert "\npytest in backend/ (all tests): 1 failed, 2 passed" in content
    assert "\n\nnode in frontend/ (all tests): 1 passed" in content
    assert run.result.presentation.detail == "all · pytest: 1 failed, 2 passed; node: 1 passed"

    front = await run_tool(root, {"paths": ["frontend/test"]})
    assert front.result.ok and front.details["runner"] == "node"
    assert front.outcomes() == {"frontend/test/a.test.mjs::front passes": "passed"}

    forced = await run_tool(root, runner="node")
    assert forced.details["runner"] == "node"

    mixed = await run_tool(root, {"args": ["-x"]})
    assert mixed.result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert "args go to one runner" in (mixed.result.error or "")


@pytest.mark.anyio
async def test_a_failing_custom_command_is_a_failed_run_with_its_exit_code(make_repo) -> None:
    root = make_repo("calc")
    run = await run_tool(root, test_command="echo checking; exit 3")

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["runner"], d["outcome"], d["exit_code"], d["counted"]) == ("command", "failed", 3, False)
    assert "passed" not in d and "failed" not in d  # no counts are made up
    assert "there are no counts: its exit code is the verdict" in run.result.result

    driven = await run_tool(root, test_command="pytest -q")
    assert driven.details["runner"] == "pytest" and driven.details["outcome"] == "failed"
    assert (driven.details["passed"], driven.details["failed"]) == (2, 1)
    assert len(driven.updates) == 3  # one per test, through cog's plugin


@pytest.mark.anyio
async def test_args_pass_through_and_are_validated(make_repo) -> None:
    root = make_repo("calc")
    run = await run_tool(root, {"args": ["-x", "-p", "no:cacheprovider"], "paths": "tests/test_ops.py"})
    assert run.result.ok, run.result.error
    assert run.outcomes() == {"tests/test_ops.py::test_add": "failed"}  # -x stopped at the first failure
    assert "-x -p no:cacheprovider tests/test_ops.py" in run.details["command"]

    for bad, word in ((["--junitxml=out.xml"], "--junitxml"), (["-p", "evil_plugin"], "-p"),
                      (["--rootdir=/"], "--rootdir"), (["-c", "/etc/pytest.ini"], "-c")):
        refused = await run_tool(root, {"args": bad})
        assert refused.result.error_code == ErrorCode.INVALID_ARGUMENTS, bad
        assert f"args: {word} is not allowed for pytest" in (refused.result.error or "")
    outside = await run_tool(root, {"args": ["../elsewhere/test_x.py"]})
    assert outside.result.error_code == ErrorCode.PATH_OUTSIDE_WORKSPACE
    missing = await run_tool(root, {"paths": ["tests/nope.py"]})
    assert missing.result.error_code == ErrorCode.FILE_NOT_FOUND


@pytest.mark.anyio
async def test_the_workspace_venv_bin_comes_first_on_the_tests_path(make_repo) -> None:
    import subprocess

    root = make_repo("calc")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(root / ".venv")], check=True)
    (root / "tests" / "test_path.py").write_text(
        "import os\n\n\ndef test_venv_first():\n"
        f"    assert os.environ['PATH'].split(os.pathsep)[0] == {str(root / '.venv' / 'bin')!r}\n"
        f"    assert os.environ['VIRTUAL_ENV'] == {str(root / '.venv')!r}\n"
    )
    run = await run_tool(root, {"paths": ["tests/test_path.py"]})
    assert run.result.ok, run.result.error
    assert run.outcomes() == {"tests/test_path.py::test_venv_first": "passed"}, run.details["failures"]


@pytest.mark.anyio
async def test_a_big_run_keeps_its_details_bounded_and_writes_the_full_report(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    body = "import pytest\n\n\n@pytest.mark.parametrize('i', range(620))\ndef test_many(i):\n    assert i % 300 != 7\n"
    (tmp_path / "tests" / "test_many.py").write_text(body)
    run = await run_tool(tmp_path)

    d = run.details
    assert (d["passed"], d["failed"], d["tests_total"]) == (617, 3, 620)
    assert len(d["tests"]) == 500 and d["tests_dropped"] == 120
    assert [f["id"] for f in d["failures"]] == [f"tests/test_many.py::test_many[{i}]" for i in (7, 307, 607)]
    full = json.loads((tmp_path / d["report_file"]).read_text())
    assert len(full["tests"]) == 620 and full["failed"] == 3
    assert d["report_file"].startswith(".cog/test-reports/")
    assert len(json.dumps(d)) < 200_000


@pytest.mark.anyio
async def test_no_tests_is_its_own_failure(make_repo) -> None:
    run = await run_tool(make_repo("calc"), {"keyword": "nothing_is_called_this"})
    assert (run.details["outcome"], run.details["exit_code"]) == ("no-tests", 5)


@pytest.mark.anyio
async def test_a_broken_conftest_shows_its_own_error_first(make_repo) -> None:
    root = make_repo("calc")
    (root / "tests" / "conftest.py").write_text("import helper_module_that_is_missing\n")
    run = await run_tool(root)

    assert run.result.error_code == ErrorCode.TOOL_ERROR
    error = run.result.error or ""
    # with no project environment, that comes first (a missing module may be why); then pytest's own error
    no_env, _, error = error.partition("\n")
    assert no_env.startswith("No project environment found")
    assert error.lstrip("\n").startswith("pytest could not start: ImportError while loading conftest")
    assert "helper_module_that_is_missing" in error
    assert "is pytest installed" not in error


@pytest.mark.anyio
async def test_a_collection_error_says_where_and_how_many_tests_did_not_run(make_repo) -> None:
    root = make_repo("outcomes")
    run = await run_tool(root, {"paths": ["broken", "tests"]})

    d = run.details
    assert (d["outcome"], d["errors"], d["passed"]) == ("error", 1, 0)
    (failure,) = d["failures"]
    assert (failure["file"], failure["line"], failure["when"]) == ("broken/test_broken.py", 3, "collect")
    assert "pytest stopped at 1 collection error in broken/test_broken.py (line 3): the 7 tests collected elsewhere did not run" in run.result.result
    assert "FAILED broken" not in run.result.result


@pytest.mark.anyio
async def test_warnings_and_subtests_are_counted_one_number_one_meaning(make_repo) -> None:
    root = make_repo("outcomes")
    (root / "tests" / "test_warns.py").write_text("import warnings\n\n\ndef test_warns():\n    warnings.warn(UserWarning('careful'))\n")
    run = await run_tool(root, {"paths": ["tests"]})

    d = run.details
    assert d["warnings"] == 1
    assert d["subtests"] == {"passed": 2, "failed": 1, "skipped": 0}
    assert (d["failed"], d["passed"], d["errors"]) == (2, 2, 2)
    # the words say the details' numbers: each test once (a failed subtest fails its test), its subtests apart
    words = "2 failed, 2 passed, 1 skipped, 1 xfailed, 2 errors, 1 warning, 2 subtests passed, 1 subtest failed"
    assert d["summary"] == words
    assert f"pytest (tests): {words} in " in run.result.result
    # pytest's own line counts the failed subtest as one more failure: kept, and said to differ
    assert d["runner_summary"] == "3 failed, 3 passed, 1 skipped, 1 xfailed, 1 warning, 2 errors"
    assert "pytest's own summary says “3 failed, 3 passed" in run.result.result


@pytest.mark.anyio
async def test_a_failed_unittest_subtest_is_named_and_its_test_counted_once(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "test_loop.py").write_text(
        "import unittest\n\n\nclass Loop(unittest.TestCase):\n    def test_values(self):\n        for n in range(4):\n"
        "            with self.subTest(n=n):\n                self.assertNotEqual(n, 2, 'two is bad')\n\n"
        "    def test_plain(self):\n        pass\n")
    run = await run_tool(tmp_path)

    d = run.details
    assert (d["failed"], d["passed"], d["collected"]) == (1, 1, 2)  # pytest's own line: "1 failed, 2 passed"
    assert d["subtests"] == {"passed": 3, "failed": 1, "skipped": 0}
    (failure,) = d["failures"]
    assert failure["id"] == "test_loop.py::Loop::test_values"
    assert failure["message"] == "SUBFAILED(n=2) - AssertionError: 2 == 2 : two is bad"
    assert (failure["file"], failure["line"]) == ("test_loop.py", 8)
    assert "pytest (all tests): 1 failed, 1 passed, 3 subtests passed, 1 subtest failed in " in run.result.result


def test_a_single_path_is_a_one_item_list() -> None:
    from workspace_tools.runners.run_tests import RunTestsParams

    assert RunTestsParams.model_validate({"paths": "tests/x.py"}).paths == ["tests/x.py"]
    assert RunTestsParams.model_validate({"args": "-x"}).args == ["-x"]


def test_tool_cog_runner_is_read_and_checked(tmp_path: Path) -> None:
    from cogcli.commands.common import make_tools
    from cogcli.settings.load import load_settings
    from cogcli.contract.errors import ConfigError

    (tmp_path / "pyproject.toml").write_text('[tool.cog]\nrunner = "go"\n')
    settings = load_settings(tmp_path, sandbox="off")
    assert settings.runner == "go"
    (run_tests,) = [t for t in make_tools(settings) if t.name == "run_tests"]
    assert run_tests.name == "run_tests"
    (tmp_path / "pyproject.toml").write_text('[tool.cog]\nrunner = "maven"\n')
    with pytest.raises(ConfigError, match="runner"):
        load_settings(tmp_path)


def test_refused_options_match_whole_flags(tmp_path: Path) -> None:
    from workspace_tools.runners.base import check_args
    from workspace_tools.runners.go import GoRunner
    from workspace_tools.runners.pytest import PytestRunner

    ws = Workspace(tmp_path)
    go = GoRunner(ws, tmp_path)
    assert check_args(["-count=1", "-v", "-run", "TestX"], go) == ["-count=1", "-v", "-run", "TestX"]
    for bad in (["-c"], ["-o=x"], ["-exec", "sh"], ["-json"]):
        with pytest.raises(Exception, match="is not allowed for go"):
            check_args(bad, go)
    py = PytestRunner(ws, tmp_path)
    assert check_args(["-pno:cacheprovider", "-x", "--lf", "-n", "2"], py) == ["-pno:cacheprovider", "-x", "--lf", "-n", "2"]
    with pytest.raises(Exception, match="-p is not allowed"):
        check_args(["-pevil"], py)


@pytest.mark.anyio
async def test_a_failure_points_at_the_tests_own_line_and_keeps_where_it_raised(tmp_path: Path) -> None:
    """pytest's summary points at the test's line that failed, not at ``raise KeyError`` deep in
    the code under test (issue 43): so does cog; the deepest frame stays in the details."""
    root = tmp_path / "deep"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("def look(d):\n    return d['x']\n")
    (root / "tests" / "test_a.py").write_text("from pkg import look\n\n\ndef test_look():\n    assert look({}) == 1\n")
    run = await run_tool(root)
    (failure,) = run.details["failures"]
    (test,) = run.details["tests"]
    assert (failure["file"], failure["line"]) == ("tests/test_a.py", 5)
    assert (test["file"], test["line"], test["crash_file"], test["crash_line"]) == ("tests/test_a.py", 5, "pkg/__init__.py", 2)
