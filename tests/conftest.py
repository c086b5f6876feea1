"""Shared pytest fixtures: fixture repos copied to a temp dir and made real git repos."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "cog tests",
    "GIT_AUTHOR_EMAIL": "tests@cog.invalid",
    "GIT_COMMITTER_NAME": "cog tests",
    "GIT_COMMITTER_EMAIL": "tests@cog.invalid",
}


def init_git_repo(path: Path, *, commit: bool = True) -> Path:
    """Make ``path`` a git repo (gitpython) with everything in it committed."""
    import git

    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", GIT_ENV["GIT_AUTHOR_NAME"])
        cw.set_value("user", "email", GIT_ENV["GIT_AUTHOR_EMAIL"])
        cw.set_value("commit", "gpgsign", "false")
    if commit:
        repo.git.add(A=True)
        repo.index.commit("fixture")
    repo.close()
    return path


#: the slow part of the suite: whole folders and modules of end-to-end tests (real cog processes,
#: bubblewrap attacks as two users, toolchains, a browser, Ray, a terminal). `pytest -m "not slow"`
#: leaves them out (docs/testing.md); CI runs everything. A slow test elsewhere: @pytest.mark.slow.
SLOW_FOLDERS = ("security", "reliability")
SLOW_MODULES = frozenset({
    "test_undo", "test_cli_edit", "test_cli_sandbox", "test_cli_basics", "test_chat", "test_run_tests_sandbox",
    "test_cli_tool", "test_batch", "test_batch_ray", "test_cli_approve_keys", "test_render_long_output", "test_runners_cli",
    "test_cli_instructions", "test_cli_approvals", "test_context_run", "test_runners_go", "test_runners_node",
    "test_runners_node_scripts", "test_runners_cargo", "test_serve_page", "test_serve_marks", "test_prompt_cache_studio",
    "test_e2e_run", "test_examples", "test_adapters_examples", "test_mcp_stdio", "test_mcp_edit", "test_gitrun",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow part (:data:`SLOW_FOLDERS`, :data:`SLOW_MODULES`) so ``-m "not slow"`` really deselects it."""
    slow = pytest.mark.slow
    for item in items:
        path = Path(str(item.fspath))
        if path.stem in SLOW_MODULES or any(part in SLOW_FOLDERS for part in path.relative_to(ROOT / "tests").parts[:-1]):
            item.add_marker(slow)


@pytest.fixture(scope="session", autouse=True)
def _no_personal_state_or_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite never reads or writes the state and config of whoever runs it: cog's journal key,
    chat history and the like go to a folder of the session's (``XDG_STATE_HOME``), and the person's
    config.toml, hooks, commands and AGENTS.md are none (``XDG_CONFIG_HOME`` names no folder) unless
    a test sets its own. Subprocesses inherit both."""
    saved = {k: os.environ.get(k) for k in ("XDG_STATE_HOME", "XDG_CONFIG_HOME")}
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.getbasetemp() / "no-such-config-dir")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def person_state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh state folder for the test that asks for it (over the session's); cog started by
    the test inherits it."""
    home = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Async tests run on asyncio, as cog does (session-wide, so module-scoped async fixtures share it)."""
    return "asyncio"


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """``make_repo("calc")`` → a fresh copy of ``fixtures/calc`` in a temp dir, as a git repo."""

    def make(name: str, *, git: bool = True, dest: str | None = None) -> Path:
        target = tmp_path / (dest or name)
        shutil.copytree(FIXTURES / name, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        return init_git_repo(target) if git else target

    return make
