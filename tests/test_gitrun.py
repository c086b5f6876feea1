"""run_git's neutralising of configured drivers, and the one shared config read of gits started together."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from ws_helpers import call

from workspace_tools import workspace_tools
from workspace_tools.host import git as gitrun
from workspace_tools.host.git import git_command, one_config_read

PAYLOAD = "#!/bin/sh\ntouch \"$(dirname \"$0\")/PWNED\"\ncat\n"


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo("workspace")


def plant_filter(repo: Path) -> None:
    """A clean filter on every file: plain ``git status`` runs it when it re-reads a file."""
    script = repo / "x.sh"
    script.write_text(PAYLOAD)
    script.chmod(0o755)
    subprocess.run(["git", "config", "filter.evil.clean", str(script)], cwd=repo, check=True)
    (repo / ".gitattributes").write_text("* filter=evil\n")


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = gitrun._read_driver_overrides

    def counted(env, cwd):  # type: ignore[no-untyped-def]
        reads.append(cwd)
        return real(env, cwd)

    monkeypatch.setattr(gitrun, "_read_driver_overrides", counted)
    return reads


def test_gits_started_together_share_one_config_read(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(monkeypatch)
    with one_config_read():
        first = git_command(repo, ["ls-files"])[0]
        with one_config_read():  # nested: the outer read serves
            second = git_command(repo, ["grep", "-l", "x"])[0]
    assert len(reads) == 1
    assert first[: first.index("ls-files")] == second[: second.index("grep")]
    git_command(repo, ["status"])
    git_command(repo, ["status"])
    assert len(reads) == 3  # outside a block, every git reads the configuration afresh


def test_a_driver_configured_after_a_search_is_still_turned_off(repo: Path) -> None:
    """The shared read lives for one tool call only: a filter planted between two calls of one
    long-lived process (a server, the Python API) is seen and turned off by the next call."""
    tools = workspace_tools(repo)
    assert call(tools, "search_text", pattern="Hello").ok
    plant_filter(repo)
    argv = git_command(repo, ["status"])[0]
    assert "filter.evil.clean=" in argv
    (repo / "src" / "util.py").write_text("changed\n")
    for name, args in (("search_text", {"pattern": "changed"}), ("list_files", {}), ("git_status", {}), ("git_diff", {})):
        assert call(tools, name, **args).ok
        assert not (repo / "PWNED").exists(), f"{name} ran the planted filter"
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, capture_output=True)
    assert (repo / "PWNED").exists(), "plain git did not run the filter: the test proves nothing"
