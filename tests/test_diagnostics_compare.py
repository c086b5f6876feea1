"""The before/after comparison of workspace_tools.diagnostics: problems follow their lines through a
change, only what the change introduced is new, and every problem is counted exactly once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cogcli.contract.details import Diagnostic
from workspace_tools.diagnostics.compare import compare, line_map

RULES = ["F401", "E501", "return-value", "TS2322"]


def problem(line: int, rule: str = "F401", message: str = "unused", file: str = "a.py", source: str = "ruff") -> Diagnostic:
    return Diagnostic(file=file, line=line, rule=rule, message=message, source=source)


lines_strategy = st.lists(st.sampled_from(["a", "b", "c", "def f():", "    pass", "", "x = 1"]), min_size=0, max_size=40)


@st.composite
def file_with_problems(draw: st.DrawFn) -> tuple[list[str], list[Diagnostic]]:
    text = draw(st.lists(st.text(alphabet="abcdef =()", min_size=0, max_size=12), min_size=1, max_size=40))
    problems = draw(st.lists(st.builds(problem, st.integers(1, len(text)), st.sampled_from(RULES),
                                       st.sampled_from(["m1", "m2", "defined on line 3"])), max_size=30))
    return text, problems


@settings(max_examples=200, deadline=None)
@given(file_with_problems())
def test_nothing_changed_nothing_new_nothing_fixed(case: tuple[list[str], list[Diagnostic]]) -> None:
    text, problems = case
    result = compare(problems, list(problems), {"a.py": line_map(text, text)})
    assert result.new == [] and result.fixed == [] and len(result.kept) == len(problems)


@settings(max_examples=200, deadline=None)
@given(file_with_problems(), st.data())
def test_inserted_lines_move_problems_without_making_them_new(case: tuple[list[str], list[Diagnostic]], data: st.DataObject) -> None:
    text, problems = case
    at = data.draw(st.integers(0, len(text)))
    inserted = data.draw(st.lists(st.just("# a new comment line"), min_size=1, max_size=10))
    new_text = text[:at] + inserted + text[at:]
    moved = [p.model_copy(update={"line": p.line + (len(inserted) if p.line > at else 0)}) for p in problems]
    result = compare(problems, moved, {"a.py": line_map(text, new_text)})
    assert result.new == [] and result.fixed == []
    # each problem paired with itself where the insertion moved it
    assert all(after.line == before.line + (len(inserted) if before.line > at else 0) for before, after in result.kept)


@settings(max_examples=200, deadline=None)
@given(file_with_problems(), st.data())
def test_one_added_problem_is_the_one_new(case: tuple[list[str], list[Diagnostic]], data: st.DataObject) -> None:
    text, problems = case
    at = data.draw(st.integers(0, len(text)))
    new_text = text[:at] + ["import os  # the edit"] + text[at:]
    moved = [p.model_copy(update={"line": p.line + (1 if p.line > at else 0)}) for p in problems]
    added = problem(at + 1, "F811", "a problem no one had before")
    after = sorted([*moved, added], key=lambda p: p.line)
    result = compare(problems, after, {"a.py": line_map(text, new_text)})
    assert result.new == [added] and result.fixed == []


@settings(max_examples=200, deadline=None)
@given(file_with_problems(), file_with_problems(), lines_strategy)
def test_every_problem_is_counted_once(one: tuple[list[str], list[Diagnostic]], two: tuple[list[str], list[Diagnostic]],
                                       other: list[str]) -> None:
    (old_text, before), (new_text, after) = one, two
    result = compare(before, after, {"a.py": line_map(old_text, new_text)})
    assert len(result.new) + len(result.kept) == len(after)
    assert len(result.fixed) + len(result.kept) == len(before)
    assert all(b.rule == a.rule and b.file == a.file for b, a in result.kept)


def test_a_removed_line_fixes_its_problem_and_the_rest_stay() -> None:
    old = ["import os", "import sys", "x = 1"]
    new = ["import sys", "x = 1"]
    before = [problem(1, message="`os` imported but unused"), problem(2, message="`sys` imported but unused")]
    after = [problem(1, message="`sys` imported but unused")]
    result = compare(before, after, {"a.py": line_map(old, new)})
    assert [p.message for p in result.fixed] == ["`os` imported but unused"] and result.new == [] and len(result.kept) == 1


def test_the_same_message_on_a_rewritten_line_is_the_old_problem() -> None:
    old = ["def f(x: int) -> str:", "    return x"]
    new = ["def f(x: int) -> str:", "    return x  # still wrong"]
    message = 'Incompatible return value type (got "int", expected "str")'
    result = compare([problem(2, "return-value", message, source="mypy")], [problem(2, "return-value", message, source="mypy")],
                     {"a.py": line_map(old, new)})
    assert result.new == [] and result.fixed == [] and len(result.kept) == 1


def test_a_line_number_in_a_message_moves_with_the_definition() -> None:
    old = ["def f(): ...", "def f(): ..."]
    new = ["", "def f(): ...", "def f(): ..."]
    before = [problem(2, "no-redef", 'Name "f" already defined on line 1', source="mypy")]
    after = [problem(3, "no-redef", 'Name "f" already defined on line 2', source="mypy")]
    result = compare(before, after, {"a.py": line_map(old, new)})
    assert result.new == [] and result.fixed == []


def test_a_moved_file_keeps_its_problems() -> None:
    before = [problem(3, file="old/a.py")]
    after = [problem(3, file="new/a.py")]
    result = compare(before, after, {}, {"old/a.py": "new/a.py"})
    assert result.new == [] and result.fixed == [] and len(result.kept) == 1


def test_a_rewritten_line_maps_to_none_and_the_others_to_themselves() -> None:
    old = [f"line {i}" for i in range(50)]
    new = old[:10] + ["changed"] + old[11:]
    where = line_map(old, new)
    assert where(5) == 5 and where(11) is None and where(40) == 40
