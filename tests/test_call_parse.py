"""One parse of a call's arguments: a model's text and `cog tool NAME --args '{…}'` go through
call.parse_arguments — the same JSON reading, the same object check, the same nesting limit."""

from __future__ import annotations

import pytest
from cli_helpers import run_cog

from cogcli.contract.prepare import parse_arguments

DEEP = '{"path": ' + "[" * 5000 + "]" * 5000 + "}"


@pytest.mark.parametrize(
    ("text", "model_says"),
    [
        ("{nope", "not valid JSON (Expecting property name enclosed in double quotes at position 1); send the arguments as one JSON object"),
        ("[1]", "expected a JSON object, got list"),
        (DEEP, "nested too deeply to read; send the arguments as one flat JSON object"),
    ],
)
def test_a_models_text_and_the_cli_option_fail_alike(text: str, model_says: str, make_repo) -> None:
    assert parse_arguments(text) == (text, model_says)
    value, problem = parse_arguments(text, option="--args")
    assert value == text and problem is not None and problem.startswith("--args ")
    # what `cog tool … --args` prints is this parse's word for the problem
    out = run_cog(["tool", "read_file", "--args", text], make_repo("calc"))
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"cog: {problem}\n"


def test_an_object_is_read_the_same_whoever_sent_it() -> None:
    text = '{"path": "a.py", "limit": 3}'
    assert parse_arguments(text) == parse_arguments(text, option="--args") == ({"path": "a.py", "limit": 3}, None)
    assert parse_arguments("  ") == parse_arguments(None) == ({}, None)
    assert parse_arguments({"path": "a.py"}) == ({"path": "a.py"}, None)
    assert parse_arguments(["x"])[1] == "expected a JSON object, got list"
