"""The checkers of one workspace for one session: what each said of each file last, and the check
before and after a change.

A file's problems are kept per checker with the hash of the bytes they were found in; a change to
a file whose bytes are still those reuses them as its "before", else the checkers run once before
the change. After it they run again and :func:`~workspace_tools.diagnostics.compare.compare` tells
what is new and what was fixed. Only the changed files' problems are compared (a project-wide
checker's verdict on other files is left out). A checker without a "before" (it timed out, failed)
is not compared: its problems would all look new.

Budgets: after a change a lint source gets :attr:`Checker.lint_budget` seconds, a type checker or a
build :attr:`Checker.types_budget`; one that ran over is killed, said once, and skipped after later
changes (the ``diagnostics`` tool still runs it, with the tool's own timeout).

Safety: a checker may run the project's code (an ESLint config, a mypy plugin, a Cargo build script,
a program from the project's environment). Nobody was asked to run code for an edit, so after a
change checkers run only in the sandbox (none where there is none: :data:`NO_SANDBOX`); the
``diagnostics`` tool declares that it runs code and is gated like ``run_tests``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cogcli.contract.details import Diagnostic, DiagnosticsDetails, SkippedSource
from cogcli.contract.details_readers import could_not_run
from workspace_tools.diagnostics.compare import LineMap, compare, line_map
from workspace_tools.diagnostics.sandboxed import run_source
from workspace_tools.diagnostics.servers import Servers
from workspace_tools.diagnostics.sources import SOURCES, Found, Source, project_root
from workspace_tools.sandbox.bwrap import SandboxMode
from workspace_tools.sandbox.environment import PassedEnv
from workspace_tools.sandbox.leftovers import Removed
from workspace_tools.workspace.paths import Workspace

#: why a checker did not run after a change where there is no sandbox: it may run the project's code
NO_SANDBOX = ("not run after changes without the sandbox (it may run the project's code); "
              "call diagnostics to run it, which asks first like run_tests")

#: files larger than this are not checked after a change
MAX_FILE_BYTES = 2_000_000


def _hash(data: bytes | None) -> str:
    return "" if data is None else hashlib.blake2b(data, digest_size=16).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() and path.stat().st_size <= MAX_FILE_BYTES else None
    except OSError:
        return None


@dataclass
class Job:
    """One checker over some files of one project."""

    source: Source
    root: Path
    found: Found
    files: list[Path]


@dataclass
class Verdict:
    """What the checkers said of some files: per checker, its problems, or why there are none."""

    problems: dict[str, list[Diagnostic]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    sandboxed: bool = False
    #: files a checker left with setuid/setgid bits or capabilities, whose privileges were removed
    removed: list[Removed] = field(default_factory=list)


@dataclass
class Before:
    """The changed files as they were, and the checkers' problems in them."""

    texts: dict[str, bytes | None]
    verdict: Verdict


class Checker:
    def __init__(self, workspace: Workspace, *, sandbox: SandboxMode = "auto", passed: PassedEnv | None = None,
                 off: Iterable[str] = (), lint_budget: float = 10.0, types_budget: float = 20.0) -> None:
        self.workspace = workspace
        self.sandbox: SandboxMode = sandbox
        self.passed = passed or PassedEnv()
        self.off = frozenset(off)
        self.lint_budget = lint_budget
        self.types_budget = types_budget
        #: (checker, file) -> (hash of the bytes checked, its problems in them)
        self._kept: dict[tuple[str, str], tuple[str, list[Diagnostic]]] = {}
        #: checkers skipped after changes, and why
        self._slow: dict[str, str] = {}
        self._found: dict[tuple[str, Path], Found | None] = {}
        #: checkers whose "could not run" the model has been told of (once a session each)
        self._told: set[str] = set()
        #: warm language servers answering after changes instead of a process (tsserver for tsc)
        self.servers = Servers(workspace, sandbox=sandbox, passed=self.passed)

    def close(self) -> None:
        """End the session's warm servers (``Tool.close`` of the tools over this checker)."""
        self.servers.close()

    def checked_files(self) -> list[str]:
        """The files checked so far in this session, in the order they were first checked."""
        return list(dict.fromkeys(rel for _, rel in self._kept))

    def kept_problems(self, files: list[Path]) -> dict[str, list[Diagnostic]]:
        """Per checker, what it said of ``files`` when they were last checked (files it never saw left out)."""
        out: dict[str, list[Diagnostic]] = {}
        for f in files:
            for (name, rel), (_, problems) in self._kept.items():
                if rel == self.rel(f):
                    out.setdefault(name, []).extend(problems)
        return out

    def first_told(self, skipped: Iterable[SkippedSource]) -> list[SkippedSource]:
        """The checkers in ``skipped`` that could not run (not turned off, not over budget: that one
        is said when it happens) and that the model was not told of yet; each is told once a session."""
        fresh = [s for s in skipped if could_not_run(s.why) and s.source not in self._told]
        self._told.update(s.source for s in fresh)
        return fresh

    def rel(self, path: Path) -> str:
        return self.workspace.relative(path)

    def _rel_of(self, root: Path):  # noqa: ANN202 (a parsers.Rel)
        def rel(name: str) -> str | None:
            full = Path(name) if Path(name).is_absolute() else root / name
            try:
                return full.resolve().relative_to(self.workspace.root).as_posix()
            except (ValueError, OSError):
                return None

        return rel

    def jobs(self, files: Iterable[Path], *, after_change: bool) -> tuple[list[Job], dict[str, str]]:
        """The checkers that apply to ``files``, grouped by project, and the ones skipped (with why)."""
        grouped: dict[tuple[str, Path], Job] = {}
        skipped: dict[str, str] = {}
        for path in files:
            for source in SOURCES:
                if not path.name.endswith(source.suffixes):
                    continue
                if source.name in self.off:
                    skipped[source.name] = "turned off (diagnostics_off)"
                    continue
                if after_change and source.name in self._slow:
                    skipped[source.name] = self._slow[source.name]
                    continue
                root = project_root(source, path, self.workspace.root)
                if root is None or not source.configured(root):
                    continue
                key = (source.name, root)
                if key not in self._found:
                    self._found[key] = source.find(self.workspace, root)
                found = self._found[key]
                if found is None:
                    continue  # not installed: not an error
                grouped.setdefault(key, Job(source, root, found, [])).files.append(path)
        return list(grouped.values()), skipped

    async def check(self, files: list[Path], *, after_change: bool, budget: float | None = None) -> Verdict:
        """Run the checkers on ``files`` (concurrently), keep what they said, return it."""
        import anyio

        jobs, skipped = self.jobs(files, after_change=after_change)
        verdict = Verdict(skipped=dict(skipped))
        wanted = {self.rel(f) for f in files}

        async def one(job: Job) -> None:
            limit = budget if budget is not None else (self.lint_budget if job.source.kind == "lint" else self.types_budget)
            texts = {self.rel(f): _read(f) for f in job.files}
            served = None
            if after_change and self.servers.serves(job.source, job.found, job.root):  # a warm server (servers.py)
                served = await self.servers.check(job.source, job.found, job.root, job.files, budget=limit, sandbox_only=True,
                                                  rel=self._rel_of(job.root))
            ran = served.ran if served is not None else await run_source(
                self.workspace, job.source, job.found, job.root, job.files, sandbox=self.sandbox, passed=self.passed,
                budget=limit, sandbox_only=after_change)
            verdict.sandboxed = verdict.sandboxed or ran.sandboxed
            verdict.removed += ran.removed
            name = job.source.name
            if ran.refused:
                verdict.skipped[name] = NO_SANDBOX
                return
            if ran.timed_out:
                why = f"took longer than its {limit:g} s budget; call diagnostics to run it"
                verdict.skipped[name] = why
                if after_change:
                    self._slow[name] = f"skipped after changes: it once {why}"
                return
            said = served.problems if served is not None else job.source.read(ran.output, self._rel_of(job.root), name)
            found = list({_same(d): d for d in said if d.file in wanted}.values())
            if not found and ran.exit_code not in (0, None) and not _clean_exit(job.source, ran.exit_code):
                last = next((line for line in reversed(ran.output.strip().splitlines()) if line.strip()), "")
                verdict.skipped[name] = f"could not check (exit {ran.exit_code}): {last[:200]}"
                return
            verdict.problems.setdefault(name, []).extend(found)
            for rel, data in texts.items():
                self._kept[(name, rel)] = (_hash(data), [d for d in found if d.file == rel])

        async with anyio.create_task_group() as group:
            for job in jobs:
                group.start_soon(one, job)
        return verdict

    async def before(self, files: list[Path]) -> Before:
        """The files as they are now and the checkers' problems in them: kept ones when the bytes are
        the same, else the checkers run once now."""
        texts = {self.rel(f): _read(f) for f in files}
        jobs, _ = self.jobs([f for f in files if f.is_file()], after_change=True)  # a file about to be made has none
        verdict = Verdict()
        missing: list[Path] = []
        for job in jobs:
            for f in job.files:
                kept = self._kept.get((job.source.name, self.rel(f)))
                if kept is not None and kept[0] == _hash(texts[self.rel(f)]):
                    verdict.problems.setdefault(job.source.name, []).extend(kept[1])
                elif f not in missing:
                    missing.append(f)
        if missing:
            fresh = await self.check(missing, after_change=True)
            for name, problems in fresh.problems.items():
                verdict.problems.setdefault(name, []).extend(problems)
            verdict.skipped.update(fresh.skipped)
            verdict.removed += fresh.removed
        return Before(texts=texts, verdict=verdict)

    async def after(self, before: Before, files: list[Path], renamed: dict[str, str] | None = None) -> DiagnosticsDetails:
        """Check ``files`` after the change and compare with ``before``."""
        started = time.perf_counter()
        names = renamed or {}
        now = [f for f in files if f.is_file()]
        verdict = await self.check(now, after_change=True)
        maps: dict[str, LineMap] = {}
        for rel, old in before.texts.items():
            new = _read(self.workspace.root / names.get(rel, rel))
            if old is not None and new is not None and old != new:
                maps[rel] = line_map(old.decode("utf-8", "replace").splitlines(), new.decode("utf-8", "replace").splitlines())
        details = DiagnosticsDetails(files=[self.rel(f) for f in now], sandbox="bwrap" if verdict.sandboxed else "none",
                                     privileges_removed=[r.as_dict() for r in (*before.verdict.removed, *verdict.removed)])
        skipped = {**verdict.skipped, **before.verdict.skipped}  # the first reason a checker stopped
        for name, after in verdict.problems.items():
            if name not in before.verdict.problems and name in skipped:
                continue  # no "before" to compare with: every problem would look new
            result = compare(before.verdict.problems.get(name, []), after, maps, names)
            details.new += result.new
            if not any(_unparsable(d) for d in result.new):  # a file that no longer parses hides its other problems
                details.fixed += result.fixed
            details.existing += len(result.kept)
            details.sources.append(name)
        details.skipped = [SkippedSource(source=name, why=why) for name, why in skipped.items() if name not in details.sources]
        details.duration_s = round(time.perf_counter() - started, 3)
        return details


def _same(d: Diagnostic) -> tuple[object, ...]:
    """One problem said twice (cargo checks a crate's library and its tests) is one."""
    return d.file, d.line, d.column, d.rule, d.message


#: the rules that say a file could not be parsed (ruff's problem without a code, mypy's, go vet's own)
SYNTAX_RULES = frozenset({"syntax-error", "syntax", "compile"})


def _unparsable(d: Diagnostic) -> bool:
    return d.rule in SYNTAX_RULES or (d.source == "tsc" and d.rule.startswith("TS1"))


def _clean_exit(source: Source, code: int) -> bool:
    """Exit codes that mean "problems found" rather than "could not run"."""
    return code == 1 or (source.name == "cargo-check" and code == 101) or (source.name in ("tsc", "go-vet") and code == 2)
