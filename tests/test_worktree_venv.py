"""A project's virtualenv with an editable install, copied into a worktree (``.worktreeinclude``),
is made the worktree's (issue 50, part 3's leftover): the worktree's tests import the worktree's
source, never the main tree's, and the main tree's virtualenv is not written.

A real src-layout project, ``pip install -e .`` into its own ``.venv`` (setuptools from the local
index), a real worktree and the real ``run_tests`` in the sandbox. Before the fix the copied
virtualenv had no interpreter (its links lead out of the repository) — and with ``venv --copies``
its editable ``.pth`` still named the main tree's ``src``, so the worktree's tests ran the main
tree's code (here, under /tmp, which the sandbox replaces with its own, they found no ``proj`` at
all: both fail without the fix, checked).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import init_git_repo

from cogcli.contract.invoke import invoke_tool
from cogcli.worktrees import git_ops
from workspace_tools import workspace_tools
from workspace_tools.sandbox import bwrap

SANDBOX = "on" if bwrap.bwrap_executable() else "off"
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def _project(tmp_path: Path, copies: bool) -> Path:
    repo = tmp_path / "proj"
    (repo / "src" / "proj").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                                         '[project]\nname = "proj"\nversion = "0.1"\n[tool.setuptools.packages.find]\nwhere = ["src"]\n')
    (repo / "src" / "proj" / "__init__.py").write_text('VALUE = "main"\n')
    (repo / "tests" / "test_value.py").write_text(
        "import pathlib\n\nimport proj\n\n\ndef test_value():\n"
        "    assert proj.VALUE == 'worktree', proj.__file__\n"
        "    assert '.cog/worktrees' in pathlib.Path(proj.__file__).as_posix(), proj.__file__\n")
    (repo / ".gitignore").write_text(".venv/\n*.egg-info/\n__pycache__/\n.pytest_cache/\n")
    (repo / ".worktreeinclude").write_text(".venv/\n")
    venv = [BASE_PYTHON, "-m", "venv", *(["--copies"] if copies else []), str(repo / ".venv")]
    subprocess.run(venv, check=True, capture_output=True)
    pip = [str(repo / ".venv" / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    installed = subprocess.run([*pip, "--no-deps", "-e", str(repo)], capture_output=True, text=True, check=False)
    if installed.returncode != 0:
        pytest.skip(f"pip install -e failed here (no setuptools on the index?): {installed.stderr[-300:]}")
    subprocess.run([*pip, "pytest"], capture_output=True, check=True)
    return init_git_repo(repo)


def _run_tests(root: Path) -> Any:
    tools = {t.name: t for t in workspace_tools(root, sandbox=SANDBOX, only=["run_tests"])}
    return anyio.run(invoke_tool, tools["run_tests"], {})


@pytest.mark.slow
@pytest.mark.parametrize("copies", [False, True], ids=["linked-interpreter", "copied-interpreter"])
def test_a_worktrees_tests_import_the_worktrees_edited_source(tmp_path: Path, copies: bool, caplog: pytest.LogCaptureFixture) -> None:
    repo = _project(tmp_path, copies)
    site = next((repo / ".venv" / "lib").glob("python*/site-packages"))
    main_pth = {p.name: p.read_bytes() for p in site.glob("*.pth")}
    assert any(str(repo / "src").encode() in data for data in main_pth.values())  # the editable install names the main src

    made = git_ops.create(repo, "edit")
    (made.path / "src" / "proj" / "__init__.py").write_text('VALUE = "worktree"\n')
    result = _run_tests(made.path)
    assert result.details["passed"] == 1 and result.details["failed"] == 0, result.result
    # the main tree still runs its own code, and its virtualenv was not written
    main = _run_tests(repo)
    assert main.details["failed"] == 1 and "assert 'main' == 'worktree'" in main.result
    assert {p.name: p.read_bytes() for p in site.glob("*.pth")} == main_pth
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("note: .venv/ copied")]
    assert notes and "__editable__.proj-0.1.pth" in notes[0] and "the main tree's is untouched" in notes[0], notes
    assert not [r for r in caplog.records if "python" in r.getMessage() and "not copied" in r.getMessage()]
