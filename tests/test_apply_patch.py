"""apply_patch: Codex's patch format, through invoke_tool on files in a temp git repository — the
parser's errors, where hunks go, all or nothing across files, undo from the real journal, the
approval preview and FILE_CHANGED — and a property: a patch made from a diff applies back."""

from __future__ import annotations

import difflib
import stat
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ws_helpers import call, snapshot

from cogcli.contract.context import ToolContext
from cogcli.contract.details import PatchDetails
from cogcli.contract.invoke import ToolResult
from workspace_tools import workspace_tools
from workspace_tools.files.journal import Journal
from workspace_tools.text.patch_format import AddFile, DeleteFile, PatchError, UpdateFile, parse_patch
from workspace_tools.text.patch_apply import apply_hunks

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def repo(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name, data in (files if files is not None else {"calc.py": CALC}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            (root / name).write_bytes(data)
        else:
            (root / name).write_text(data)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def apply(root: Path, text: str, journal: Journal | None = None) -> ToolResult:
    return call(workspace_tools(root, sandbox="off", journal=journal), "apply_patch", patch=text)


def ok(result: ToolResult) -> PatchDetails:
    assert result.error is None, result.error
    return PatchDetails.model_validate(result.details)


# --- what a patch does ----------------------------------------------------------------------


def test_add_update_with_context_and_delete_in_one_patch(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc.py": CALC, "old.txt": "bye\n"})
    result = apply(root, patch(
        "*** Add File: pkg/hello.py",
        "+def hello():",
        "+    return 'hi'",
        "*** Update File: calc.py",
        "@@",
        " def add(a, b):",
        "-    return a - b",
        "+    return a + b",
        "*** Delete File: old.txt",
    ))
    details = ok(result)
    assert (root / "pkg/hello.py").read_text() == "def hello():\n    return 'hi'\n"
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)
    assert not (root / "old.txt").exists()
    assert [(f.path, f.change, f.added, f.removed) for f in details.files_patched] == [
        ("pkg/hello.py", "created", 2, 0), ("calc.py", "modified", 1, 1), ("old.txt", "deleted", 0, 1)]
    assert details.added == 3 and details.removed == 2
    assert "+++ b/calc.py" in details.diff and "+    return a + b" in details.diff
    text = str(result.result)
    assert "created pkg/hello.py" in text and "updated calc.py (+1 -1)" in text and "deleted old.txt" in text
    assert result.presentation is not None and result.presentation.detail == "3 files"


def test_several_hunks_apply_in_order(tmp_path: Path) -> None:
    root = repo(tmp_path)
    ok(apply(root, patch(
        "*** Update File: calc.py",
        "@@",
        " def add(a, b):",
        "-    return a - b",
        "+    return a + b",
        "@@",
        " def sub(a, b):",
        "-    return a - b",
        "+    return a - b  # unchanged",
    )))
    assert (root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b  # unchanged\n"


def test_an_at_at_line_picks_which_of_two_same_blocks_changes(tmp_path: Path) -> None:
    root = repo(tmp_path)
    # "    return a - b" is in both functions: alone it is ambiguous, after "@@ def sub" it is not
    result = apply(root, patch("*** Update File: calc.py", "@@", "-    return a - b", "+    return a + b"))
    assert result.error_code == "EDIT_AMBIGUOUS"
    assert "hunk 1 of calc.py (patch line 3)" in (result.error or "") and "lines 2, 6" in (result.error or "")
    assert (root / "calc.py").read_text() == CALC
    ok(apply(root, patch("*** Update File: calc.py", "@@ def sub(a, b):", "-    return a - b", "+    return b - a")))
    assert (root / "calc.py").read_text() == CALC.replace("return a - b\n", "return b - a\n").replace("return b - a", "return a - b", 1)


def test_a_hunk_of_only_added_lines_goes_after_its_anchor_or_at_the_end(tmp_path: Path) -> None:
    root = repo(tmp_path)
    ok(apply(root, patch("*** Update File: calc.py", "@@ def add(a, b):", '+    """Add."""', "@@", "+", "+", "+def mul(a, b):", "+    return a * b")))
    assert (root / "calc.py").read_text() == ('def add(a, b):\n    """Add."""\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n'
                                              "\n\ndef mul(a, b):\n    return a * b\n")


def test_end_of_file_anchors_the_hunk_at_the_end(tmp_path: Path) -> None:
    root = repo(tmp_path, {"log.txt": "x\nend\nx\nend\n"})
    result = apply(root, patch("*** Update File: log.txt", "@@", " x", "-end", "+END"))
    assert result.error_code == "EDIT_AMBIGUOUS"
    ok(apply(root, patch("*** Update File: log.txt", "@@", " x", "-end", "+END", "*** End of File")))
    assert (root / "log.txt").read_text() == "x\nend\nx\nEND\n"


def test_move_with_and_without_changes_keeps_the_mode(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc.py": CALC, "run.sh": "#!/bin/sh\necho hi\n"})
    (root / "run.sh").chmod(0o751)
    details = ok(apply(root, patch(
        "*** Update File: run.sh",
        "*** Move to: bin/run.sh",
        "*** Update File: calc.py",
        "*** Move to: lib/calc.py",
        "@@ def add(a, b):",
        "-    return a - b",
        "+    return a + b",
    )))
    assert not (root / "run.sh").exists() and not (root / "calc.py").exists()
    assert (root / "bin/run.sh").read_text() == "#!/bin/sh\necho hi\n"
    assert stat.S_IMODE((root / "bin/run.sh").stat().st_mode) == 0o751
    assert (root / "lib/calc.py").read_text() == CALC.replace("a - b", "a + b", 1)
    assert [(f.path, f.change, f.new_path) for f in details.files_patched] == [("run.sh", "moved", "bin/run.sh"), ("calc.py", "moved", "lib/calc.py")]
    assert "rename from run.sh\nrename to bin/run.sh\n" in details.diff
    assert details.model_extra is not None and {"path": "lib/calc.py", "change": "created"} in details.model_extra["changed_files"]


def test_markers_padded_with_whitespace_are_read_as_codex_reads_them(tmp_path: Path) -> None:
    root = repo(tmp_path)
    text = "\n  *** Begin Patch  \n*** Update File:   calc.py  \n@@  def sub(a, b):  \n-    return a - b\n+    return b - a\n\t*** End Patch \t\n\n"
    ok(apply(root, text))
    assert (root / "calc.py").read_text().endswith("def sub(a, b):\n    return b - a\n")


def test_unicode_content_and_punctuation_read_as_ascii(tmp_path: Path) -> None:
    root = repo(tmp_path, {"notes.md": "# Überschrift\nSay \u201chello\u201d \u2014 twice\u00a0now\nend\n"})
    # the model writes ASCII quotes and dashes for the file's typographic ones
    ok(apply(root, patch("*** Update File: notes.md", "@@", " # Überschrift", '-Say "hello" - twice now', "+Sag „hallo“ – zweimal 🎉")))
    assert (root / "notes.md").read_text() == "# Überschrift\nSag „hallo“ – zweimal 🎉\nend\n"


def test_trailing_and_leading_whitespace_differences_still_match(tmp_path: Path) -> None:
    root = repo(tmp_path, {"a.py": "def f():   \n\tx = 1\n"})
    ok(apply(root, patch("*** Update File: a.py", "@@", " def f():", "-    x = 1", "+\tx = 2")))
    assert (root / "a.py").read_text() == "def f():   \n\tx = 2\n"


def test_line_endings_bom_encoding_and_mode_are_kept(tmp_path: Path) -> None:
    root = repo(tmp_path, {"win.txt": "\ufeffone\r\ntwo\r\n".encode(), "latin.txt": "caf\xe9\nbar\n".encode("latin-1")})
    (root / "win.txt").chmod(0o640)
    ok(apply(root, patch("*** Update File: win.txt", "@@", " one", "-two", "+zwei", "*** Update File: latin.txt", "@@", "-bar", "+bär")))
    assert (root / "win.txt").read_bytes() == "\ufeffone\r\nzwei\r\n".encode()
    assert stat.S_IMODE((root / "win.txt").stat().st_mode) == 0o640
    assert (root / "latin.txt").read_bytes() == "caf\xe9\nb\xe4r\n".encode("latin-1")


# --- what is refused, with nothing written --------------------------------------------------


@pytest.mark.parametrize(("text", "line", "words"), [
    ("*** Update File: calc.py\n@@\n-x\n+y\n*** End Patch\n", 1, "first line must be '*** Begin Patch'"),
    ("*** Begin Patch\n*** Update File: calc.py\n@@\n-x\n+y\n", 5, "last line must be '*** End Patch'"),
    (patch("*** Add File: new.txt"), 2, "adds no line"),
    (patch("*** Add File: new.txt", "no plus"), 3, "starts with '+'"),
    (patch("*** Update File: calc.py"), 2, "has no hunk"),
    (patch("*** Update File: calc.py", "@@", "*** Delete File: x"), 3, "an empty hunk"),
    (patch("*** Update File: calc.py", "@@", " def add(a, b):"), 3, "changes nothing"),
    (patch("*** Update File: calc.py", "@@", " def add(a, b):", "x    return a - b"), 5, "starts with ' ' (context), '-' (removed) or '+'"),
    (patch("*** Frobnicate File: calc.py"), 2, "not the start of a file operation"),
    (patch("*** Add File: "), 2, "names no file"),
])
def test_an_invalid_patch_is_refused_naming_its_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    root = repo(tmp_path)
    before = snapshot(root)
    result = apply(root, text)
    assert result.error_code == "INVALID_ARGUMENTS"
    assert f"patch line {line}: " in (result.error or "") and words in (result.error or "")
    assert snapshot(root) == before


def test_context_that_does_not_match_applies_nothing_and_names_the_hunk(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc.py": CALC, "b.txt": "b\n"})
    before = snapshot(root)
    result = apply(root, patch(
        "*** Add File: new.txt", "+new",
        "*** Update File: b.txt", "@@", "-b", "+B",
        "*** Update File: calc.py", "@@", " def mul(a, b):", "-    return a * b", "+    return a * b  # yes",
    ))
    assert result.error_code == "EDIT_NO_MATCH"
    assert "hunk 1 of calc.py (patch line 9)" in (result.error or "") and "|def mul(a, b):" in (result.error or "")
    assert "no file was changed" in (result.error or "")
    assert snapshot(root) == before  # the add and the first update did not happen either


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/hostname", ".git/config", ".cog/x.json", ".env"])
def test_a_path_outside_or_into_git_cog_or_a_secret_is_refused(tmp_path: Path, path: str) -> None:
    root = repo(tmp_path)
    (root / ".env").write_text("KEY=1\n")
    before = snapshot(root)
    result = apply(root, patch("*** Add File: ok.txt", "+fine", f"*** Update File: {path}", "@@", "-x", "+y"))
    assert result.error_code in ("PATH_OUTSIDE_WORKSPACE", "COG_STATE", "SECRET_FILE"), result.error
    assert snapshot(root) == before and not (tmp_path / "outside.txt").exists()


def test_a_link_is_refused(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "link.py").symlink_to("calc.py")
    result = apply(root, patch("*** Delete File: link.py"))
    assert result.error_code == "INVALID_ARGUMENTS" and "symbolic link" in (result.error or "")
    assert (root / "calc.py").exists() and (root / "link.py").is_symlink()


def test_adding_a_file_that_exists_or_touching_a_path_twice_is_refused(tmp_path: Path) -> None:
    root = repo(tmp_path)
    result = apply(root, patch("*** Add File: calc.py", "+x"))
    assert result.error_code == "INVALID_ARGUMENTS" and "exists already" in (result.error or "")
    result = apply(root, patch("*** Delete File: calc.py", "*** Add File: calc.py", "+x"))
    assert "touches calc.py, which patch line 2 touches already" in (result.error or "")
    assert (root / "calc.py").read_text() == CALC


def test_a_failure_while_writing_rolls_back_the_files_written_before(tmp_path: Path) -> None:
    root = repo(tmp_path, {"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "g\n"})
    (root / "b.txt").chmod(0o444)  # computed fine; the write of it is refused
    before = snapshot(root)
    journal = Journal(root)
    journal.begin("t1", "m1")
    result = apply(root, patch("*** Add File: new.txt", "+n", "*** Delete File: gone.txt",
                               "*** Update File: a.txt", "@@", "-a", "+A", "*** Update File: b.txt", "@@", "-b", "+B"), journal)
    journal.close()
    assert result.error is not None and "writing b.txt failed" in result.error and "no file is changed" in result.error
    assert {p: d for p, d in snapshot(root).items() if not p.startswith(".cog/")} == before
    from workspace_tools.files.journal import read_journal

    assert read_journal(root, "m1") == []  # rolled back: nothing for undo to do


# --- undo, approval -------------------------------------------------------------------------


def test_undo_through_the_journal_restores_creates_updates_deletes_and_moves(tmp_path: Path) -> None:
    from cogcli.session import Session
    from cogcli.threads.store import AssistantEntry, UserEntry, default_store

    root = repo(tmp_path, {"calc.py": CALC, "gone.sh": "#!/bin/sh\n", "old/m.txt": "moved\n"})
    (root / "gone.sh").chmod(0o751)
    before = {p: (d, stat.S_IMODE((root / p).stat().st_mode)) for p, d in snapshot(root).items()}
    store = default_store(root)
    thread = store.create_thread(title="patch").id
    mid = f"msg_{uuid.uuid4().hex[:16]}"
    store.append(thread, [UserEntry(content="patch it", message_id=mid)], status="running")
    journal = Journal(root)
    journal.begin(thread, mid)
    ok(apply(root, patch(
        "*** Add File: new/made.txt", "+made",
        "*** Update File: calc.py", "@@ def add(a, b):", "-    return a - b", "+    return a + b",
        "*** Delete File: gone.sh",
        "*** Update File: old/m.txt", "*** Move to: new/m.txt", "@@", "-moved", "+moved and changed",
    ), journal))
    journal.close()
    store.append(thread, [AssistantEntry(content="done")], status="completed")
    store.close()
    session = Session(root)
    try:
        plan = session.undo(thread)
    finally:
        session.close()
    assert {(f.path, f.creates, f.deletes) for f in plan.files} >= {("gone.sh", True, False), ("new/made.txt", False, True)}
    after = {p: (d, stat.S_IMODE((root / p).stat().st_mode)) for p, d in snapshot(root).items() if not p.startswith(".cog/")}
    assert after == before


def test_the_preview_shows_every_files_diff_and_a_changed_file_fails_file_changed(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc.py": CALC, "b.txt": "b\n"})
    tools = {t.name: t for t in workspace_tools(root, sandbox="off")}
    tool = tools["apply_patch"]
    assert tool.side_effects == ("writes files",) and tool.kind == "edit"
    text = patch("*** Update File: b.txt", "@@", "-b", "+B", "*** Update File: calc.py", "@@ def sub(a, b):", "-    return a - b", "+    return b - a")
    preview = tool.preview(tool.parameters(patch=text), ToolContext("c1", "apply_patch"))
    assert preview.shown is not None and preview.shown["path"] == "2 files"
    assert preview.shown["added"] == 2 and preview.shown["removed"] == 2
    assert "+++ b/b.txt" in preview.shown["diff"] and "+++ b/calc.py" in preview.shown["diff"]
    assert snapshot(root)["b.txt"] == b"b\n"  # the preview wrote nothing

    (root / "calc.py").write_text(CALC + "# theirs\n")  # changed after it was shown
    import anyio

    from cogcli.contract.invoke import run_prepared
    from cogcli.contract.prepare import prepare

    approved = replace(prepare(tool, {"patch": text}, call_id="c1"), preview=preview)  # as the gate approves it
    result = anyio.run(lambda: run_prepared(approved))
    assert result.error_code == "FILE_CHANGED" and "calc.py is not what it was" in (result.error or "")
    assert (root / "b.txt").read_text() == "b\n"  # nothing written, the unchanged file neither

    moving = patch("*** Update File: b.txt", "*** Move to: c/b.txt", "*** Add File: d.txt", "+d")
    shown = tool.preview(tool.parameters(patch=moving), ToolContext("c2", "apply_patch"))
    assert "rename from b.txt" in shown.shown["diff"] and shown.shown["path"] == "2 files"
    result = anyio.run(lambda: run_prepared(replace(prepare(tool, {"patch": moving}, call_id="c2"), preview=shown)))
    assert result.error is None and (root / "c/b.txt").read_text() == "b\n" and (root / "d.txt").read_text() == "d\n"


@pytest.mark.anyio
async def test_a_run_asks_with_the_patch_diff_and_applies_exactly_that(tmp_path: Path) -> None:
    from cogcli.loop.runtime import Agent, Cogitator
    from cogcli.models.scripted import Call, ScriptedModel, Turn

    root = repo(tmp_path)
    asked: list[Any] = []

    async def approve(approvals: list[Any]) -> dict[str, Any]:
        asked.extend(approvals)
        return {a.tool_call_id: True for a in approvals}

    text = patch("*** Update File: calc.py", "@@ def add(a, b):", "-    return a - b", "+    return a + b")
    model = ScriptedModel([Turn("", [Call("c1", "apply_patch", {"patch": text})]), Turn("Done.")])
    agent = Agent(name="t", instructions="Test.", model=model, tools=workspace_tools(root, sandbox="off"), max_steps=5)
    result = await Cogitator().run(agent, input="fix add", approve=approve)
    [one] = asked
    assert one.preview["path"] == "calc.py" and "+    return a + b" in one.preview["diff"]
    assert result.tool_calls[0].error is None
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)


def test_cog_tools_lists_apply_patch(tmp_path: Path) -> None:
    from cli_helpers import run_cog

    root = repo(tmp_path)
    assert "apply_patch" in run_cog(["tools"], root).stdout


# --- the parser and the placing, on their own -----------------------------------------------


def test_the_parser_gives_typed_operations() -> None:
    ops = parse_patch(patch("*** Add File: a", "+1", "*** Delete File: b", "*** Update File: c", "*** Move to: d", "@@ f", " x", "-y", "+z", "*** End of File"))
    assert ops[0] == AddFile("a", 2, "1\n") and ops[1] == DeleteFile("b", 4)
    update = ops[2]
    assert isinstance(update, UpdateFile) and update.move_to == "d"
    [hunk] = update.hunks
    assert hunk.anchors == ("f",) and hunk.old == ("x", "y") and hunk.new == ("x", "z") and hunk.end_of_file
    with pytest.raises(PatchError, match="patch line 1"):
        parse_patch("hello")


def _as_patch(old: list[str], new: list[str]) -> str:
    body = ["*** Update File: f.txt"]
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(3):
        body.append("@@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                body += [" " + line for line in old[i1:i2]]
            else:
                body += ["-" + line for line in old[i1:i2]] + ["+" + line for line in new[j1:j2]]
    return patch(*body)


_LINE = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), words=st.lists(_LINE, max_size=25))
def test_a_patch_made_from_a_diff_applies_back(data: st.DataObject, words: list[str]) -> None:
    old = [f"{i}:{w}" for i, w in enumerate(words)]  # distinct lines: a diff's context is never ambiguous
    new: list[str] = []
    for line in old:
        choice = data.draw(st.sampled_from(["keep", "keep", "drop", "change", "insert"]))
        if choice == "insert":
            new += data.draw(st.lists(_LINE, min_size=1, max_size=3))
        if choice in ("keep", "insert"):
            new.append(line)
        elif choice == "change":
            new.append(data.draw(_LINE))
    new += data.draw(st.lists(_LINE, max_size=2))
    if new == old:
        return
    [op] = parse_patch(_as_patch(old, new))
    assert isinstance(op, UpdateFile)
    text = "".join(line + "\n" for line in old)
    assert apply_hunks(text, op.hunks, "f.txt") == "".join(line + "\n" for line in new)

