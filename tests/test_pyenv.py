"""Which Python runs the workspace's tests (:mod:`workspace_tools.sandbox.python`), and a verdict that is
about the workspace's code: a src-layout project whose package is also installed elsewhere (here:
iniconfig, which pytest itself depends on) passed falsely before; now the run is an error naming
the package, both places and the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_helpers import run_cog
from conftest import init_git_repo
from workspace_tools.sandbox import python as pyenv

PYTHON = os.path.realpath(sys.executable)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No activated env, uv setting or remembered tool answer of the person running the tests."""
    for name in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the system's python3, without pytest: no person's python is found
    pyenv._answers.clear()
    yield
    pyenv._answers.clear()


def make_env(folder: Path, *, cfg: bool = True) -> Path:
    """A virtualenv-shaped folder whose ``bin/python`` links to a real interpreter."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(PYTHON)
    if cfg:
        (folder / "pyvenv.cfg").write_text(f"home = {Path(PYTHON).parent}\n")
    return folder


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {"README.md": "x\n"}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return init_git_repo(root)


# -- finding the environment -------------------------------------------------------------------


@pytest.mark.parametrize("name", [".venv", "venv", "env"])
def test_an_in_project_env_is_the_project_s_python(tmp_path: Path, name: str) -> None:
    repo = make_repo(tmp_path / "repo")
    env = make_env(repo / name)
    found = pyenv.find_project_python(repo, repo)
    assert found.python == str(env / "bin" / "python")
    assert found.env == env and not found.fallback
    assert found.source == (name if name in (".venv", "venv") else "pyvenv.cfg")


def test_the_runner_s_folder_comes_before_the_workspace_root_and_dot_venv_before_others(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    make_env(repo / ".venv")
    make_env(repo / "backend" / "venv")
    make_env(repo / "backend" / "aaa-env")
    assert pyenv.find_project_python(repo / "backend", repo).env == repo / "backend" / "venv"
    assert pyenv.find_project_python(repo / "frontend", repo).env == repo / ".venv"


def test_a_folder_without_pyvenv_cfg_or_a_python_is_not_an_env(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    make_env(repo / "tools", cfg=False)
    (repo / "broken").mkdir()
    (repo / "broken" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (repo / "linked").symlink_to(make_env(tmp_path / "elsewhere"))  # a link is not followed
    assert pyenv.find_project_python(repo, repo).fallback


def test_an_activated_virtual_env_that_is_not_cog_s_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    env = make_env(tmp_path / "envs" / "project")
    monkeypatch.setenv("VIRTUAL_ENV", str(env))
    found = pyenv.find_project_python(repo, repo)
    assert (found.source, found.env, found.trusted_env) == ("$VIRTUAL_ENV", env, True)
    make_env(repo / ".venv")  # the project's own env still comes first
    assert pyenv.find_project_python(repo, repo).source == ".venv"


def test_cog_s_own_virtual_env_is_not_the_project_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    found = pyenv.find_project_python(repo, repo)
    assert found.fallback and found.python == sys.executable and found.env is None
    note = found.fallback_note()
    assert note.startswith("No project environment found (.venv, venv, $VIRTUAL_ENV, uv/poetry/pipenv/hatch/pdm/conda)")
    assert sys.executable in note and "python -m venv .venv && .venv/bin/pip install -e . pytest" in note


def test_uv_uses_the_project_venv_or_the_person_s_uv_project_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {"uv.lock": "version = 1\n", "pyproject.toml": "[project]\nname='x'\n"})
    make_env(repo / ".venv")
    assert pyenv.find_project_python(repo, repo).source == ".venv"  # uv's default place
    (repo / ".venv" / "bin" / "python").unlink()
    monkeypatch.setenv("UV_PROJECT_ENVIRONMENT", "build/uv-env")  # relative: to the project
    env = make_env(repo / "build" / "uv-env", cfg=False)
    found = pyenv.find_project_python(repo, repo)
    assert (found.source, found.env) == ("uv", env)
    (repo / "uv.lock").unlink()  # the setting is uv's: without uv.lock it is not read
    assert pyenv.find_project_python(repo, repo).fallback


# -- poetry, hatch and pdm: asked only when installed on the host ------------------------------------


@pytest.fixture
def tools(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A trusted PATH folder outside any repository, for fake poetry/hatch/pdm programs."""
    folder = tmp_path_factory.mktemp("host-tools")
    assert pyenv.is_host_file(folder / "x")  # nothing above it is a work tree or a virtualenv
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


def fake_tool(folder: Path, name: str, prints: str) -> Path:
    """A program that records how it was called and prints ``prints``."""
    log = folder / f"{name}.calls"
    script = folder / name
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        printf '%s|%s|%s\\n' "$(pwd)" "$*" "${{VIRTUAL_ENV:-}}" >> {log}
        echo "some chatter"
        echo "{prints}"
        """))
    script.chmod(0o755)
    return log


TOOL_CASES = [
    ("poetry", {"poetry.lock": "", "pyproject.toml": "[tool.poetry]\nname = 'x'\n"}, "--no-plugins --no-interaction --no-ansi env info -p"),
    ("hatch", {"pyproject.toml": "[project]\nname = 'x'\n[tool.hatch.envs.default]\ndependencies = []\n"}, "env find"),
    ("pdm", {"pdm.lock": "", "pyproject.toml": "[project]\nname = 'x'\n"}, "info --python"),
]


@pytest.mark.parametrize(("tool", "files", "argv"), TOOL_CASES)
def test_a_tool_s_environment_is_asked_of_the_tool_when_it_is_installed(
    tmp_path: Path, tools: Path, monkeypatch: pytest.MonkeyPatch, tool: str, files: dict[str, str], argv: str
) -> None:
    repo = make_repo(tmp_path / "repo", files)
    env = make_env(tmp_path / "cache" / f"{tool}-envs" / "x-py3.11")
    log = fake_tool(tools, tool, str(env / "bin" / "python") if tool == "pdm" else str(env))
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)  # cog's own: never handed to the tool
    found = pyenv.find_project_python(repo, repo)
    assert (found.source, found.env, found.trusted_env) == (tool, env, True)
    assert found.python == str(env / "bin" / "python")
    calls = log.read_text().splitlines()
    first = [f"{repo}|env find hatch-test|"] if tool == "hatch" else []  # where `hatch test` runs, asked first
    assert calls == [*first, f"{repo}|{argv}|"]  # in the project, with these arguments, no activated env
    pyenv.find_project_python(repo, repo)
    assert len(log.read_text().splitlines()) == len(first) + 1  # the answer is remembered


@pytest.mark.parametrize(("tool", "files", "argv"), TOOL_CASES)
def test_a_tool_that_is_not_installed_is_not_asked(tmp_path: Path, tool: str, files: dict[str, str], argv: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", files)
    planted = repo / "bin"
    planted.mkdir()
    log = fake_tool(planted, tool, str(make_env(tmp_path / "env")))  # the workspace's own "poetry"
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}/usr/bin:/bin")
    found = pyenv.find_project_python(repo, repo)
    assert found.fallback
    assert not log.exists()  # a program in the workspace is never run on the host


@pytest.mark.parametrize(("tool", "files", "planted"), [
    ("poetry", {"poetry.lock": "", "pyproject.toml": "[tool.poetry]\nname='x'\n"}, {"poetry.toml": "[virtualenvs]\npath = 'envs'\n"}),
    ("hatch", {"pyproject.toml": "[tool.hatch.env]\nrequires = ['hatch-evil']\n"}, {}),
    ("hatch", {"pyproject.toml": "[tool.hatch.envs.default]\n"}, {"hatch_plugins.py": "import os\n"}),
    ("pdm", {"pdm.lock": "", "pyproject.toml": "[project]\nname='x'\n"}, {".pdm-plugins/x.pth": "import os\n"}),
    ("pdm", {"pdm.lock": "", "pyproject.toml": "[project]\nname='x'\n"}, {".pdm-python": "/tmp/evil/python\n"}),
])
def test_a_tool_whose_workspace_settings_would_run_workspace_code_is_not_asked(
    tmp_path: Path, tools: Path, tool: str, files: dict[str, str], planted: dict[str, str]
) -> None:
    repo = make_repo(tmp_path / "repo", {**files, **planted})
    log = fake_tool(tools, tool, str(make_env(tmp_path / "env")))
    found = pyenv.find_project_python(repo, repo)
    assert found.fallback and not log.exists()
    assert len(found.notes) == 1 and found.notes[0].startswith(f"{tool} was not asked")


def test_a_tool_installed_in_a_virtualenv_on_path_is_not_asked_and_the_note_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m venv ~/poetry && ~/poetry/bin/pip install poetry`` with that bin on PATH: not run
    on the host (a workspace's env could hold a "poetry"), and the person is told, not just "install it"."""
    repo = make_repo(tmp_path / "repo", TOOL_CASES[0][1])
    venv_bin = make_env(tmp_path / "poetry-venv") / "bin"
    log = fake_tool(venv_bin, "poetry", str(make_env(tmp_path / "env")))
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}/usr/bin:/bin")
    found = pyenv.find_project_python(repo, repo)
    assert found.fallback and not log.exists()
    assert [n for n in found.notes if n.startswith("poetry was not asked")] == [
        f"poetry was not asked for the project's environment: the poetry on PATH ({venv_bin / 'poetry'}) is inside a "
        "virtualenv or a git work tree, where cog runs no program on the host; install poetry with pipx or its own "
        "installer, or link it from a folder such as ~/.local/bin"]


def test_a_tool_s_answer_that_is_not_an_env_is_ignored(tmp_path: Path, tools: Path) -> None:
    repo = make_repo(tmp_path / "repo", TOOL_CASES[0][1])
    fake_tool(tools, "poetry", "not a path\x1b[31m")
    assert pyenv.find_project_python(repo, repo).fallback
    pyenv._answers.clear()
    fake_tool(tools, "poetry", str(tmp_path / "no-such-env"))
    assert pyenv.find_project_python(repo, repo).fallback


# -- what the sandbox shows for it --------------------------------------------------------------------


def test_the_sandbox_shows_the_base_installation_the_host_interpreter_reports(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    make_env(repo / ".venv")
    shown, notes = pyenv.sandbox_paths(pyenv.find_project_python(repo, repo), repo)
    base = Path(os.path.realpath(sys.base_prefix))  # this interpreter's installation (pyenv's, here)
    assert notes == []
    assert shown == ([base] if pyenv.bind_allowed(base) else [])


def test_a_trusted_env_outside_the_workspace_is_shown_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    env = make_env(tmp_path / "person" / "envs" / "project")
    monkeypatch.setenv("VIRTUAL_ENV", str(env))
    shown, notes = pyenv.environments(pyenv.find_project_python(repo, repo), repo)
    assert shown == [env] and not notes  # the host confirmed it: its interpreter answered, pyvenv.cfg beside it


# -- the workspace's own packages --------------------------------------------------------------------


def test_workspace_packages_are_src_and_flat_packages_not_links(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {
        "src/alpha/__init__.py": "", "beta/__init__.py": "", "tests/test_a.py": "", "gamma/notes.txt": "",
        "not-a-name/__init__.py": "", ".hidden/__init__.py": "",
    })
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "__init__.py").write_text("")
    (repo / "delta").symlink_to(tmp_path / "outside")
    found = pyenv.workspace_packages([repo])
    assert found == {"alpha": [str(repo / "src" / "alpha")], "beta": [str(repo / "beta")]}


# -- a real src-layout project: the verdict is about the workspace's code ----------------------------


BROKEN_INICONFIG = {
    "pyproject.toml": "[project]\nname = 'iniconfig'\nversion = '0.0.1'\n",
    "src/iniconfig/__init__.py": "raise RuntimeError('the workspace copy of iniconfig was imported')\n",
    "tests/test_ini.py": "import iniconfig\n\n\ndef test_parses():\n    assert iniconfig.IniConfig('x', data='[a]\\nb = 1\\n')['a']['b'] == '1'\n",
}


def run_tests_cli(repo: Path, sandbox: str = "off") -> tuple[int, dict]:
    done = run_cog(["tool", "run_tests", "--json", "--sandbox", sandbox], repo)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert events and events[-1]["type"] == "tool-result", (done.stdout[-2000:], done.stderr[-2000:])
    return done.returncode, events[-1]


def test_an_installed_copy_of_the_workspace_s_package_is_an_error_not_a_pass(tmp_path: Path) -> None:
    import iniconfig

    repo = make_repo(tmp_path / "proj", BROKEN_INICONFIG)
    elsewhere = os.path.realpath(iniconfig.__file__)
    # by hand, pytest passes: it tests the installed iniconfig, not the workspace's (which raises)
    by_hand = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist"],
                             cwd=repo, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTEST_ADDOPTS": ""})
    assert by_hand.returncode == 0 and "1 passed" in by_hand.stdout, by_hand.stdout

    code, result = run_tests_cli(repo)
    details, text = result["details"], result["result"]
    assert code != 0
    assert details["outcome"] == "error" and details["passed"] == 0, details
    first, second = text.splitlines()[0], text.split("\n\n")[1]
    assert first.startswith("No project environment found") and "cog's own Python" in first
    assert second.startswith("ERROR: the tests import iniconfig from")
    for said in (text, details["failures"][0]["text"]):
        assert "iniconfig" in said and elsewhere in said and str(repo / "src" / "iniconfig") in said
        assert "pip install -e ." in said
    assert details["failures"][0]["id"] == "src/iniconfig"


@pytest.mark.parametrize("layout", ["pythonpath", "flat"])
def test_a_package_imported_from_the_workspace_passes(tmp_path: Path, layout: str) -> None:
    if layout == "pythonpath":
        files = {
            "pyproject.toml": "[project]\nname = 'shapes'\nversion = '0'\n[tool.pytest.ini_options]\npythonpath = ['src']\n",
            "src/shapes/__init__.py": "def area(w, h):\n    return w * h\n",
        }
    else:
        files = {"pyproject.toml": "[project]\nname = 'shapes'\nversion = '0'\n",
                 "shapes/__init__.py": "def area(w, h):\n    return w * h\n"}
    files["tests/test_shapes.py"] = "from shapes import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n"
    repo = make_repo(tmp_path / "proj", files)
    code, result = run_tests_cli(repo)
    assert code == 0, result["result"]
    assert result["details"]["outcome"] == "passed" and result["details"]["passed"] == 1
    assert result["result"].startswith("No project environment found")  # still said: cog's own Python ran them


@pytest.mark.parametrize("sandbox", ["off", "on"])
def test_the_project_s_own_env_runs_the_tests_with_its_package_installed_editable(tmp_path: Path, sandbox: str) -> None:
    """A real ``.venv`` (made with venv, no pip) that sees pytest and has the project installed
    editable (a .pth file, as pip install -e . writes): no note, the package from the workspace.
    In the sandbox its interpreter starts too (its base installation, pyenv's under the home the
    sandbox empties when the tests run from one, is shown; cog's own may be the same one)."""
    import shutil

    from workspace_tools.sandbox.bwrap import bwrap_executable

    if sandbox == "on" and bwrap_executable() is None:
        pytest.skip("bubblewrap is not usable here")
    import iniconfig
    import pytest as pytest_module

    repo = make_repo(tmp_path / "proj", {**BROKEN_INICONFIG, "tests/test_ini.py": (
        "import iniconfig\n\n\ndef test_the_workspace_copy():\n    assert iniconfig.WORKSPACE_COPY\n")})
    shutil.rmtree(repo / "src" / "iniconfig")
    shutil.copytree(Path(iniconfig.__file__).parent, repo / "src" / "iniconfig", ignore=shutil.ignore_patterns("__pycache__"))
    with open(repo / "src" / "iniconfig" / "__init__.py", "a") as init:
        init.write("\nWORKSPACE_COPY = True\n")
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True, timeout=120)
    site = next((repo / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "cog_test_deps.pth").write_text(str(Path(pytest_module.__file__).resolve().parents[1]) + "\n")
    (site / "__editable__iniconfig.pth").write_text(f"import sys; sys.path.insert(0, {str(repo / 'src')!r})\n")
    code, result = run_tests_cli(repo, sandbox)
    # pytest imports iniconfig itself: with the editable install first on sys.path, it is the workspace's
    assert code == 0, result.get("result") or result.get("error")
    assert result["details"]["outcome"] == "passed" and result["details"]["passed"] == 1
    assert str(repo / ".venv" / "bin" / "python") in result["details"]["command"]
    assert "No project environment found" not in result["result"]


@pytest.mark.parametrize("xdist", [False, True])
def test_a_package_imported_only_inside_a_test_is_checked_at_the_end(tmp_path: Path, xdist: bool) -> None:
    """unidiff (installed with cog, never imported by pytest) is imported by the test itself: the
    check at the session's end (on each xdist worker, reported through the controller) finds it."""
    import unidiff

    repo = make_repo(tmp_path / "proj", {
        "pyproject.toml": "[project]\nname = 'unidiff'\nversion = '0'\n",
        "src/unidiff/__init__.py": "raise RuntimeError('the workspace copy of unidiff was imported')\n",
        "tests/test_diff.py": "def test_lazy():\n    import unidiff\n    assert unidiff.PatchSet\n",
    })
    env = {"PYTEST_ADDOPTS": "-n 2" if xdist else "-p no:xdist"}
    done = run_cog(["tool", "run_tests", "--json", "--sandbox", "off"], repo, env=env)
    result = json.loads(done.stdout.splitlines()[-1])
    details = result["details"]
    assert done.returncode != 0
    assert details["outcome"] == "error", details
    assert details["passed"] == 1  # it ran (the import came late), and its pass is not the verdict
    assert any(f["id"] == "src/unidiff" and os.path.realpath(unidiff.__file__) in f["text"] for f in details["failures"])
    assert "the tests imported unidiff from" in result["result"].split("\n\n")[1]


def test_a_repository_with_no_project_gets_no_python_advice(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "notes\n", "data.txt": "1\n"})
    _, result = run_tests_cli(repo)
    notes = result["details"]["notes"]
    assert not any("No project environment" in n or "pip install" in n for n in notes)
    assert notes[0].startswith("No tests found: the workspace holds no project cog knows")


def test_a_tox_env_with_pytest_is_the_project_s_python(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"tox.ini": "[tox]\nenvlist = py311\n"})
    lint = make_env(repo / ".tox" / "lint")  # no pytest in it: not the one
    py311 = make_env(repo / ".tox" / "py311")
    (py311 / "lib" / "python3.11" / "site-packages" / "pytest").mkdir(parents=True)
    found = pyenv.find_project_python(repo, repo)
    assert (found.source, found.env) == ("tox", py311) and lint != py311


def test_a_conda_env_named_by_environment_yml_is_asked_of_the_person_s_conda(tmp_path: Path, tools: Path) -> None:
    env = make_env(tmp_path / "conda" / "envs" / "proj", cfg=False)
    (env / "conda-meta").mkdir()
    other = make_env(tmp_path / "conda" / "envs" / "other", cfg=False)
    fake_tool(tools, "conda", json.dumps({"envs": [str(other), str(env)]}).replace('"', '\\"'))
    repo = make_repo(tmp_path / "repo", {"environment.yml": "name: proj\nchannels: [conda-forge]\n"})
    found = pyenv.find_project_python(repo, repo)
    assert (found.source, found.env) == ("conda", env)
    planted = make_repo(tmp_path / "planted", {"environment.yml": "name: proj\n", ".condarc": "channels: [evil]\n"})
    refused = pyenv.find_project_python(planted, planted)
    assert refused.fallback and refused.notes[0].startswith("conda was not asked")


@pytest.mark.parametrize("name", ["pyproject.toml", "hatch.toml", "environment.yml"])
def test_a_fifo_where_a_tool_s_settings_are_read_never_hangs(tmp_path: Path, name: str) -> None:
    """The sandbox can make a FIFO in the workspace; finding the environment opened it and waited forever."""
    repo = make_repo(tmp_path / "repo")
    os.mkfifo(repo / name)
    assert pyenv.find_project_python(repo, repo).fallback  # returns: the FIFO is read as nothing
