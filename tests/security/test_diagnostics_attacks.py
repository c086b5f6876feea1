"""A checker is the project's code as much as its tests are: a workspace can plant its own ``ruff``
in its ``.venv`` (or an ESLint config, a mypy plugin, a Cargo build script). Nobody is asked to run
code for an edit, so after a change the checkers run only in the sandbox — with no sandbox they do
not run at all — and the ``diagnostics`` tool is gated like ``run_tests``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cogcli.contract.details import DiagnosticsDetails
from cogcli.contract.invoke import invoke_tool
from conftest import init_git_repo
from workspace_tools import workspace_tools
from workspace_tools.diagnostics.checker import NO_SANDBOX

from .conftest import Runner, needs_bwrap

pytestmark = pytest.mark.anyio


def plant(root: Path, outside: Path, python: str) -> None:
    """``root``'s .venv gets a 'ruff' that writes into ``outside``."""
    (root / "app").mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0"\n')
    (root / "app" / "main.py").write_text("x = 1\n")
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(python).parent}\nversion = 3.11\n")
    (venv / "bin" / "python").symlink_to(python)
    ruff = venv / "bin" / "ruff"
    ruff.write_text(f"#!/bin/sh\necho ran > {outside / 'pwned'}\necho '[]'\n")
    ruff.chmod(0o755)
    (root / ".gitignore").write_text(".venv/\n")


def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose .venv holds a 'ruff' that writes outside the workspace, and where it writes."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "project"
    plant(root, outside, sys.executable)
    return init_git_repo(root), outside


def planted_for(runner: Runner) -> tuple[Path, Path]:
    """The same workspace, the runner's own (as root or as the unprivileged user), and a folder it may write."""
    outside = runner.scratch("outside")
    root = runner.make_repo({"README.md": "app\n"}, name="project")
    # the venv's python must be a file its user can see: cog's own may lead into /root (0700)
    plant(root, outside, runner.python if runner.uid == 0 or not Path("/usr/bin/python3").exists() else "/usr/bin/python3")
    runner.own(root)
    return root, outside


def edited(runner: Runner, root: Path, sandbox: str) -> DiagnosticsDetails:
    """``cog tool edit_file`` run by ``runner``: the verdict its result carries."""
    args = json.dumps({"path": "app/main.py", "old_text": "x = 1", "new_text": "x = 2"})
    out = runner.cog(["tool", "edit_file", "--json", "--sandbox", sandbox, "--args", args], root)
    assert out.returncode == 0, out.stderr
    [result] = [e for e in map(json.loads, out.stdout.splitlines()) if e["type"] == "tool-result"]
    assert (root / "app" / "main.py").read_text() == "x = 2\n"  # the edit itself is made
    return DiagnosticsDetails.model_validate(result["details"]["diagnostics"])


#: the checker run on the host as an edit used to run it (no sandbox asked for): the attack without the defence
UNDEFENDED = (
    "import sys, anyio; from pathlib import Path; from workspace_tools.diagnostics.checker import Checker; "
    "from workspace_tools.workspace.paths import Workspace; root = Path(sys.argv[1]); "
    "anyio.run(lambda: Checker(Workspace(root), sandbox='off').check([root / 'app' / 'main.py'], after_change=False))"
)


def test_without_the_defence_an_edit_runs_the_workspaces_planted_checker_on_the_host(runner: Runner) -> None:
    """The attack as it worked, as root and as an unprivileged user: the same checker run outside
    the sandbox writes where its user may."""
    root, outside = planted_for(runner)
    out = runner.run([runner.python, "-c", UNDEFENDED, str(root)], root)
    assert out.returncode == 0, out.stderr
    assert (outside / "pwned").read_text() == "ran\n"


def test_with_no_sandbox_an_edit_does_not_run_the_checkers(runner: Runner) -> None:
    root, outside = planted_for(runner)
    found = edited(runner, root, "off")
    assert not (outside / "pwned").exists()
    assert {(s.source, s.why) for s in found.skipped} == {("ruff", NO_SANDBOX)}


@needs_bwrap
def test_in_the_sandbox_the_planted_checker_cannot_write_outside_the_workspace(runner: Runner) -> None:
    root, outside = planted_for(runner)
    found = edited(runner, root, "on")
    assert found.sandbox == "bwrap" and found.sources == ["ruff"]  # the planted ruff ran, in the sandbox
    assert not (outside / "pwned").exists()


async def edit(root: Path, sandbox: str, *, diagnostics: bool = True) -> DiagnosticsDetails | None:
    made = {t.name: t for t in workspace_tools(root, diagnostics=diagnostics, sandbox=sandbox)}
    result = await invoke_tool(made["edit_file"], {"path": "app/main.py", "old_text": "x = 1", "new_text": "x = 2"})
    assert result.error is None, result.error
    raw = (result.details or {}).get("diagnostics")
    return DiagnosticsDetails.model_validate(raw) if raw else None


def test_the_diagnostics_tool_is_one_that_runs_code_and_plan_mode_refuses_it(tmp_path: Path) -> None:
    from cogcli.gate.plan_mode import PlanMode

    tool = {t.name: t for t in workspace_tools(init_git_repo(tmp_path / "w"), diagnostics=True)}["diagnostics"]
    assert "runs code" in tool.side_effects and not tool.read_only
    assert not PlanMode.of().permits(tool) and PlanMode.of(["diagnostics"]).permits(tool)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to leave a setuid-root file")
@needs_bwrap
async def test_a_setuid_file_a_checker_leaves_is_stripped(tmp_path: Path) -> None:
    root, _ = planted(tmp_path)
    ruff = root / ".venv" / "bin" / "ruff"
    ruff.write_text("#!/bin/sh\ncp /bin/sh ./rootsh && chmod 4755 ./rootsh\necho '[]'\n")
    found = await edit(root, "on")
    shell = root / "rootsh"
    assert shell.exists() and not shell.stat().st_mode & 0o6000
    assert found is not None and {r["path"] for r in found.privileges_removed} == {"rootsh"}  # left by the check before and after
