"""The environment a project's own tool tests in (issue 49): Hatch's ``hatch-test`` matrix env, asked
of the real ``hatch``; a tox env when the project's ``.venv`` has no pytest; advice that goes through
the tool that manages an env, never ``pip install`` into it; and the text output's first line naming
the interpreter when it is not the project's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_helpers import cog_python, run_cog
from conftest import init_git_repo
from workspace_tools.sandbox import python as pyenv

HATCH_PROJECT = """\
[project]
name = "hproj"
version = "0.1"

[tool.hatch.envs.default]
dependencies = []
"""
TEST_FILE = "def test_one():\n    assert 1 + 1 == 2\n"


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    pyenv._answers.clear()
    yield
    pyenv._answers.clear()


def make_venv(folder: Path, *, with_pytest: bool) -> Path:
    """A real virtualenv (``python -m venv``, no pip); ``with_pytest``: it imports cog's test
    environment's packages (a ``.pth``) and holds pytest by name, as an env pytest was installed in."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    if with_pytest:
        site = next((folder / "lib").glob("python*/site-packages"))
        ours = Path(sysconfig.get_paths()["purelib"])
        (site / "cog-test-packages.pth").write_text(f"{ours}\n")
        (site / "pytest").symlink_to(ours / "pytest")
    return folder


def hatch_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real hatch (a dev dependency) linked from a folder of the person's, with its data in ``tmp_path``."""
    hatch = shutil.which("hatch", path=str(Path(sys.executable).parent)) or shutil.which("hatch", path=os.environ.get("PATH"))
    if hatch is None:
        pytest.skip("hatch is not installed (pip install -e '.[dev]' installs it)")
    tools = tmp_path / "person-bin"
    tools.mkdir()
    (tools / "hatch").symlink_to(hatch)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    monkeypatch.setenv("HATCH_DATA_DIR", str(tmp_path / "hatch-data"))
    (tmp_path / "hatch-config.toml").write_text("")  # hatch's config: else it writes one into XDG_CONFIG_HOME
    monkeypatch.setenv("HATCH_CONFIG", str(tmp_path / "hatch-config.toml"))
    return tools / "hatch"


def hatch_envs(hatch: Path, repo: Path, *name: str) -> list[Path]:
    out = subprocess.run([str(hatch), "env", "find", *name], cwd=repo, capture_output=True, text=True, check=True).stdout
    return [Path(line) for line in out.split()]


def test_a_hatch_project_runs_in_the_hatch_test_env_not_the_default_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_git_repo(tmp_path / "repo", commit=False)
    (repo / "pyproject.toml").write_text(HATCH_PROJECT)
    hatch = hatch_on_path(tmp_path, monkeypatch)
    default = make_venv(hatch_envs(hatch, repo)[0], with_pytest=False)  # `hatch shell`'s env: no pytest
    before = pyenv.find_project_python(repo, repo)
    assert (before.source, before.env) == ("hatch", default)  # what cog picked before the fix, too
    pyenv._answers.clear()
    matrix = hatch_envs(hatch, repo, "hatch-test")
    assert len(matrix) > 1 and all(p.name.startswith("hatch-test.py") for p in matrix)  # Hatch's own matrix
    made = make_venv(matrix[-1], with_pytest=True)  # `hatch test` made one of them
    found = pyenv.find_project_python(repo, repo)
    assert (found.source, found.env, found.trusted_env) == ("hatch", made, True)
    assert found.python == str(made / "bin" / "python")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_a.py").write_text(TEST_FILE)
    done = run_cog(["tool", "run_tests", "--json"], repo, env={"PATH": os.environ["PATH"],  # in the sandbox, where it works
                                                               "HATCH_DATA_DIR": os.environ["HATCH_DATA_DIR"], "HATCH_CONFIG": os.environ["HATCH_CONFIG"]})
    assert done.returncode == 0, done.stdout + done.stderr
    result = [json.loads(line) for line in done.stdout.splitlines() if '"tool-result"' in line][-1]
    details = result["details"]
    assert (details["passed"], details["environment"]["source"], details["environment"]["env"]) == (1, "hatch", str(made))


def test_hatch_without_its_test_env_says_to_run_hatch_test_not_pip_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_git_repo(tmp_path / "repo", commit=False)
    (repo / "pyproject.toml").write_text(HATCH_PROJECT)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_a.py").write_text(TEST_FILE)
    hatch = hatch_on_path(tmp_path, monkeypatch)
    make_venv(hatch_envs(hatch, repo)[0], with_pytest=False)
    done = run_cog(["tool", "run_tests", "--sandbox", "off"], repo, env={"PATH": os.environ["PATH"],
                                                                          "HATCH_DATA_DIR": os.environ["HATCH_DATA_DIR"], "HATCH_CONFIG": os.environ["HATCH_CONFIG"]})
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stdout + done.stderr
    assert "pytest is not installed for" in text and "run `hatch test` once" in text
    assert "pip install" not in text  # never into an env Hatch manages
    assert "Traceback" not in text


def test_a_tox_env_with_pytest_wins_over_a_venv_without_it(tmp_path: Path) -> None:
    repo = init_git_repo(tmp_path / "repo", commit=False)
    (repo / "tox.ini").write_text("[tox]\nenv_list = py\n[testenv]\ndeps = pytest\ncommands = pytest\n")
    own = make_venv(repo / ".venv", with_pytest=False)
    assert pyenv.find_project_python(repo, repo).env == own  # no tox env yet: the project's .venv
    tox_env = make_venv(repo / ".tox" / "py", with_pytest=True)
    found = pyenv.find_project_python(repo, repo)
    assert (found.source, found.env) == ("tox", tox_env)
    make_venv(repo / "venv-with", with_pytest=True)
    shutil.rmtree(own)
    (repo / ".venv").symlink_to(repo / "venv-with")  # an own env that has pytest comes first again
    assert pyenv.find_project_python(repo, repo).source == ".venv"


@pytest.mark.parametrize(("source", "env", "advice"), [
    ("poetry", "x-py3.11", "poetry add --group dev pytest"),
    ("tox", "py311", "tox -e py311"),
    ("pdm", "x", "pdm add -dG test pytest"),
    ("hatch", "hatch-test.py3.11", "[tool.hatch.envs.hatch-test] extra-dependencies"),
    (".venv", ".venv", "-m pip install pytest"),
])
def test_advice_goes_through_the_tool_that_manages_the_env(tmp_path: Path, source: str, env: str, advice: str) -> None:
    from workspace_tools.sandbox.interpreter import ProjectPython

    project = ProjectPython(str(tmp_path / env / "bin" / "python"), source, tmp_path / env)
    text = project.install_advice("pytest")
    assert advice in text
    assert ("pip install" in text) == (source == ".venv")


def test_the_text_output_s_first_line_names_cog_s_python_and_the_missing_tool(tmp_path: Path) -> None:
    """tinydb with poetry not on PATH: the tests ran with cog's Python, and the text said nothing."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[tool.poetry]\nname = 'x'\n")
    (repo / "poetry.lock").write_text("")
    (repo / "tests" / "test_a.py").write_text(TEST_FILE)
    init_git_repo(repo)
    done = run_cog(["tool", "run_tests"], repo, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.lstrip().startswith("…")]
    assert lines[0] == "Run tests  all · 1 passed", lines
    # the line under the row, whatever the outcome: which interpreter ran them, and why
    assert lines[1].startswith(f"    No project environment found (.venv, venv, $VIRTUAL_ENV, uv/poetry/pipenv/hatch/pdm/conda): "
                               f"pytest ran with cog's own Python ({cog_python()}), not the project's")
    assert "the project uses poetry, which is not installed here (or not on PATH)" in " ".join(lines[1:])
    (repo / ".venv").symlink_to(make_venv(tmp_path / "own-env", with_pytest=True))
    done = run_cog(["tool", "run_tests"], repo, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Run tests  all · 1 passed" in done.stdout and "No project environment" not in done.stdout  # its own env: nothing to say


def test_a_missing_hatch_is_named_only_for_a_project_that_works_with_hatch(tmp_path: Path) -> None:
    """``[tool.hatch.build]`` is hatchling's (the build backend): no note that hatch is missing; an
    ``envs`` table is Hatch's own workflow, and its absence is said."""
    repo = init_git_repo(tmp_path / "repo", commit=False)
    (repo / "pyproject.toml").write_text("[project]\nname = 'hb'\nversion = '0'\n[tool.hatch.build.targets.wheel]\npackages = ['hb']\n")
    found = pyenv.find_project_python(repo, repo)
    assert found.fallback and found.notes == ()
    (repo / "pyproject.toml").write_text(HATCH_PROJECT)
    found = pyenv.find_project_python(repo, repo)
    assert found.notes == ("the project uses hatch, which is not installed here (or not on PATH): install it and make the "
                           "project's environment (hatch test), then run the tests again",)
