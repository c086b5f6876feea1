"""The TAP reader (workspace_tools/runners/tap_stream.py): TAP 13/14 as the specification writes it —
version, plan, test points with numbers and descriptions, ``# SKIP``/``# TODO``, YAML diagnostics,
subtests by indentation, ``Bail out!`` — property-tested against documents generated from a model
of the tests, and never raising on lines that are no TAP."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from workspace_tools.runners.tap_stream import TapPoint, TapStream, location, read_yaml


def read(text: str) -> tuple[TapStream, list[TapPoint]]:
    stream = TapStream()
    points = [p for line in text.splitlines() for p in stream.feed(line)]
    return stream, points + stream.end()


def test_a_tape_stream_reads_points_directives_and_diagnostics() -> None:
    stream, points = read("""TAP version 13
# adds
ok 1 one and one
# subtracts
not ok 2 five minus three
  ---
    operator: equal
    expected: 3
    actual:   2
    at: Test.<anonymous> (/src/test/math.js:10:5)
    stack: |-
      Error: five minus three
          at Test.<anonymous> (/src/test/math.js:10:5)
  ...
not ok 3 not written yet # TODO later
ok 4 - a \\# is kept # skip no network

1..4
# tests 4
""")
    assert stream.version == 13 and stream.plan == (4, "") and stream.problems() == []
    assert [(p.number, p.outcome, p.description) for p in points] == [
        (1, "passed", "one and one"), (2, "failed", "five minus three"), (3, "skipped", "not written yet"),
        (4, "skipped", "a # is kept")]
    assert (points[2].directive, points[2].reason, points[3].directive, points[3].reason) == ("todo", "later", "skip", "no network")
    failed = points[1]
    assert failed.comments == ["subtracts"]
    assert {k: failed.diagnostics[k] for k in ("operator", "expected", "actual")} == {"operator": "equal", "expected": "3", "actual": "2"}
    assert failed.diagnostics["stack"].splitlines()[0] == "Error: five minus three"
    assert location(failed.diagnostics) == ("/src/test/math.js", 10)


def test_tap14_subtests_by_indentation_carry_their_path_and_the_parent_closes_them() -> None:
    _, points = read("""TAP version 14
# Subtest: math
    # Subtest: adds
    ok 1 - adds
    not ok 2 - subtracts
      ---
      location: 'file:///src/test/a.test.mjs:9:3'
      ...
    1..2
not ok 1 - math
ok 2 - alone
1..2
""")
    assert [(p.path, p.description, p.outcome, p.has_subtests) for p in points] == [
        (["math"], "adds", "passed", False), (["math"], "subtracts", "failed", False),
        ([], "math", "failed", True), ([], "alone", "passed", False)]
    assert location(points[1].diagnostics) == ("/src/test/a.test.mjs", 9)


def test_bail_out_and_a_plan_not_kept_are_problems() -> None:
    stream, points = read("TAP version 14\n1..3\nok 1 - first\nBail out! the database is down\n")
    assert len(points) == 1 and stream.bailed == "the database is down"
    assert stream.problems() == ["the tests bailed out: the database is down"]
    stream, _ = read("1..3\nok 1\nok 2\n")
    assert stream.problems() == ["the plan said 3 tests and 2 ran"]


def test_diagnostics_yaml_subset() -> None:
    text = "message: 'it''s wrong'\nat:\n  fileName: /src/a.js\n  lineNumber: 12\nfound:\n  - 1\n  - two\ndiff: >\n  one\n  two\nnote: \"a \\\"quoted\\\" word\"\n"
    assert read_yaml(text) == {"message": "it's wrong", "at": {"fileName": "/src/a.js", "lineNumber": "12"},
                               "found": ["1", "two"], "diff": "one two", "note": 'a "quoted" word'}
    assert location(read_yaml(text)) == ("/src/a.js", 12)
    assert location({"file": "test/x.js", "line": "4"}) == ("test/x.js", 4)
    assert location({"message": "no place"}) == (None, None)


# -- properties: a document written from a model of the tests reads back as that model ------------

words = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs"), exclude_characters="\\\r\n\x85\u2028\u2029"),
                min_size=1, max_size=30).map(str.strip).filter(bool)


@dataclass
class Case:
    description: str
    ok: bool
    directive: str | None
    values: tuple[str, str] | None
    children: list[Case] = field(default_factory=list)


def cases(depth: int) -> st.SearchStrategy[Case]:
    leaf = st.builds(Case, words, st.booleans(), st.sampled_from([None, None, "SKIP", "TODO", "skip"]),
                     st.none() | st.tuples(words, words))
    if depth == 0:
        return leaf
    return leaf | st.builds(Case, words, st.booleans(), st.none(), st.none(), st.lists(cases(depth - 1), min_size=1, max_size=3))


def escape(text: str) -> str:
    return text.replace("#", "\\#")


def write(tests: list[Case], depth: int = 0) -> list[str]:
    pad = "    " * depth
    lines = [f"{pad}1..{len(tests)}"] if depth else []
    for n, case in enumerate(tests, 1):
        if case.children:
            lines.append(f"{pad}# Subtest: {case.description}")
            lines += write(case.children, depth + 1)
        directive = f" # {case.directive} because" if case.directive else ""
        lines.append(f"{pad}{'ok' if case.ok else 'not ok'} {n} - {escape(case.description)}{directive}")
        if case.values is not None:
            expected, actual = case.values
            lines += [f"{pad}  ---", f"{pad}  expected: '{expected.replace(chr(39), chr(39) * 2)}'",
                      f"{pad}  actual: '{actual.replace(chr(39), chr(39) * 2)}'", f"{pad}  at: test/a.js:{n}:1", f"{pad}  ..."]
    return lines


def leaves(tests: list[Case], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, str]]:
    out = []
    for case in tests:
        if case.children:
            out += leaves(case.children, (*path, case.description))
        else:
            outcome = "skipped" if case.directive else ("passed" if case.ok else "failed")
            out.append((path, case.description, outcome))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(cases(2), min_size=1, max_size=6))
def test_a_written_document_reads_back_as_its_tests(tests: list[Case]) -> None:
    document = "\n".join(["TAP version 14", *write(tests), f"1..{len(tests)}"])
    stream, points = read(document)

    assert [(tuple(p.path), p.description, p.outcome) for p in points if not p.has_subtests] == leaves(tests)
    assert [p.description for p in points if p.depth == 0] == [t.description for t in tests]
    assert stream.problems() == [] and stream.top_points == len(tests)
    for point in points:
        source = point.diagnostics
        if source:
            assert set(source) == {"expected", "actual", "at"} and location(source)[1] == point.number


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=30))
def test_lines_that_are_no_tap_never_raise(lines: list[str]) -> None:
    stream = TapStream()
    points = [p for line in lines for p in stream.feed(line)] + stream.end()
    assert all(p.outcome in ("passed", "failed", "skipped") for p in points)
    assert len(points) <= sum(1 for line in lines if line.strip().startswith(("ok", "not ok")))
