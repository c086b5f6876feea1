"""The project's environment where people's tools put it, found and run in the sandbox as they have it.

Each case builds the real shape in a temporary HOME: a real ``python -m venv`` under
``~/.cache/pypoetry/virtualenvs`` answered by a ``poetry`` installed pipx-style (a program inside a
virtualenv of its own), a pipenv env in ``~/.local/share/virtualenvs``, a ``.venv`` linked to
``~/.virtualenvs/x``, a conda-shaped env (``conda-meta/``) named by ``environment.yml``, a
pyenv-like shims folder in a git checkout; then ``cog tool run_tests`` runs the real pytest in the
real sandbox, without and with the environment activated, and must count what pytest counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_helpers import run_cog
from conftest import init_git_repo
from workspace_tools.sandbox import bwrap

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bwrap.bwrap_executable() is None, reason="bubblewrap is not usable here")]

#: the base interpreter running these tests (it has pytest): the venvs are made from it
BASE = os.path.realpath(sys.executable)
TESTS = textwrap.dedent("""\
    import only_in_env

    def test_one():
        assert only_in_env.VALUE == 42

    def test_two():
        assert True

    def test_three():
        assert 1 + 1 == 2
""")


def venv(folder: Path) -> Path:
    """A real virtualenv (from the base interpreter, seeing its pytest) holding a module the tests import."""
    subprocess.run([BASE, "-m", "venv", "--without-pip", "--system-site-packages", str(folder)], check=True)
    site = next((folder / "lib").glob("python*")) / "site-packages"
    (site / "only_in_env.py").write_text("VALUE = 42\n")
    return folder


def program(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def pipx_tool(home: Path, name: str, body: str) -> None:
    """``name`` installed the way pipx does: its own virtualenv, linked from ~/.local/bin."""
    tool_env = home / ".local" / "pipx" / "venvs" / name
    (tool_env / "bin").mkdir(parents=True)
    (tool_env / "pyvenv.cfg").write_text(f"home = {Path(BASE).parent}\n")
    real = program(tool_env / "bin" / name, body)
    (home / ".local" / "bin").mkdir(parents=True, exist_ok=True)
    (home / ".local" / "bin" / name).symlink_to(real)


def project(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for rel, text in {"tests/test_x.py": TESTS, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return init_git_repo(root)


def run(repo: Path, home: Path, extra: dict[str, str] | None = None) -> dict:
    env = {"HOME": str(home), "PATH": f"{home / '.local' / 'bin'}:/usr/bin:/bin", **(extra or {})}
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "UV_PROJECT_ENVIRONMENT"):
        env.setdefault(name, "")
    done = run_cog(["tool", "run_tests", "--json", "--sandbox", "on"], repo, env=env)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert events and events[-1]["type"] == "tool-result", (done.stdout[-2000:], done.stderr[-2000:])
    return events[-1]


def counts(result: dict) -> tuple[int, int, str | None]:
    details = result.get("details") or {}
    assert not result.get("error"), result
    return details.get("passed"), details.get("failed"), (details.get("environment") or {}).get("source")


def test_poetry_with_its_defaults_pipx_poetry_and_a_cache_venv(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = venv(home / ".cache" / "pypoetry" / "virtualenvs" / "proj-Abc123-py3.11")
    pipx_tool(home, "poetry", f'echo "$PATH" > "{tmp_path}/poetry-path"\n'
                              f'[ "$*" = "--no-plugins --no-interaction --no-ansi env info -p" ] && echo "{env}"\n')
    repo = project(tmp_path / "proj", {"pyproject.toml": "[tool.poetry]\nname = 'proj'\n", "poetry.lock": ""})
    result = run(repo, home)
    assert counts(result) == (3, 0, "poetry")
    assert result["details"]["environment"]["env"] == str(env)
    # activated (poetry shell / source …/activate): the same counts, the same folder
    assert counts(run(repo, home, {"VIRTUAL_ENV": str(env)})) == (3, 0, "$VIRTUAL_ENV")


def test_pipenv_s_env_in_local_share(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = venv(home / ".local" / "share" / "virtualenvs" / "proj-Xy12Ab")
    pipx_tool(home, "pipenv", f'[ "$*" = "--venv" ] && [ "$PIPENV_DONT_LOAD_ENV" = 1 ] && echo "{env}"\n')
    repo = project(tmp_path / "proj", {"Pipfile": "[packages]\n"})
    assert counts(run(repo, home)) == (3, 0, "pipenv")
    assert counts(run(repo, home, {"VIRTUAL_ENV": str(env)})) == (3, 0, "$VIRTUAL_ENV")


def test_a_dot_venv_linked_to_a_venv_outside(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = venv(home / ".virtualenvs" / "proj")
    repo = project(tmp_path / "proj", {"pyproject.toml": "[project]\nname = 'proj'\n"})
    (repo / ".venv").symlink_to(env)
    assert counts(run(repo, home)) == (3, 0, ".venv")
    assert counts(run(repo, home, {"VIRTUAL_ENV": str(env)})) == (3, 0, ".venv")


def test_a_conda_env_named_by_environment_yml(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = home / "miniconda3" / "envs" / "proj"
    (env / "conda-meta").mkdir(parents=True)
    (env / "conda-meta" / "history").write_text("")
    (env / "bin").mkdir()
    (env / "bin" / "python").symlink_to(BASE)
    site = home / "site"  # the env's own packages: on PYTHONPATH, as conda's site-packages would be
    site.mkdir()
    (site / "only_in_env.py").write_text("VALUE = 42\n")
    program(home / ".local" / "bin" / "conda", f'[ "$*" = "env list --json" ] && echo \'{{"envs": ["{home}/miniconda3", "{env}"]}}\'\n')
    repo = project(tmp_path / "proj", {"environment.yml": "name: proj\ndependencies: [python=3.11]\n",
                                       "conftest.py": f"import sys\nsys.path.insert(0, {str(site)!r})\n"})
    (repo / ".cog").mkdir(exist_ok=True)
    result = run(repo, home, {"COG_SANDBOX_WRITABLE": str(site)})
    assert counts(result) == (3, 0, "conda")
    assert counts(run(repo, home, {"CONDA_PREFIX": str(env), "COG_SANDBOX_WRITABLE": str(site)})) == (3, 0, "$CONDA_PREFIX")


def test_pyenv_shims_in_a_git_checkout_stay_on_the_tools_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / ".pyenv"
    init_git_repo(program(root / "shims" / "python3", f'exec "{BASE}" "$@"\n').parent.parent)
    env = venv(home / ".cache" / "pypoetry" / "virtualenvs" / "proj-Abc123-py3.11")
    pipx_tool(home, "poetry", f'echo "$PATH" > "{tmp_path}/poetry-path"\necho "{env}"\n')
    repo = project(tmp_path / "proj", {"pyproject.toml": "[tool.poetry]\nname = 'proj'\n", "poetry.lock": ""})
    path = f"{root / 'shims'}:{home / '.local' / 'bin'}:/usr/bin:/bin"
    assert counts(run(repo, home, {"PATH": path, "PYENV_ROOT": str(root)})) == (3, 0, "poetry")
    assert str(root / "shims") in (tmp_path / "poetry-path").read_text()  # poetry sees the person's shims
    # no environment at all: the person's python3 (the shim) runs pytest, and the first line says so
    bare = project(tmp_path / "bare", {"pyproject.toml": "[project]\nname = 'bare'\n", "only_in_env.py": "VALUE = 42\n",
                                           ".python-version": "3.11\n"})
    result = run(bare, home, {"PATH": path, "PYENV_ROOT": str(root)})
    assert counts(result) == (3, 0, "PATH")
    assert str(result["result"]).startswith("No project environment found")


def test_an_env_the_sandbox_cannot_show_says_which_python_why_and_the_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = venv(home / ".ssh" / "envs" / "proj")  # never shown: a key folder
    repo = project(tmp_path / "proj", {"pyproject.toml": "[project]\nname = 'proj'\n"})
    result = run_cog(["tool", "run_tests", "--json", "--sandbox", "on"], repo,
                     env={"HOME": str(home), "PATH": "/usr/bin:/bin", "VIRTUAL_ENV": str(env)})
    last = json.loads(result.stdout.splitlines()[-1])
    message = last["error"]["message"] if isinstance(last.get("error"), dict) else str(last.get("error") or last.get("result"))
    first = message.splitlines()[0]
    assert first.startswith(f"The project's Python {env}/bin/python ($VIRTUAL_ENV")
    assert "Fix:" in first and "Traceback" not in message
