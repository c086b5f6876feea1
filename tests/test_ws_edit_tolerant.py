"""edit_file beyond the exact match: the tolerant rules (each only when it finds one place, said in
the result), the ``edits`` list (in order, all or none), previews and approvals of both, and
properties: an exact edit is what it was, an ambiguous exact match is never rescued, and the bytes
an edit did not touch stay as they were."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ws_helpers import assert_diff_applies, call

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.loop.runtime import Agent, Cogitator
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.wire.events import Approval, BaseEvent
from workspace_tools import workspace_tools
from workspace_tools.files.edit import change
from workspace_tools.text.textfile import BOM, TextFile
from workspace_tools.text.tolerant import find_all, locate, strip_numbers

SRC = "class Store:\n    def get(self, key):  \n        if key in self.cache:\n            return self.cache[key]\n        return None\n"


def edit(root: Path, **args: Any) -> Any:
    return call(workspace_tools(root, sandbox="off"), "edit_file", path="s.py", **args)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "s.py").write_text(SRC)
    return tmp_path / "w"


def test_a_tolerant_match_says_its_rule_to_the_model_and_in_details(root: Path, tmp_path: Path) -> None:
    before = tmp_path / "before"
    before.mkdir()
    (before / "s.py").write_text(SRC)
    result = edit(root, old_text="    def get(self, key):\n", new_text="    def get(self, key, default=None):\n")
    assert result.ok, result.error
    assert result.result == {"path": "s.py", "replacements": 1, "match": "trailing-whitespace"}
    assert result.details["match"] == "trailing-whitespace"
    assert (root / "s.py").read_text() == SRC.replace("def get(self, key):  ", "def get(self, key, default=None):")
    assert_diff_applies(before, root, result.details["diff"])


def test_an_exact_match_says_nothing_new_to_the_model(root: Path) -> None:
    result = edit(root, old_text="return None", new_text="return default")
    assert result.result == {"path": "s.py", "replacements": 1}
    assert result.details["match"] == "exact"


def test_indentation_shift_reindents_new_text(root: Path) -> None:
    result = edit(root, old_text="if key in self.cache:\n    return self.cache[key]\n", new_text="if key in self.cache:\n    hit()\n    return self.cache[key]\n")
    assert result.ok and result.details["match"] == "indentation"
    assert "        if key in self.cache:\n            hit()\n            return self.cache[key]\n" in (root / "s.py").read_text()


def test_an_ambiguous_tolerant_match_lists_lines_and_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("a = 1  \nb = 2\na = 1\t\n")
    result = edit(tmp_path, old_text="a = 1 \n", new_text="a = 3\n")
    assert result.error_code == ErrorCode.EDIT_AMBIGUOUS
    assert "trailing whitespace ignored it matches 2 places (at lines 1, 3)" in result.error
    assert (tmp_path / "s.py").read_text() == "a = 1  \nb = 2\na = 1\t\n"


def test_crlf_and_bom_are_kept_by_a_tolerant_match(tmp_path: Path) -> None:
    raw = (BOM + "x = \u201cone\u201d\r\ny = 2\r\n").encode()
    (tmp_path / "s.py").write_bytes(raw)
    result = edit(tmp_path, old_text='x = "one"\n', new_text='x = "two"\n')
    assert result.ok and result.details["match"] == "unicode-punctuation"
    assert (tmp_path / "s.py").read_bytes() == (BOM + 'x = "two"\r\ny = 2\r\n').encode()


def test_line_numbers_from_read_file_are_stripped(root: Path) -> None:
    shown = call(workspace_tools(root, sandbox="off"), "read_file", path="s.py").model_text()
    numbered = "".join(line + "\n" for line in shown.splitlines() if "\t" in line and ("return None" in line or "return self" in line))
    assert strip_numbers(numbered) is not None, numbered
    result = edit(root, old_text=numbered, new_text="            return self.cache[key]\n        return default\n")
    assert result.ok and result.details["match"] == "line-numbers", result.error
    assert (root / "s.py").read_text().endswith("        return default\n")


# --- the edits list ---


def test_edits_apply_in_order_each_on_the_result_before(root: Path, tmp_path: Path) -> None:
    before = tmp_path / "before"
    before.mkdir()
    (before / "s.py").write_text(SRC)
    edits = [
        {"old_text": "class Store:", "new_text": "class Cache:"},
        {"old_text": "class Cache:\n", "new_text": "class Cache:\n    size = 0\n"},  # sees the first edit
        {"old_text": "return None", "new_text": "return default"},
        {"old_text": "  def get(self, key):\n", "new_text": "  def get(self, key, default=None):\n"},
    ]
    result = edit(root, edits=edits)
    assert result.ok, result.error
    assert result.result == {"path": "s.py", "replacements": 4, "matches": ["exact", "exact", "exact", "trailing-whitespace"]}
    assert result.details["matches"] == result.result["matches"] and "match" not in result.details
    expected = (
        "class Cache:\n    size = 0\n    def get(self, key, default=None):\n"
        "        if key in self.cache:\n            return self.cache[key]\n        return default\n"
    )
    assert (root / "s.py").read_text() == expected
    assert_diff_applies(before, root, result.details["diff"])


@pytest.mark.parametrize(
    ("edits", "code", "says"),
    [
        ([{"old_text": "class Store:", "new_text": "class A:"}, {"old_text": "nowhere", "new_text": "x"}], ErrorCode.EDIT_NO_MATCH,
         "edits[1] (edit 2 of 2): old_text was not found in s.py"),
        ([{"old_text": "return", "new_text": "yield"}, {"old_text": "a", "new_text": "b"}], ErrorCode.EDIT_AMBIGUOUS, "edits[0] (edit 1 of 2): old_text occurs 2 times"),
        ([{"old_text": "class Store:", "new_text": "class A:"}, {"old_text": "class Store:", "new_text": "class B:"}], ErrorCode.EDIT_NO_MATCH, "edits[1]"),
        ([{"old_text": "x", "new_text": "x"}], ErrorCode.INVALID_ARGUMENTS, "edits[0] (edit 1 of 1): old_text and new_text are the same"),
        ([{"old_text": "", "new_text": "x"}], ErrorCode.INVALID_ARGUMENTS, "edits[0] (edit 1 of 1): old_text is empty"),
        ([], ErrorCode.INVALID_ARGUMENTS, "edits is empty"),
    ],
)
def test_a_failing_edit_of_the_list_names_its_index_and_writes_nothing(root: Path, edits: list[dict[str, str]], code: str, says: str) -> None:
    result = edit(root, edits=edits)
    assert result.error_code == code
    assert says in result.error
    assert (root / "s.py").read_text() == SRC


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"old_text": "a", "new_text": "b", "edits": [{"old_text": "a", "new_text": "b"}]}, "not both"),
        ({"old_text": "class Store:"}, "give old_text and new_text"),
        ({}, "give old_text and new_text"),
        ({"edits": [{"old_text": "a", "new_text": "b"}], "replace_all": True}, "put replace_all in the edit"),
    ],
)
def test_exactly_one_form_is_given(root: Path, args: dict[str, Any], says: str) -> None:
    result = edit(root, **args)
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert says in result.error
    assert (root / "s.py").read_text() == SRC


class Approver:
    def __init__(self, before: Any = None) -> None:
        self.asked: list[Approval] = []
        self.before = before

    async def __call__(self, approvals: list[Approval]) -> dict[str, Any]:
        self.asked += approvals
        if self.before is not None:
            self.before()
        return {a.tool_call_id: True for a in approvals}


async def run_calls(root: Path, calls: list[Call], approve: Approver) -> Any:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    events: list[BaseEvent] = []
    agent = Agent(name="t", instructions="Test.", model=ScriptedModel([Turn("", calls), Turn("Done.")]), tools=workspace_tools(root, sandbox="off"), max_steps=5)
    return await Cogitator().run(agent, input="fix it", on_event=events.append, approve=approve)


@pytest.mark.anyio
async def test_previews_show_the_real_diff_of_tolerant_and_listed_edits(root: Path) -> None:
    approver = Approver()
    tolerant = {"path": "s.py", "old_text": "if key in self.cache:\n    return self.cache[key]\n", "new_text": "if key in self.cache:\n    return self.cache.get(key)\n"}
    listed = {"path": "s.py", "edits": [{"old_text": "class Store:", "new_text": "class Cache:"}, {"old_text": "return None", "new_text": "return 0"}]}
    result = await run_calls(root, [Call("c1", "edit_file", tolerant), Call("c2", "edit_file", listed)], approver)
    first, second = result.tool_calls
    assert first.ok and second.ok
    assert [a.preview["diff"] for a in approver.asked if a.preview] == [first.details["diff"], second.details["diff"]]
    assert "+            return self.cache.get(key)\n" in first.details["diff"]
    assert (root / "s.py").read_text() == SRC.replace("Store", "Cache").replace("cache[key]\n", "cache.get(key)\n").replace("None", "0")


@pytest.mark.anyio
async def test_an_approved_listed_edit_refuses_a_file_changed_meanwhile(root: Path) -> None:
    theirs = SRC + "# theirs\n"
    approver = Approver(before=lambda: (root / "s.py").write_text(theirs))
    listed = {"path": "s.py", "edits": [{"old_text": "class Store:", "new_text": "class Cache:"}]}
    result = await run_calls(root, [Call("c1", "edit_file", listed)], approver)
    assert result.tool_calls[0].error_code == "FILE_CHANGED"
    assert (root / "s.py").read_text() == theirs


# --- properties ---

_chars = st.sampled_from(list("ab \t\n\"'-\u201c\u2014x1"))
_texts = st.text(_chars, max_size=60)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=_texts, data=st.data(), new=_texts, crlf=st.booleans())
def test_an_exact_edit_is_what_it_was(text: str, data: st.DataObject, new: str, crlf: bool) -> None:
    """Old_text found exactly once: the result is str.replace's, reported exact."""
    raw = (text.replace("\n", "\r\n") if crlf else text).encode()
    file = TextFile.decode(raw)
    assume(file.text)
    i = data.draw(st.integers(0, len(file.text) - 1))
    j = data.draw(st.integers(i + 1, len(file.text)))
    old = file.text[i:j]
    assume(len(find_all(file.text, old)) == 1 and old != new)
    made = change([(old, new, False)], raw, "f")
    assert made.matches == ["exact"]
    assert made.data == file.with_text(file.text.replace(old, new, 1)).encode()


@settings(max_examples=300, deadline=None)
@given(chunk=_texts, filler=st.lists(_texts, min_size=2, max_size=4), new=_texts)
def test_an_ambiguous_exact_match_is_never_rescued_by_a_tolerant_rule(chunk: str, filler: list[str], new: str) -> None:
    text = chunk.join(filler)
    assume(chunk and len(find_all(text, chunk)) > 1)
    with pytest.raises(ToolCallError) as refused:
        locate_or_raise(text, chunk, new)
    assert refused.value.code in (ErrorCode.EDIT_AMBIGUOUS, ErrorCode.INVALID_ARGUMENTS)


def locate_or_raise(text: str, old: str, new: str) -> None:
    change([(old, new, False)], text.encode(), "f")


_indent = st.sampled_from(["", "  ", "    ", "\t", "\t  "])
_trail = st.sampled_from(["", " ", "  ", "\t"])
_word = st.text(st.sampled_from(list("abc =()\"'\u201c\u201d\u2014-")), min_size=1, max_size=8).filter(lambda w: w.strip() == w and w != "")


@st.composite
def _files(draw: st.DrawFn) -> tuple[list[tuple[str, str, str]], str, bool]:
    """Lines (indent, body with a unique token, trailing whitespace), the line ending, a BOM."""
    n = draw(st.integers(1, 8))
    lines = [(draw(_indent), f"{draw(_word)} v{k}q {draw(_word)}", draw(_trail)) for k in range(n)]
    return lines, draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans())


_MISTAKES = ["none", "trailing", "indent", "numbers", "crlf", "punctuation"]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(f=_files(), data=st.data(), mistake=st.sampled_from(_MISTAKES), new=st.text(st.sampled_from(list("xyz \n\t")), max_size=20))
def test_the_bytes_an_edit_did_not_touch_stay_as_they_were(f: tuple[list[tuple[str, str, str]], str, bool], data: st.DataObject, mistake: str, new: str) -> None:
    lines, ending, bom = f
    a = data.draw(st.integers(0, len(lines) - 1))
    b = data.draw(st.integers(a + 1, len(lines)))
    rendered = [i + body + t + ending for i, body, t in lines]
    raw = ((BOM if bom else "") + "".join(rendered)).encode()
    head = ((BOM if bom else "") + "".join(rendered[:a])).encode()
    tail = "".join(rendered[b:]).encode()
    window = [(i, body, t) for i, body, t in lines[a:b]]
    if mistake == "trailing":
        old = "".join(i + body + "\n" for i, body, _ in window)
    elif mistake == "indent":
        old = "".join("  " + i + body + t + "\n" for i, body, t in window)
    elif mistake == "numbers":
        old = "".join(f"{a + k + 1:>6}\t{i}{body}{t}\n" for k, (i, body, t) in enumerate(window))
    elif mistake == "crlf":
        old = "".join(i + body + t + ("\n" if ending == "\r\n" else "\r\n") for i, body, t in window)
    elif mistake == "punctuation":
        old = "".join(i + body.translate({0x201C: '"', 0x201D: '"', 0x2014: "-"}) + t + "\n" for i, body, t in window)
    else:
        old = "".join(i + body + t + "\n" for i, body, t in window)
    made = change([(old, new + "\n", False)], raw, "f")
    assert made.data.startswith(head) and made.data.endswith(tail), (mistake, made.matches)
    assert len(made.data) >= len(head) + len(tail)
    if mistake == "none" or (mistake == "crlf" and ending == "\r\n"):
        assert made.matches == ["exact"]


def test_locate_reports_none_for_text_nowhere() -> None:
    assert locate("a\nb\n", "c\n", "d\n") is None
