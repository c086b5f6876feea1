"""The corpus of edits models get wrong (``edit_corpus.py``), run through ``edit_file``: how many
land with the exact rule alone (as edit_file was) and with the tolerant rules, and none wrongly."""

from __future__ import annotations

from pathlib import Path

import pytest
from edit_corpus import CASES, Case
from ws_helpers import call

from workspace_tools import workspace_tools
from workspace_tools.text.textfile import TextFile
from workspace_tools.text.tolerant import find_all

NAME = "subject.txt"


def run_case(case: Case, root: Path) -> tuple[bytes | None, str | None]:
    """The bytes the edit left (None: refused, the file untouched) and the rule it reported."""
    root.mkdir(parents=True, exist_ok=True)
    (root / NAME).write_bytes(case.file_bytes())
    result = call(workspace_tools(root, sandbox="off"), "edit_file", path=NAME, old_text=case.old, new_text=case.new)
    after = (root / NAME).read_bytes()
    if not result.ok:
        assert after == case.file_bytes(), f"{case.name}: a refused edit changed the file"
        return None, None
    return after, result.details["match"]


def exact_only(case: Case) -> bytes | None:
    """What edit_file made of the case before the tolerant rules: the exact match, once."""
    file = TextFile.decode(case.file_bytes())
    old, new = file.normalize(case.old), file.normalize(case.new)
    if len(find_all(file.text, old)) != 1:
        return None
    return file.with_text(file.text.replace(old, new, 1)).encode()


def test_the_corpus_is_big_enough_and_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
    failed_before = [c for c in CASES if exact_only(c) is None]
    assert len(failed_before) >= 40
    assert sum(c.after is None for c in CASES) >= 10  # cases that must stay refused


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_lands_as_expected_or_is_refused(case: Case, tmp_path: Path) -> None:
    after, rule = run_case(case, tmp_path)
    assert after == case.after_bytes(), case.name
    if case.rule is not None:
        assert rule == case.rule


def test_corpus_numbers_before_and_after(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = after = wrong_before = wrong_after = 0
    should_land = sum(c.after is not None for c in CASES)
    for i, case in enumerate(CASES):
        made = exact_only(case)
        before += made is not None and made == case.after_bytes()
        wrong_before += made is not None and made != case.after_bytes()
        landed, _ = run_case(case, tmp_path / str(i))
        after += landed is not None and landed == case.after_bytes()
        wrong_after += landed is not None and landed != case.after_bytes()
    with capsys.disabled():
        print(
            f"\nedit corpus: {len(CASES)} cases, {should_land} should land; exact rule alone: {before} land; "
            f"with the tolerant rules: {after} land; landed wrongly: {wrong_before} before, {wrong_after} after"
        )
    assert wrong_after == 0
    assert after == should_land
    assert before < after
