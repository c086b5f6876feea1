"""Runners whose results are TAP on their output: tape (:class:`TapeRunner`), and any TAP a test
script prints (:class:`TapReader`, which :class:`~workspace_tools.runners.npm.ScriptRunner` feeds
every line of ``npm test``: tape under nyc, ``node --test --test-reporter=tap``, mocha's ``tap``
reporter, node-tap).

Each test point becomes one record (:mod:`.tap_stream` parses them): its id is the names around it
(a TAP 14 subtest's, or tape's ``# test name`` comment) and its description; a failed point's
file and line come from its diagnostics (``at:``, ``location:``), its message from ``message`` or
the description with the ``expected``/``actual`` values. A point that closes a subtest is not
counted again (its points were), unless it failed when none of them did. ``# TODO`` and ``# SKIP``
points count as skipped (tape counts a failing TODO as passed). ``Bail out!`` is an error; a plan
the points do not match is said in the notes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.runners.base import Invocation, Selection
from workspace_tools.runners.failure_text import message, plain
from workspace_tools.runners.node import NodeRunner, linked_modules
from workspace_tools.runners.report import Report
from workspace_tools.runners.tap_stream import TapPoint, TapStream, location

#: tape's summary comments (``# tests 7``, ``# pass  5``, ``# ok``), which name no test
_SUMMARY = re.compile(r"^(?:(?:tests|pass|fail|todo|skip)\s+\d+|ok)$", re.IGNORECASE)


class TapReader:
    """A producer's output lines, read as TAP into ``report`` (``rel_file`` makes a path the
    producer named relative to the workspace)."""

    def __init__(self, rel_file: Any) -> None:
        self.stream = TapStream()
        self.rel_file = rel_file
        self.points = 0
        self.test_name = ""  # tape's: the last ``# name`` comment
        self._failed_below: set[int] = set()
        self._ended = False

    @property
    def found(self) -> bool:
        """Whether the output held TAP test points (not just a stray ``ok``)."""
        return self.points > 0 and (self.stream.version is not None or self.stream.plan is not None)

    def line(self, text: str, report: Report) -> bool:
        """Read one line; True when it was TAP (a test point, plan, diagnostic, comment …)."""
        before = (self.stream.unknown, self.stream.seen_tap)
        for point in self.stream.feed(plain(text)):
            self._record(point, report)
        return self.stream.seen_tap and self.stream.unknown == before[0]

    def end(self, report: Report) -> None:
        if self._ended:
            return
        self._ended = True
        for point in self.stream.end():
            self._record(point, report)
        if not self.found:
            return
        self._skipped([c for c in self.stream.left_comments() if not _SUMMARY.match(c)], report)
        for problem in self.stream.problems():
            report.notes.append(f"TAP: {problem}.")
        if self.stream.bailed is not None:
            report.add_test({"id": "Bail out!", "outcome": "error", "when": "call", "message": self.stream.bailed or "bailed out",
                             "longrepr": f"Bail out! {self.stream.bailed}", "file": None, "line": None})

    def _record(self, point: TapPoint, report: Report) -> None:
        names = [c for c in point.comments if not _SUMMARY.match(c)]
        self._skipped(names, report)
        names = [n.removeprefix("TODO ") for n in names if not n.startswith("SKIP ")]  # tape: "# TODO name"
        if names and point.depth == 0 and not point.path:
            self.test_name = names[-1]
        failed = point.outcome == "failed"
        if point.has_subtests:
            below = point.depth in self._failed_below
            self._failed_below.discard(point.depth)
            if not failed or below:
                return
        if failed and point.depth > 0:
            self._failed_below.add(point.depth - 1)
        label = point.description or f"#{point.number or self.points + 1}"
        where = point.path or ([self.test_name] if self.test_name and point.depth == 0 else [])
        self.points += 1
        self._add(report, " > ".join([*where, label]), point.outcome, point, point.reason or point.directive)

    def _skipped(self, comments: list[str], report: Report) -> None:
        for name in comments:
            if name.startswith("SKIP "):  # tape: a test skipped whole has only this comment
                self._add(report, name[5:], "skipped", None, "skipped")

    def _add(self, report: Report, name: str, outcome: str, point: TapPoint | None, note: str | None) -> None:
        record: dict[str, Any] = {"id": name, "outcome": outcome, "when": "call", "file": None, "line": None,
                                  "message": note if outcome == "skipped" else None, "longrepr": None}
        if point is not None and outcome == "failed":
            d = point.diagnostics
            file, line = location(d)
            head = d.get("message") if isinstance(d.get("message"), str) else point.description
            text = "\n".join(x for x in (point.description, point.diagnostics_text) if x)
            record.update(file=self.rel_file(file) if file else None, line=line, longrepr=text or None,
                          message=message(head or "failed", d.get("expected"), d.get("actual"), text))
        report.add_test(record)


class TapeRunner(NodeRunner):
    """tape: its files run in one process, its TAP read from the output."""

    name = "tape"
    found_by = "package.json: a `tape` test script (or none, and tape in devDependencies)"
    needs = "Node.js and the project's node_modules (npm ci)"
    toolchain = "node"
    binary = "tape"
    refused_options = ("--require", "-r", "--import", "-i")

    def __init__(self, workspace: Any, root: Path, base_args: list[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        super().__init__(workspace, root, base_args=base_args, env=env)
        self.tap = TapReader(self.rel_file)

    def invocation(self, selection: Selection) -> Invocation:
        if selection.keyword is not None:
            raise ToolCallError("tape has no filter by test name: leave keyword out and pass the test files as paths",
                                code=ErrorCode.INVALID_ARGUMENTS)
        own = [w for w in self.base_args if w.startswith("-")] if selection.paths else self.base_args
        argv = [self.executable(), *own, *selection.args, *selection.paths]
        return Invocation(argv=argv, env={**self.env, "FORCE_COLOR": "0", "NO_COLOR": "1"},
                          readable=linked_modules(self.root, self.workspace.root))

    def on_line(self, line: bytes, report: Report) -> None:
        report.started = True
        self.tap.line(line.decode("utf-8", "replace"), report)

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        self.tap.end(report)
        if not self.tap.found and exit_code != 0:
            raise ToolCallError(f"tape printed no TAP (exit {exit_code}):\n{output[-3000:]}", code=ErrorCode.TOOL_ERROR)
