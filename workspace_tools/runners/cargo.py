"""Rust: ``cargo test --offline --no-fail-fast``, its per-test lines read as they arrive.

Stable ``cargo test`` has no machine-readable output (its JSON is nightly-only), so this reads
libtest's own line format, which is stable and written as each test ends: ``running N tests``,
``test NAME ... ok|FAILED|ignored[, reason]``, then per failing test a ``---- NAME stdout ----``
block, then ``test result: …``. Cargo's own ``Running unittests src/lib.rs (…)`` /
``Running tests/x.rs (…)`` / ``Doc-tests`` lines say which target the tests belong to. A
compiler error (``error[E…]`` … ``error: could not compile `crate` ``) is a build error with the
compiler's text. Offline: ``cargo --offline`` (a missing crate is an error naming ``cargo fetch``); the
target folder stays the project's ``target/``.

``paths``: a crate's folder (``-p NAME`` in a cargo workspace), ``tests/x.rs`` (``--test x``) or
``src/…`` (``--lib``); ``keyword`` is libtest's name filter.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.runners.base import Invocation, Runner, Selection
from workspace_tools.runners.report import Report

_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+)(?: \(.*\))?\s*$")
_DOCTESTS = re.compile(r"^\s*Doc-tests (\S+)")
_COUNT = re.compile(r"^running (\d+) tests?$")
_TEST = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored|bench)(?:, (.*))?$")
_FAILURE_HEAD = re.compile(r"^---- (.+?) std(?:out|err) ----$")
_RESULT = re.compile(r"^test result: ")
_ERROR = re.compile(r"^error(?:\[E\d+\])?: ")
_WARNING = re.compile(r"^warning(?:\[\w+\])?: ")
_COULD_NOT_COMPILE = re.compile(r"^error: could not compile `([^`]+)`(?: \(([^)]*)\))?")
_TEST_PHASE_ERROR = re.compile(r"^error: (test failed|\d+ targets? failed|doctest failed)")
_CARGO_STATUS = re.compile(r"^\s*(Compiling|Finished|Running|Doc-tests|Checking|Blocking|Locking|Updating)\b")
_ARROW = re.compile(r"^\s*--> ([^:\s]+):(\d+)(?::\d+)?")
_PANIC = re.compile(r"panicked at ([^:\s]+):(\d+)(?::\d+)?:")
_OFFLINE = ("attempting to make an HTTP request, but --offline was specified", "failed to download",
            "no matching package named", "--offline")


def _crate_name(manifest: Path) -> str | None:
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    name = data.get("package", {}).get("name")
    return name if isinstance(name, str) else None


class CargoRunner(Runner):
    name = "cargo"
    found_by = "Cargo.toml"
    needs = "cargo (rustup or the distribution's package) and the crates in its cache (cargo fetch)"
    toolchain = "cargo"
    refused_options = (
        "--target-dir", "--config", "-Z", "--manifest-path", "--message-format", "--format", "--logfile",
        "--color", "-q", "--quiet",
    )

    def __init__(self, workspace: Any, root: Path, base_args: list[str] | None = None) -> None:
        super().__init__(workspace, root)
        self.base_args = base_args or []
        self._target = "?"
        self._failing: dict[str, dict[str, Any]] = {}
        self._failure_name: str | None = None
        self._failure_lines: list[str] = []
        self._in_result_section = False
        self._diag: list[str] = []
        self._in_error = False

    def selection_args(self, paths: list[str]) -> list[str]:
        args: list[str] = []
        for given in paths:
            full = (self.root / given).resolve()
            if full.is_dir() and (full / "Cargo.toml").is_file():
                name = _crate_name(full / "Cargo.toml")
                if full != self.root.resolve() and name:
                    args += ["-p", name]
                continue
            parts = Path(os.path.relpath(full, self.root)).parts
            if full.suffix == ".rs" and "tests" in parts and full.parent.name == "tests":
                args += ["--test", full.stem]
            elif "src" in parts or "benches" in parts:
                args += ["--lib"] if "--lib" not in args else []
            elif "tests" in parts:
                args += ["--tests"]
            else:
                raise ToolCallError(
                    f"cargo test cannot run {given!r} on its own: pass a crate's folder, tests/NAME.rs or a file "
                    "under src/, and use keyword to select tests by name",
                    code=ErrorCode.INVALID_ARGUMENTS,
                )
        return args

    def invocation(self, selection: Selection) -> Invocation:
        argv = ["cargo", "test", "--offline", "--no-fail-fast", "--color", "never", *self.base_args]
        argv += self.selection_args(selection.paths)
        harness = list(selection.args)
        before, after = (harness[: harness.index("--")], harness[harness.index("--") + 1 :]) if "--" in harness else (harness, [])
        argv += before
        tail = [*after]
        if selection.keyword is not None:
            tail.insert(0, selection.keyword)
        if tail:
            argv += ["--", *tail]
        inv = Invocation(argv=argv, env={"CARGO_TERM_COLOR": "never"})
        target = os.environ.get("CARGO_TARGET_DIR")
        if target and not Path(target).resolve().is_relative_to(self.workspace.root):
            inv.sandbox_env["CARGO_TARGET_DIR"] = str(self.root / "target")
        return inv

    # -- the stream ---------------------------------------------------------------------------

    def on_line(self, line: bytes, report: Report) -> None:
        text = line.decode("utf-8", "replace").rstrip("\r")
        if self._failure_name is not None:
            if _FAILURE_HEAD.match(text) or text == "failures:" or _RESULT.match(text):
                self._close_failure()
            else:
                self._failure_lines.append(text)
                return
        if self._diagnostic(text, report):
            return
        m = _TEST.match(text)
        if m:
            self._test(m.group(1), m.group(2), m.group(3), report)
            return
        m = _FAILURE_HEAD.match(text)
        if m:
            self._failure_name, self._failure_lines = m.group(1), []
            return
        m = _RUNNING.match(text)
        if m:
            self._target, self._failing = m.group(1), {}
            report.started = True
            return
        m = _DOCTESTS.match(text)
        if m:
            self._target, self._failing = "doc-tests", {}
            return
        m = _COUNT.match(text)
        if m:
            report.collected = (report.collected or 0) + int(m.group(1))

    def _diagnostic(self, text: str, report: Report) -> bool:
        """Compiler messages: errors gathered until ``could not compile`` makes them a build error."""
        m = _COULD_NOT_COMPILE.match(text)
        if m:
            body = "\n".join(self._diag).strip() or text
            file = line = None
            for d in self._diag:
                found = _ARROW.match(d)
                if found:
                    file, line = found.group(1), int(found.group(2))
                    break
            target = m.group(1) + (f" ({m.group(2)})" if m.group(2) else "")
            report.add_build_error(target, body, file=self.rel_file(file), line=line)
            self._diag, self._in_error = [], False
            return True
        if _ERROR.match(text) and not _TEST_PHASE_ERROR.match(text):
            self._in_error = True
        elif _WARNING.match(text) or _CARGO_STATUS.match(text) or _TEST_PHASE_ERROR.match(text):
            self._in_error = False
        if self._in_error:
            self._diag.append(text)
            return True
        return False

    def _test(self, name: str, status: str, reason: str | None, report: Report) -> None:
        if status == "bench":
            return
        outcome = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}[status]
        record: dict[str, Any] = {
            "id": self.test_id(self._target, name),
            "outcome": outcome,
            "when": "call",
            "message": reason if outcome == "skipped" else None,
            "longrepr": None,
            "file": self.rel_file(self._target) if self._target.endswith(".rs") else None,
            "line": None,
        }
        if self._target == "doc-tests":
            record["id"] = f"{self.rel_root + '/' if self.rel_root else ''}{name}"
        if outcome == "failed":
            self._failing[name] = record
        report.add_test(record)

    def _close_failure(self) -> None:
        name, lines = self._failure_name, self._failure_lines
        self._failure_name, self._failure_lines = None, []
        record = self._failing.get(name or "")
        if record is None:
            return
        if "stack backtrace:" in lines:  # the frames of the panic machinery: noise for the reader
            cut = lines.index("stack backtrace:")
            frames = [x for x in lines[cut:] if x.lstrip()[:1].isdigit() and "::" in x and "core::" not in x and "std::" not in x
                      and "__rustc" not in x]
            lines = lines[:cut] + (["stack backtrace (the test's own frames):", *frames] if frames else [])
        text = "\n".join(lines).strip()
        record["longrepr"] = text
        panic = _PANIC.search(text)
        if panic:
            record["file"], record["line"] = self.rel_file(panic.group(1)), int(panic.group(2))
            after = text[panic.end():].strip().splitlines()
            record["message"] = after[0][:500] if after else None
        else:
            record["message"] = next((x.strip() for x in lines if x.strip()), None)

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        if self._failure_name is not None:
            self._close_failure()
        if self._diag and not report.build_errors and exit_code != 0:
            text = "\n".join(self._diag)
            if any(m in text for m in _OFFLINE):
                raise ToolCallError(
                    "cargo could not get a crate: cog runs cargo offline (--offline) and it is not in the local "
                    f"registry cache. Run `cargo fetch` in {self.rel_root or 'the workspace'} (outside cog), then run "
                    f"the tests again.\n{text[-2500:]}",
                    code=ErrorCode.TOOL_ERROR,
                )
            if not report.tests:
                report.add_build_error(self.rel_root or ".", text)
        if exit_code != 0 and not report.tests and not report.build_errors:
            raise ToolCallError(f"cargo test failed before running any test (exit {exit_code}):\n{output[-3000:]}",
                                code=ErrorCode.TOOL_ERROR)
