"""run_tests on vitest 1.6 and 2.1 (whose reporter API is not 3's: cog's reporter reads their
onTaskUpdate/onFinished), counted test by test as vitest's own JSON reporter lists them; and the
messages a model reads from node:test (Node 20+), jest 29 and ts-jest 29: the assertion's expected
and actual values kept, no terminal colours, a TypeScript diagnostic's file and line. Real runners
from fixtures/node_vitest1, node_vitest2, node_jest, node_jest_ts and node_test."""

from __future__ import annotations

import collections
import json
import os
import subprocess
from pathlib import Path

import pytest

from run_tests_helpers import run_tool
from runner_fixtures import copy_project, need

MATH = "test/math.test.js::"


def own_json(root: Path, *argv: str) -> dict:
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=180,
                          env={"PATH": os.environ.get("PATH", ""), "HOME": str(root), "NO_COLOR": "1"})
    return json.loads(done.stdout[done.stdout.index("{"):])


@pytest.mark.anyio
@pytest.mark.parametrize("fixture", ["node_vitest1", "node_vitest2"])
async def test_vitest_1_and_2_are_counted_as_vitest_lists_its_tests(fixture: str, tmp_path: Path) -> None:
    need("node", "apt install nodejs npm")
    root = copy_project(fixture, tmp_path)
    run = await run_tool(root)
    own = own_json(root, "node_modules/.bin/vitest", "run", "--reporter=json")
    statuses = collections.Counter(a["status"] for f in own["testResults"] for a in f["assertionResults"])

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["runner"], d["outcome"], d["exit_code"]) == ("vitest", "failed", 1)
    # vitest 1's numPassedTests counts skipped tests as passed; each test's own status does not
    assert (d["passed"], d["failed"], d["skipped"]) == (statuses["passed"], statuses["failed"],
                                                        statuses["skipped"] + statuses["todo"]) == (24, 4, 3)
    assert d["tests_total"] == own["numTotalTests"] == 31
    assert len(run.updates) == 31  # one update per test, as it finished
    outcomes = run.outcomes()
    assert outcomes[MATH + "math > is still to write"] == outcomes[MATH + "not yet > skipped with its suite"] == "skipped"
    assert outcomes["test/nested/deep.test.js::deep passes"] == "passed"
    by_id = {f["id"]: f for f in d["failures"]}
    assert set(by_id) == {MATH + "math > subtracts wrongly", MATH + "square of 7 > is even when n is",
                          MATH + "square of 9 > is even when n is", MATH + "compares objects"}
    wrong = by_id[MATH + "math > subtracts wrongly"]
    assert (wrong["file"], wrong["line"], wrong["message"]) == ("test/math.test.js", 8, "subtraction is broken: expected 2 to be 3 // Object.is equality")
    assert "version: 2" in by_id[MATH + "compares objects"]["message"]
    assert run.result.result.startswith("vitest (all tests): 4 failed, 24 passed, 3 skipped")


VALUES_NODE = """import assert from "node:assert";
import test from "node:test";
test("strict values", () => {
  assert.strictEqual(2, 3);
});
test("deep values", () => {
  assert.deepStrictEqual({ a: [1, 2] }, { a: [1, 3] });
});
"""

VALUES_JEST = """test("toBe values", () => {
  expect(5 - 3).toBe(3);
});
test("toEqual values", () => {
  expect({ a: [1, 2] }).toEqual({ a: [1, 3] });
});
"""


@pytest.mark.anyio
@pytest.mark.parametrize(("fixture", "file", "source", "expected"), [
    ("node_test", "test/values.test.mjs", VALUES_NODE, {
        "strict values": ("Expected values to be strictly equal — expected 3, actual 2", 4),
        "deep values": ("Expected values to be strictly deep-equal — expected { a: [ 1, 3 ] }, actual { a: [ 1, 2 ] }", 7)}),
    ("node_jest", "test/values.test.js", VALUES_JEST, {
        "toBe values": ("Error: expect(received).toBe(expected) // Object.is equality — expected 3, actual 2", 2),
        "toEqual values": ("Error: expect(received).toEqual(expected) // deep equality — expected { a: [ 1, 3 ] }, actual { a: [ 1, 2 ] }", 5)}),
])
async def test_an_assertion_message_keeps_the_expected_and_actual_values(
        fixture: str, file: str, source: str, expected: dict[str, tuple[str, int]], tmp_path: Path) -> None:
    need("node", "apt install nodejs npm")
    root = copy_project(fixture, tmp_path)
    (root / file).write_text(source)
    run = await run_tool(root, {"paths": [file]})

    assert run.result.ok, run.result.error
    got = {f["id"].split("::", 1)[1]: (f["message"], f["line"]) for f in run.details["failures"]}
    assert got == expected  # the one line the row, GitHub's annotation and a long list of failures show


@pytest.mark.slow
@pytest.mark.anyio
async def test_ts_jest_diagnostics_reach_the_model_without_colours_and_with_file_and_line(tmp_path: Path) -> None:
    need("node", "apt install nodejs npm")
    root = copy_project("node_jest_ts", tmp_path)
    own = own_json(root, "node_modules/.bin/jest", "--json", "test/types.test.ts")
    assert "\x1b[96m" in own["testResults"][0]["message"]  # ts-jest colours its diagnostics whatever NO_COLOR says
    run = await run_tool(root)

    assert run.result.ok, run.result.error
    d = run.details
    assert (d["passed"], d["failed"], d["errors"]) == (1, 1, 1)
    by_id = {f["id"]: f for f in d["failures"]}
    broken = by_id["test/types.test.ts"]
    assert (broken["file"], broken["line"]) == ("test/types.test.ts", 2)
    assert broken["message"].startswith("test/types.test.ts:2:7 - error TS2322: Type 'string' is not assignable to type 'number'")
    wrong = by_id["test/math.test.ts::math > subtracts wrongly"]
    assert (wrong["line"], wrong["message"]) == (10, "Error: expect(received).toBe(expected) // Object.is equality — expected 3, actual 2")
    everything = json.dumps([run.result.result, d], ensure_ascii=False)
    assert "\x1b" not in everything and "[96m" not in everything
