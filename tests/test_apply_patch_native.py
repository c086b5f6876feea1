"""The Responses API's native apply_patch operations (``create_file`` / ``update_file`` /
``delete_file`` with a V4A diff) through cog's apply_patch tool: the same parser and the same
guarantees as a patch — confined paths, the preview diff approved and FILE_CHANGED, undo from the
journal, the details diff, a clear error naming the hunk or what the operation lacks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from test_apply_patch import CALC, repo
from ws_helpers import call, snapshot

from cogcli.contract.context import ToolContext
from cogcli.contract.details import PatchDetails
from cogcli.contract.invoke import run_prepared
from cogcli.contract.prepare import prepare
from workspace_tools import workspace_tools
from workspace_tools.files.journal import Journal
from workspace_tools.text.patch_format import AddFile, DeleteFile, PatchError, UpdateFile, operation_patch, parse_patch

FIX_ADD = {"type": "update_file", "path": "calc.py", "diff": "@@ def add(a, b):\n-    return a - b\n+    return a + b\n"}


def native(root: Path, operation: dict, journal: Journal | None = None):
    return call(workspace_tools(root, sandbox="off", journal=journal), "apply_patch", operation=operation)


def test_each_operation_is_the_patch_of_one_file_section() -> None:
    [update] = parse_patch(operation_patch(FIX_ADD))
    assert isinstance(update, UpdateFile) and update.path == "calc.py" and update.hunks[0].anchors == ("def add(a, b):",)
    [add] = parse_patch(operation_patch({"type": "create_file", "path": "new.py", "diff": "+x = 1\n+y = 2"}))
    assert isinstance(add, AddFile) and add.content == "x = 1\ny = 2\n"
    [gone] = parse_patch(operation_patch({"type": "delete_file", "path": "old.py"}))
    assert isinstance(gone, DeleteFile) and gone.path == "old.py"
    # a diff with Windows line ends or blank lines after its last line reads the same
    assert operation_patch({**FIX_ADD, "diff": FIX_ADD["diff"].replace("\n", "\r\n") + "\n\n"}) == operation_patch(FIX_ADD)


@pytest.mark.parametrize(
    ("operation", "words"),
    [
        ({"type": "rename_file", "path": "a.py"}, "operation type 'rename_file' is none of create_file, update_file, delete_file"),
        ({"type": "update_file", "diff": "@@\n-a\n+b\n"}, "the update_file operation names no file"),
        ({"type": "create_file", "path": "a\nb.py", "diff": "+x\n"}, "names no file: give its path, one line"),
        ({"type": "update_file", "path": "a.py", "diff": ""}, "the update_file operation on a.py has no diff: give its hunks"),
        ({"type": "create_file", "path": "a.py"}, "has no diff: give the lines of the new file, each starting with '+'"),
        ("update calc.py", "operation must be an object with type, path and diff"),
    ],
)
def test_an_operation_that_is_not_one_is_refused_naming_what_it_lacks(tmp_path: Path, operation: object, words: str) -> None:
    with pytest.raises(PatchError, match=words.replace("(", r"\(").replace("+", r"\+")):
        operation_patch(operation)
    root = repo(tmp_path)
    result = native(root, operation)  # type: ignore[arg-type]
    assert result.error_code == "INVALID_ARGUMENTS" and words in (result.error or "")
    assert snapshot(root) == {"calc.py": CALC.encode()}


def test_update_create_and_delete_apply_journaled_and_undo_puts_them_back(tmp_path: Path) -> None:
    from cogcli.session import Session
    from cogcli.threads.store import AssistantEntry, UserEntry, default_store

    root = repo(tmp_path, {"calc.py": CALC, "old.txt": "old\n"})
    before = snapshot(root)
    store = default_store(root)
    thread = store.create_thread(title="native").id
    store.append(thread, [UserEntry(content="fix", message_id="msg_native1")], status="running")
    journal = Journal(root)
    journal.begin(thread, "msg_native1")
    fixed = native(root, FIX_ADD, journal)
    details = PatchDetails.model_validate(fixed.details)
    assert fixed.error is None and "-    return a - b\n+    return a + b" in details.diff and details.files_patched[0].path == "calc.py"
    assert native(root, {"type": "create_file", "path": "pkg/new.py", "diff": "+VALUE = 1\n"}, journal).error is None
    assert native(root, {"type": "delete_file", "path": "old.txt"}, journal).error is None
    journal.close()
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)
    assert (root / "pkg/new.py").read_text() == "VALUE = 1\n" and not (root / "old.txt").exists()
    store.append(thread, [AssistantEntry(content="done")], status="completed")
    store.close()
    session = Session(root)
    try:
        session.undo(thread)
    finally:
        session.close()
    assert {p: d for p, d in snapshot(root).items() if not p.startswith(".cog/")} == before


def test_a_hunk_not_found_names_it_and_a_path_outside_is_refused(tmp_path: Path) -> None:
    root = repo(tmp_path)
    missing = native(root, {"type": "update_file", "path": "calc.py", "diff": "@@\n def mul(a, b):\n-    return a * b\n+    return b * a\n"})
    assert missing.error_code == "EDIT_NO_MATCH" and "hunk 1 of calc.py" in (missing.error or "")
    outside = native(root, {"type": "create_file", "path": "../escape.py", "diff": "+x\n"})
    assert outside.error is not None and not (tmp_path / "escape.py").exists()
    assert snapshot(root) == {"calc.py": CALC.encode()}


def test_the_preview_is_the_diff_approved_and_a_file_changed_since_fails_file_changed(tmp_path: Path) -> None:
    root = repo(tmp_path)
    tool = {t.name: t for t in workspace_tools(root, sandbox="off")}["apply_patch"]
    prepared = prepare(tool, {"operation": FIX_ADD}, call_id="c1")
    assert prepared.failed is None and prepared.presentation.detail == "calc.py"
    preview = tool.preview(prepared.params, ToolContext("c1", "apply_patch"))
    assert preview.shown["path"] == "calc.py" and "+    return a + b" in preview.shown["diff"]
    (root / "calc.py").write_text(CALC + "# theirs\n")
    result = anyio.run(lambda: run_prepared(replace(prepared, preview=preview)))
    assert result.error_code == "FILE_CHANGED" and (root / "calc.py").read_text() == CALC + "# theirs\n"
