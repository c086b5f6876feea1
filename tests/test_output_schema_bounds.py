"""--output-schema under attack: a backtracking pattern (minutes for 35 characters), an answer nested
200,000 deep, a schema file nested 20,000 deep. Each attack is shown working without the defence
(the defence patched away, or jsonschema's stock validator) and failing with it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogcli.contract.errors import ConfigError
from cogcli.loop import json_bounds, output_schema
from cogcli.loop.json_bounds import MAX_ANSWER_CHARS, MAX_ANSWER_DEPTH, MAX_SCHEMA_DEPTH, text_depth, value_depth
from cogcli.loop.output_schema import OutputSchema
from cogcli.loop.runtime import Agent, Cogitator
from cogcli.loop.schema_regex import search
from cogcli.models.scripted import ScriptedModel, Turn
from cogcli.wire.events import BaseEvent, ErrorEvent, FinishEvent

EVIL = "^(\\w+\\s?)*$"
#: 35 characters: a word that cannot end the match, so a backtracking engine tries every split
EVIL_TEXT = "a" * 34 + "!"
EVIL_SCHEMAS = {
    "pattern": {"type": "string", "pattern": EVIL},
    "patternProperties": {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}},
    "additionalProperties": {"type": "object", "patternProperties": {EVIL: True}, "additionalProperties": False},
}


def evil_answer(keyword: str) -> str:
    return json.dumps(EVIL_TEXT if keyword == "pattern" else {EVIL_TEXT: 1})


# --- linear-time patterns ---------------------------------------------------------------------


def run_check(keyword: str, *, defended: bool, timeout: float) -> subprocess.CompletedProcess[str] | None:
    """OutputSchema.check of the evil answer in a child (a backtracking match cannot be stopped in
    this process); without the defence the validator is jsonschema's stock class. None: it timed out."""
    code = textwrap.dedent(f"""
        import json, time
        import jsonschema
        from cogcli.loop import schema_regex
        if not {defended!r}:  # the old behaviour: the stock validator, Python's re
            schema_regex.linear_validator = lambda kind: (kind, kind.FORMAT_CHECKER)
        from cogcli.loop.output_schema import OutputSchema
        schema = OutputSchema.of({EVIL_SCHEMAS[keyword]!r})
        started = time.perf_counter()
        verdict = schema.check({evil_answer(keyword)!r})
        print(json.dumps({{"ok": verdict.ok, "problem": verdict.problem, "seconds": time.perf_counter() - started}}))
    """)
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.parametrize("keyword", sorted(EVIL_SCHEMAS))
def test_a_backtracking_pattern_hangs_the_stock_validator_and_not_ours(keyword: str) -> None:
    assert run_check(keyword, defended=False, timeout=2.5) is None  # the attack: still matching after 2.5 s
    out = run_check(keyword, defended=True, timeout=30)
    assert out is not None and out.returncode == 0, out and out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["seconds"] < 0.1, verdict
    # a name the pattern does not match is simply not held to its subschema
    assert verdict["ok"] if keyword == "patternProperties" else "does not match" in verdict["problem"]


def test_the_pattern_keywords_still_say_what_jsonschema_said() -> None:
    schema = OutputSchema.of({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]{2}-\\d+$"}},
                              "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False})
    assert schema.check('{"id": "ab-12", "x-n": 3}').ok
    assert "'AB-12' does not match '^[a-z]{2}-\\\\d+$' (at $.id)" == schema.check('{"id": "AB-12"}').problem
    assert "is not of type 'integer' (at $.x-n)" in schema.check('{"x-n": "3"}').problem
    assert "'y' does not match any of the regexes: '^x-'" in schema.check('{"y": 1}').problem
    plain = OutputSchema.of({"type": "object", "properties": {"a": {}}, "additionalProperties": False})
    assert "Additional properties are not allowed ('b' was unexpected)" in plain.check('{"b": 1}').problem


@pytest.mark.parametrize(
    ("pattern", "named"),
    [("(?=a)b", "lookahead"), ("(a)\\1", "backreference"), ("(?>a)", "atomic group"), ("(" * 150 + ")" * 150, "100 deep")],
)
def test_a_pattern_re2_cannot_run_is_refused_when_the_schema_is_checked(pattern: str, named: str) -> None:
    for schema in ({"pattern": pattern}, {"properties": {"a": {"patternProperties": {pattern: {}}}}}):
        with pytest.raises(ConfigError) as caught:
            OutputSchema.of(schema)
        assert named in str(caught.value) and "pattern" in str(caught.value)
    # data that only looks like a pattern is not a pattern
    assert OutputSchema.of({"const": {"pattern": "(?=x)"}, "examples": [{"pattern": "(?!"}]}).check('{"pattern": "(?=x)"}').ok


def test_unevaluated_properties_with_pattern_properties_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="use additionalProperties instead of unevaluatedProperties"):
        OutputSchema.of({"patternProperties": {"^x": {}}, "allOf": [{"unevaluatedProperties": False}]})
    assert not OutputSchema.of({"properties": {"a": {}}, "unevaluatedProperties": False}).check('{"b": 1}').ok


def test_format_regex_is_bounded_and_still_checked() -> None:
    schema = OutputSchema.of({"type": "string", "format": "regex"})
    assert schema.check(json.dumps("^a+(b|c)$")).ok and not schema.check(json.dumps("(")).ok
    deep = json.dumps("(" * 100_000 + ")" * 100_000)
    with pytest.raises(RecursionError):  # the attack on Python's parser the bound keeps away
        re.compile(json.loads(deep))
    assert "is not a 'regex'" in schema.check(deep).problem


ALPHABET = "ab c1-_@.Z"
PATTERNS = ["^[a-z]+$", "\\d{1,3}-\\d", "^(\\w+\\s?)*$", "ab|c1", "^\\S+@\\S+\\.\\w+$", "colou?r", "^[^@ ]*$", "\\bab\\b", "Z\\Z"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PATTERNS), st.text(alphabet=ALPHABET, max_size=14))
def test_re2_matches_as_python_did_on_ascii_without_newlines(pattern: str, text: str) -> None:
    assert search(pattern, text) == (re.search(pattern, text) is not None)


# --- depth and size -----------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ ab'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\ ab', max_size=4), inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_the_depth_of_json_text_is_the_depth_of_its_value(value: Any) -> None:
    assert text_depth(json.dumps(value), 10_000) == value_depth(value, 10_000)
    assert text_depth(json.dumps(value, indent=1, ensure_ascii=False), 10_000) == value_depth(value, 10_000)


DEEP_ANSWER = "[" * 200_000 + "]" * 200_000


def test_an_answer_200000_deep_raised_and_now_is_an_invalid_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = OutputSchema.of({})
    started = time.perf_counter()
    verdict = schema.check(DEEP_ANSWER)
    assert time.perf_counter() - started < 1
    assert not verdict.ok and f"more than {MAX_ANSWER_DEPTH} levels deep" in verdict.problem
    at_limit = "[" * MAX_ANSWER_DEPTH + "]" * MAX_ANSWER_DEPTH
    assert schema.check(at_limit).ok and not schema.check("[" + at_limit + "]").ok
    monkeypatch.setattr(output_schema, "text_depth", lambda text, stop_after: 0)  # the defence away
    with pytest.raises(RecursionError):
        schema.check(DEEP_ANSWER)


def test_an_answer_too_long_is_an_invalid_answer() -> None:
    verdict = OutputSchema.of({"type": "string"}).check(json.dumps("a" * MAX_ANSWER_CHARS))
    assert not verdict.ok and f"more than the {MAX_ANSWER_CHARS:,}" in verdict.problem


async def run(model: ScriptedModel, schema: OutputSchema) -> list[BaseEvent]:
    events: list[BaseEvent] = []
    await Cogitator().run(Agent(name="t", instructions="Test.", model=model, output_schema=schema), input="go", on_event=events.append)
    return events


@pytest.mark.anyio
async def test_a_too_deep_answer_goes_back_to_the_model_and_its_next_answer_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = OutputSchema.of({"type": "object", "required": ["ok"]})
    deep = "[" * 5_000 + "]" * 5_000  # deep enough for RecursionError; the scripted model streams 4 characters a delta
    model = ScriptedModel([Turn(deep), Turn('{"ok": true}')])
    finish = [e for e in await run(model, schema) if isinstance(e, FinishEvent)][-1]
    assert finish.status == "completed" and finish.output == {"ok": True}
    assert f"more than {MAX_ANSWER_DEPTH} levels deep" in model.requests[1][-1].content
    # without the defence: the run died of a RecursionError and the model was never asked again
    monkeypatch.setattr(output_schema, "text_depth", lambda text, stop_after: 0)
    model = ScriptedModel([Turn(deep), Turn('{"ok": true}')])
    events = await run(model, schema)
    assert [e for e in events if isinstance(e, FinishEvent)][-1].status == "error"
    assert "RecursionError" in [e for e in events if isinstance(e, ErrorEvent)][-1].message and len(model.requests) == 1


def test_a_schema_file_20000_deep_is_refused_naming_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"items": ' * 20_000 + "{}" + "}" * 20_000)
    assert deep.stat().st_size < output_schema.MAX_SCHEMA_BYTES
    with pytest.raises(ConfigError, match=f"more than {MAX_SCHEMA_DEPTH} levels deep"):
        OutputSchema.load(deep)
    with pytest.raises(ConfigError, match=f"more than {MAX_SCHEMA_DEPTH} levels deep"):  # a schema given as a value
        OutputSchema.of(json.loads('{"not": ' * 500 + "{}" + "}" * 500))
    monkeypatch.setattr(output_schema, "text_depth", lambda text, stop_after: 0)  # the defence away
    monkeypatch.setattr(output_schema, "value_depth", lambda value, stop_after: 0)
    with pytest.raises(RecursionError):
        OutputSchema.load(deep)


def test_a_value_that_contains_itself_ends_the_depth_walk() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert json_bounds.value_depth(loop, MAX_SCHEMA_DEPTH) == MAX_SCHEMA_DEPTH + 1


def test_a_reference_loop_is_refused_up_front_and_a_deep_one_is_an_invalid_answer() -> None:
    for schema in ({"$ref": "#"}, {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}):
        with pytest.raises(ConfigError, match="follows \\$ref after \\$ref without end"):
            OutputSchema.of(schema)
    # 3,000 references in a row, reached only through a property: each answer that has it is told
    chain: dict[str, Any] = {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(3000)}}
    chain["$defs"]["d3000"] = {"type": "integer"}
    chain["properties"] = {"a": {"$ref": "#/$defs/d0"}}
    schema = OutputSchema.of(chain)
    assert schema.check('{"b": 1}').ok
    verdict = schema.check('{"a": 1}')
    assert not verdict.ok and "references nest too deeply" in verdict.problem
