"""run_tests on mocha (11.8, through cog's reporter) and tape (5.10, its TAP read), real runners on
fixtures/node_mocha and fixtures/node_tape: counts equal the runners' own, failures with file, line
and the assertion's values; a test script that prints TAP (tape under nyc 17) is counted from it,
its TAP not echoed line by line, and no terminal colour reaches what cog forwards."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from run_tests_helpers import run_tool
from runner_fixtures import copy_project, need


@pytest.fixture
def mocha(tmp_path: Path) -> Path:
    need("node", "apt install nodejs npm")
    return copy_project("node_mocha", tmp_path)


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    need("node", "apt install nodejs npm")
    return copy_project("node_tape", tmp_path)


def own_output(root: Path, *argv: str) -> str:
    return subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=120, env={"PATH": _path(), "NO_COLOR": "1"}).stdout


def _path() -> str:
    import os

    return os.environ.get("PATH", "")


@pytest.mark.anyio
async def test_mocha_counts_equal_its_own_and_failures_keep_the_values(mocha: Path) -> None:
    run = await run_tool(mocha)
    stats = json.loads(own_output(mocha, "node_modules/.bin/mocha", "--reporter", "json"))["stats"]

    assert run.result.ok, run.result.error
    d = run.details
    assert d["runner"] == "mocha" and d["outcome"] == "failed"
    assert (d["passed"], d["failed"], d["skipped"]) == (stats["passes"], stats["failures"], stats["pending"]) == (3, 3, 2)
    by_id = {f["id"]: f for f in d["failures"]}
    wrong = by_id["test/math.spec.js::math > subtracts wrongly"]
    assert (wrong["file"], wrong["line"]) == ("test/math.spec.js", 8)
    assert wrong["message"] == "Expected values to be strictly equal — expected 3, actual 2"
    objects = by_id["test/math.spec.js::math > compares objects"]["message"]
    assert "expected { name: 'cog', version: 2 }, actual { name: 'cog', version: 1 }" in objects
    assert by_id["test/strings.spec.js::strings > throws a plain error"]["message"] == "boom"
    assert run.result.result.startswith("mocha (all tests): 3 failed, 3 passed, 2 skipped")

    some = await run_tool(mocha, {"paths": ["test/strings.spec.js"], "keyword": "joins"})
    assert some.outcomes() == {"test/strings.spec.js::strings > joins": "passed"}


@pytest.mark.anyio
async def test_tape_counts_its_tap_as_tape_does_with_file_line_and_values(tape: Path) -> None:
    run = await run_tool(tape)
    own = own_output(tape, "node_modules/.bin/tape", "test/math.js", "test/strings.js")
    said = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail)\s+(\d+)$", own, re.M)}

    assert run.result.ok, run.result.error
    d = run.details
    assert d["runner"] == "tape" and d["outcome"] == "failed"
    todo = [t for t in d["tests"] if t["id"] == "is still to write > not written yet"]
    assert todo and todo[0]["outcome"] == "skipped"  # a failing TODO point: tape counts it in "pass"
    assert d["failed"] == said["fail"] == 2
    assert d["passed"] + len(todo) == said["pass"] and d["passed"] + d["failed"] + len(todo) == said["tests"]
    assert run.outcomes()["is skipped"] == "skipped"  # a test skipped whole: only tape's "# SKIP" comment
    assert run.outcomes()["inner passes > inner is fine"] == "passed"  # tape names a t.test by its own comment
    first = d["failures"][0]
    assert (first["id"], first["file"], first["line"]) == ("subtracts wrongly > five minus three", "test/math.js", 10)
    assert first["message"] == "five minus three — expected 3, actual 2"
    assert [u.content for u in run.updates][:2] == ["adds > one and one passed", "adds > two and two passed"]


@pytest.mark.anyio
async def test_a_script_printing_tap_is_counted_from_it_not_echoed_and_without_colours(tape: Path) -> None:
    package = json.loads((tape / "package.json").read_text())
    package["scripts"]["test"] = "nyc --reporter=text tape test/*.js"
    (tape / "package.json").write_text(json.dumps(package))
    (tape / "test" / "colour.js").write_text(
        'const test = require("tape");\n'
        'test("colours", (t) => {\n'
        '  console.log("\\x1b[96mcoloured output\\x1b[0m");\n'
        '  t.equal("2", "3", "\\x1b[91mcoloured message\\x1b[0m");\n'
        "  t.end();\n"
        "});\n")
    run = await run_tool(tape)

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["runner"], d["counted"], d["outcome"]) == ("npm", True, "failed")
    assert (d["passed"], d["failed"], d["skipped"]) == (4, 3, 2)
    assert "the counts are those of the TAP it printed" in run.result.result
    assert "colours > coloured message — expected 3, actual 2" in [f"{f['id'].split(' > ')[0]} > {f['message']}" for f in d["failures"]]
    assert "% Stmts" in d["output_tail"]  # nyc's table is kept …
    contents = [u.content or "" for u in run.updates]
    assert not [c for c in contents if re.match(r"\s*(not )?ok \d|\s*---$|\s*\.\.\.$|\s*(operator|expected|actual):", c)]  # … TAP is not echoed
    assert "coloured output" in contents and "subtracts wrongly > five minus three failed" in contents
    everything = json.dumps([run.result.result, d, contents], ensure_ascii=False)
    assert "\x1b" not in everything and "[96m" not in everything  # … and no colour anywhere
