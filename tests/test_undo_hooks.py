"""Issue 52: what a hook changes in the workspace (a formatter run after every edit, a PostToolUse
hook) is snapshotted before it and recorded after it, so `cog undo` puts back the run's edit and
the hook's rewrite of it in one step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_hooks import hook_table, person, run_session, script  # noqa: F401 (fixture)

from cogcli.models.scripted import Call, Turn
from cogcli.session import Session

FORMAT = "import pathlib\np = pathlib.Path(os.environ['COG_PROJECT_DIR'], 'a.py')\np.write_text(p.read_text().upper())\npathlib.Path(os.environ['COG_PROJECT_DIR'], 'fmt.log').write_text('formatted')\n"


@pytest.mark.anyio
async def test_a_hooks_rewrite_after_an_edit_is_undone_with_the_edit(tmp_path: Path, person: Callable[[str], Path]) -> None:
    from cli_helpers import repo_with

    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    person(hook_table("PostToolUse", str(script(tmp_path, "fmt.py", FORMAT)), matcher="edit_file"))
    await run_session(repo, [Turn("", [Call("e", "edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"})]), Turn("Done.")],
                      approve=_yes)
    assert (repo / "a.py").read_text() == "X = 2\n" and (repo / "fmt.log").exists()
    with Session(repo) as session:
        plan = session.undo()
    assert (repo / "a.py").read_text() == "x = 1\n" and not (repo / "fmt.log").exists()
    assert any(f.by_command for f in plan.files)


async def _yes(approvals: list[Any]) -> dict[str, bool]:
    return {a.tool_call_id: True for a in approvals}
