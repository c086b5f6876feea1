"""Go: ``go test -json`` (test2json events, written live by each package's test binary).

Events: ``run``/``pass``/``fail``/``skip``/``output`` per test (subtests are ``TestX/case`` and
become the subtests of ``TestX``), the same without ``Test`` per package, and since Go 1.24
``build-output``/``build-fail`` with ``ImportPath`` (and ``FailedBuild`` on the package's ``fail``).
Older Go writes a failed build as plain text (``# pkg`` … ``FAIL pkg [build failed]``): both are
read. ``paths`` are package folders (``./pkg``, ``./pkg/...``) or files in one; ``keyword`` is
``-run``. Offline: ``GOPROXY=off``, ``GOFLAGS`` without ``-mod=mod``, no toolchain download; in the
sandbox the module cache is read-only and the build cache is cog's own, per workspace.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.runners.base import Invocation, Runner, Selection
from workspace_tools.runners.report import Report

_BUILD_HEADER = re.compile(r"^# (\S+)")
_BUILD_FAILED = re.compile(r"^FAIL\s+(\S+)\s+\[(build|setup) failed\]")
_GO_WHERE = re.compile(r"^\s*([\w./-]+\.go):(\d+)(?::\d+)?: ")
_NOISE = re.compile(r"^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP):)")
_MISSING_MODULE = ("module lookup disabled by GOPROXY=off", "missing go.sum entry", "cannot find module providing package",
                   "no required module provides package")


def _module_path(root: Path) -> str:
    try:
        for line in (root / "go.mod").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("module "):
                return line.split()[1].strip('"')
    except OSError:
        pass
    return ""


class _Test:
    __slots__ = ("output", "subtests")

    def __init__(self) -> None:
        self.output: list[str] = []
        self.subtests: list[dict[str, Any]] = []


#: where the sandbox shows cog's Go build cache of the workspace (:func:`sandbox_build_cache`)
SANDBOX_GOCACHE = "/tmp/cog-go-build"


def sandbox_build_cache(workspace: Path) -> Path:
    """The sandbox's Go build cache for ``workspace``: cog's own, one per workspace (a hostile repo
    cannot poison the person's own builds through it); run_tests and run_command share it."""
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cogcli" / "go-build" / digest


def module_cache() -> Path:
    """Go's module cache as the person's environment places it (``GOMODCACHE``, else the first
    ``GOPATH`` entry's ``pkg/mod``, else ``~/go/pkg/mod``): the one part of ``GOPATH`` an offline
    build reads, so the sandbox shows it (read-only) and not the rest of ``GOPATH``."""
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    first = next((p for p in os.environ.get("GOPATH", "").split(os.pathsep) if p), "")
    return Path(first or Path.home() / "go") / "pkg" / "mod"


class GoRunner(Runner):
    name = "go"
    found_by = "go.mod"
    needs = "Go (go on PATH) and the module's dependencies in the module cache (go mod download)"
    toolchain = "go"
    glued_short_options = False
    refused_options = (
        "-json", "-o", "-exec", "-toolexec", "-c", "-coverprofile", "-cpuprofile", "-memprofile", "-blockprofile",
        "-mutexprofile", "-trace", "-outputdir", "-modfile", "-overlay", "-mod", "-pkgdir", "-test.outputdir",
    )

    def __init__(self, workspace: Any, root: Path, base_args: list[str] | None = None,
                 default_packages: list[str] | None = None) -> None:
        super().__init__(workspace, root)
        self.base_args = base_args or []
        self.default_packages = default_packages or ["./..."]
        self.module = _module_path(root)
        self._tests: dict[tuple[str, str], _Test] = {}
        self._failed_tests: set[str] = set()  # packages with a failing test
        self._pkg_output: dict[str, list[str]] = {}
        self._build_text: dict[str, list[str]] = {}
        self._build_current: str | None = None
        self._built_failed: set[str] = set()

    # -- the command ------------------------------------------------------------------------

    def packages(self, paths: list[str]) -> list[str]:
        out = []
        for given in paths:
            path = given.rstrip("/")
            recursive = path.endswith("/...")
            if recursive:
                path = path[: -len("/...")] or "."
            full = self.root / path
            if full.is_file():
                full = full.parent
            rel = os.path.relpath(full, self.root)
            pkg = "./" + rel.replace(os.sep, "/") if rel != "." else "."
            out.append(pkg + ("/..." if recursive else ""))
        return out or list(self.default_packages)

    def invocation(self, selection: Selection) -> Invocation:
        argv = ["go", "test", "-json", *self.base_args, *selection.args]
        if selection.keyword is not None:
            argv += ["-run", selection.keyword]
        argv += self.packages(selection.paths)
        goflags = " ".join(f for f in os.environ.get("GOFLAGS", "").split() if f != "-mod=mod")
        env = {"GOPROXY": "off", "GOFLAGS": goflags, "GOTOOLCHAIN": "local", "GOSUMDB": "off"}
        inv = Invocation(argv=argv, env=env)
        inv.readable.append(module_cache())
        # the sandbox's build cache: cog's own, one per workspace (a hostile repo cannot poison the
        # person's own builds through it), bound writable at the same place inside
        inv.writable.append((sandbox_build_cache(self.workspace.root), SANDBOX_GOCACHE))
        inv.sandbox_env["GOCACHE"] = SANDBOX_GOCACHE
        return inv

    # -- the stream ---------------------------------------------------------------------------

    def rel_package(self, pkg: str) -> str:
        """A package's folder relative to the workspace (``mathx/inner``)."""
        pkg = pkg.split(" ", 1)[0]
        if self.module and (pkg == self.module or pkg.startswith(self.module + "/")):
            rel = pkg[len(self.module) :].lstrip("/")
        else:
            rel = pkg
        return os.path.normpath(os.path.join(self.rel_root, rel)) if rel else (self.rel_root or ".")

    def on_line(self, line: bytes, report: Report) -> None:
        text = line.decode("utf-8", "replace")
        if text.startswith("{"):
            try:
                event = json.loads(text)
            except ValueError:
                event = None
            if isinstance(event, dict) and "Action" in event:
                self._event(event, report)
                return
        self._plain(text, report)

    def _plain(self, text: str, report: Report) -> None:
        """A line that is not JSON: the compiler's (Go before 1.24 writes a failed build as text)."""
        failed = _BUILD_FAILED.match(text)
        if failed:
            self._build_failed(failed.group(1), report)
            return
        header = _BUILD_HEADER.match(text)
        if header:
            self._build_current = header.group(1)
            self._build_text.setdefault(self._build_current, []).append(text)
        elif self._build_current is not None:
            self._build_text[self._build_current].append(text)

    def _event(self, e: dict[str, Any], report: Report) -> None:
        action = e.get("Action")
        pkg = e.get("Package") or ""
        test = e.get("Test")
        report.started = True
        if action == "build-output":
            self._build_text.setdefault(str(e.get("ImportPath", "")).split(" ", 1)[0], []).append(str(e.get("Output", "")).rstrip("\n"))
            return
        if action == "build-fail":
            self._build_failed(str(e.get("ImportPath", "")), report)
            return
        if test is None:
            if action == "output":
                self._pkg_output.setdefault(pkg, []).append(str(e.get("Output", "")))
            elif action == "fail":
                self._package_failed(pkg, e, report)
            return
        key = (pkg, test)
        if action == "run":
            self._tests.setdefault(key, _Test())
        elif action == "output":
            self._tests.setdefault(key, _Test()).output.append(str(e.get("Output", "")))
        elif action in ("pass", "fail", "skip"):
            self._finished(pkg, test, action, float(e.get("Elapsed") or 0.0), report, _stop(e.get("Time")))

    def _finished(self, pkg: str, test: str, action: str, elapsed: float, report: Report, stop: float | None = None) -> None:
        state = self._tests.pop((pkg, test), _Test())
        outcome = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]
        text = "".join(line for line in state.output if not _NOISE.match(line)).rstrip()
        parent, sep, _ = test.rpartition("/")
        if sep:  # a subtest: kept with its top-level test
            top = test.split("/", 1)[0]
            holder = self._tests.setdefault((pkg, top), _Test())
            holder.subtests.append({"description": test[len(top) + 1 :], "outcome": outcome, "duration": elapsed,
                                    "message": _message(text) if outcome != "passed" else None,
                                    "longrepr": text if outcome == "failed" else None})
            return
        if outcome == "failed":
            self._failed_tests.add(pkg)
            failed_subs = [s for s in state.subtests if s["outcome"] == "failed"]
            if not text and failed_subs:
                text = "\n".join(f"{s['description']}:\n{s['longrepr'] or ''}" for s in failed_subs)
        pkg_dir = self.rel_package(pkg)
        file, line = _location(text)
        record: dict[str, Any] = {
            "id": f"{pkg_dir}::{test}",
            "outcome": outcome,
            "duration": elapsed,
            "when": "call",
            "message": _test_message(text, state.subtests) if outcome != "passed" else None,
            "longrepr": text if outcome != "passed" else None,
            "file": os.path.normpath(os.path.join(pkg_dir, file)) if file else None,
            "line": line,
        }
        if stop is not None:
            record["stop"] = stop
        if state.subtests:
            record["subtests"] = state.subtests
        report.add_test(record)

    def _build_failed(self, import_path: str, report: Report) -> None:
        pkg = import_path.split(" ", 1)[0]
        if pkg in self._built_failed:
            return
        self._built_failed.add(pkg)
        lines = self._build_text.pop(pkg, None) or next(
            (v for k, v in list(self._build_text.items()) if k.split(" ", 1)[0] == pkg), []
        )
        self._build_current = None
        text = "\n".join(line for line in lines if line.strip())
        file, line = _location("\n".join(lines[1:]) if lines and lines[0].startswith("#") else text)
        report.add_build_error(self.rel_package(pkg), text or f"{pkg}: build failed", file=self.rel_file(file), line=line)

    def _package_failed(self, pkg: str, e: dict[str, Any], report: Report) -> None:
        output = "".join(self._pkg_output.pop(pkg, []))
        if e.get("FailedBuild") or "[build failed]" in output or "[setup failed]" in output:
            self._build_failed(str(e.get("FailedBuild") or pkg), report)
            return
        if pkg in self._failed_tests:
            return
        # the package failed with no failing test: a panic in TestMain, a timeout, a crash
        for (p, test), state in list(self._tests.items()):
            if p == pkg and "/" not in test:  # still running when the binary died: it is the culprit
                state.output.append(output)
                self._finished(pkg, test, "fail", float(e.get("Elapsed") or 0.0), report)
        if pkg not in self._failed_tests:
            text = output.strip()
            file, line = _location(text)
            report.add_test({"id": self.rel_package(pkg), "outcome": "error", "when": "package", "message": _message(text),
                             "longrepr": text, "file": os.path.join(self.rel_package(pkg), file) if file else None, "line": line})

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        if any(m in output for m in _MISSING_MODULE) and not report.tests:
            raise ToolCallError(
                "go test could not load a module: it is not in the module cache and cog runs Go offline "
                f"(GOPROXY=off). Run `go mod download` in {self.rel_root or 'the workspace'} (outside cog), "
                f"then run the tests again.\n{output[-2500:]}",
                code=ErrorCode.TOOL_ERROR,
            )
        # a build that failed without a closing line (cut short): still a build error
        for pkg, lines in list(self._build_text.items()):
            if any(_GO_WHERE.match(line) for line in lines):
                self._build_failed(pkg, report)
        if exit_code != 0 and not report.tests and not report.build_errors:
            raise ToolCallError(f"go test failed before running any test (exit {exit_code}):\n{output[-3000:]}",
                                code=ErrorCode.TOOL_ERROR)


def _stop(value: Any) -> float | None:
    """test2json's ``Time`` (RFC 3339 with nanoseconds) as a Unix timestamp."""
    if not isinstance(value, str):
        return None
    import datetime

    head, dot, frac = value.rstrip("Z").partition(".")
    try:
        moment = datetime.datetime.fromisoformat(head + (("." + frac[:6]) if dot else "")).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    return moment.timestamp()


def _location(text: str) -> tuple[str | None, int | None]:
    for line in text.splitlines():
        found = _GO_WHERE.match(line)
        if found:
            return found.group(1), int(found.group(2))
    return None, None


def _test_message(text: str, subtests: list[dict[str, Any]]) -> str | None:
    failed = [s for s in subtests if s["outcome"] == "failed"]
    if failed and not any(_GO_WHERE.match(x) for x in text.splitlines()[:1]):
        return f"{failed[0]['description']}: {failed[0]['message'] or ''}"
    return _message(text)


def _message(text: str) -> str | None:
    for line in text.splitlines():
        line = line.strip()
        if line:
            found = _GO_WHERE.match(line)
            return (line[found.end():] if found else line)[:500]
    return None
