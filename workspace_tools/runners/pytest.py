"""pytest, driven through cog's plugin (:mod:`workspace_tools.runners.pytest_plugin`): one JSON line per
finished test on an inherited pipe. It runs with the project's own Python
(:func:`workspace_tools.sandbox.python.find_project_python`: ``.venv``, ``venv``, uv, ``$VIRTUAL_ENV``, Poetry,
Hatch, PDM; else cog's own, and then the result's first line says so). The plugin checks that the
workspace's own packages (``src/<name>``, ``<name>/``) the tests import came from the workspace, not
from an installed copy: when one did not, the run is an ``error`` naming both places."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from cogcli.contract.errors import ErrorCode, ToolCallError
from workspace_tools.sandbox.python import FIX, PACKAGES_ENV, ProjectPython, environments, find_project_python, sandbox_paths, workspace_packages
from workspace_tools.sandbox.bwrap import NOT_STARTED
from workspace_tools.runners.pytest_plugin import PLUGIN_DIR, PLUGIN_MODULE, REPORT_FD_ENV
from workspace_tools.runners.base import Invocation, Runner, Selection
from workspace_tools.runners.report import Report, python_location, python_locations, runner_counts_differ
from workspace_tools.runners.finished import PYTEST_EXIT_MEANING  # declared once, with what a run's end means

#: the markers of a Python project whose tests pytest runs
MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py")


def workspace_python(root: Path, workspace_root: Path | None = None) -> str:
    """The project's own interpreter (:func:`workspace_tools.sandbox.python.find_project_python`), else
    the one running cog."""
    return find_project_python(root, workspace_root).python


class PytestRunner(Runner):
    name = "pytest"
    found_by = "pyproject.toml, setup.py, setup.cfg, pytest.ini, tox.ini or conftest.py (and when nothing else is found)"
    needs = "pytest in the project's virtualenv (.venv or venv), else in cog's own environment"
    no_tests_codes = (5,)
    refused_options = (
        "-p", "--junitxml", "--junit-xml", "--resultlog", "--result-log", "--report-log", "--debug",
        "--log-file", "--pastebin", "-c", "--config-file", "--rootdir", "--basetemp", "-o", "--override-ini",
        "--confcutdir", "--pdb", "--trace", "--pdbcls", "--html", "--json-report-file", "--cov-report",
    )

    #: run because the workspace holds no project cog knows (no marker of any runner): when it
    #: finds no test either, it is no Python project, and gets no Python advice
    no_project = False

    def __init__(self, workspace: Any, root: Path, base_argv: list[str] | None = None) -> None:
        super().__init__(workspace, root)
        #: a test_command that is pytest: its own options come first (``pytest -q -x``)
        self.base_args = base_argv or []

    def invocation(self, selection: Selection) -> Invocation:
        project = find_project_python(self.root, self.workspace.root)
        python = project.python
        pythonpath = os.pathsep.join(p for p in (str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")) if p)
        args = [*self.base_args, *selection.args, *selection.paths]
        if selection.keyword is not None:
            args += ["-k", selection.keyword]
        self.python = python
        self.project = project
        shown, self.interpreter_notes = sandbox_paths(project, self.workspace.root)
        envs, env_notes = environments(project, self.workspace.root)
        self.interpreter_notes += env_notes
        packages = workspace_packages([self.root, self.workspace.root])
        return Invocation(
            argv=[python, "-m", "pytest", "-p", PLUGIN_MODULE, *args],
            env={"PYTHONPATH": pythonpath, PACKAGES_ENV: json.dumps({"packages": packages})},
            report_fd_env=REPORT_FD_ENV,
            readable=[PLUGIN_DIR, Path(sys.prefix), Path(sys.base_prefix), *shown],
            environments=envs,
        )

    def on_event(self, event: dict[str, Any], report: Report) -> None:
        kind = event.get("event")
        if kind == "start":
            report.started = True
            # pytest's ids are relative to its rootdir, which an ini file above the folder may move
            rootdir = event.get("rootdir")
            if isinstance(rootdir, str):
                try:
                    rel = Path(rootdir).resolve().relative_to(self.workspace.root).as_posix()
                except ValueError:
                    rel = None
                if rel is not None:
                    self.id_prefix = "" if rel == "." else rel
        elif kind == "collected":
            report.collected = event.get("count")
        elif kind == "warning":
            report.warnings += 1
        elif kind == "finish":
            report.warnings = max(report.warnings, int(event.get("warnings") or 0))
            summary = event.get("summary")
            if isinstance(summary, str) and summary and len(summary) < 1000:
                report.summary = summary
        elif kind == "foreign_package":
            self._foreign(event, report)
        elif kind in ("test", "collect_error"):
            longrepr = event.get("longrepr")
            raw_id = str(event.get("id"))
            prefix = getattr(self, "id_prefix", None)
            test_id = self.test_id(raw_id) if prefix is None else (f"{prefix}/{raw_id}" if prefix else raw_id)
            file: str | None = None
            line: int | None = None
            crash: tuple[str | None, int | None] = (None, None)
            if event.get("outcome") in ("failed", "error"):
                file, line, crash = self._failure_location(longrepr, test_id.split("::", 1)[0])
            record = {
                "id": test_id,
                "outcome": str(event.get("outcome")),
                "duration": event.get("duration", 0.0),
                "when": event.get("when"),
                "message": event.get("message"),
                "longrepr": longrepr,
                "file": file,
                "line": line,
                "stop": event.get("stop"),
            }
            if crash[0] is not None and crash != (file, line):  # where it raised, deeper than the test's own line
                record["crash_file"], record["crash_line"] = crash
            if event.get("subtests"):
                record["subtests"] = event["subtests"]
            report.add_test(record)

    def _failure_location(self, longrepr: str | None, test_file: str) -> tuple[str, int | None, tuple[str | None, int | None]]:
        """Where a failure is shown: the deepest line in the test's own file (the test's line
        that failed, as pytest's summary points at it), else the deepest frame; and the deepest
        frame itself (where it raised), each relative to the workspace."""
        frames = [(self.rel_file(path), line) for path, line in python_locations(longrepr)]
        if not frames:
            return test_file, None, (None, None)
        deepest = frames[-1]
        own = [frame for frame in frames if frame[0] == test_file]
        file, line = own[-1] if own else deepest
        return file or test_file, line, deepest

    def _foreign(self, event: dict[str, Any], report: Report) -> None:
        """A workspace package the tests imported came from somewhere else: an error record (the
        section's outcome is ``error``) and the result's first line."""
        name = str(event.get("package") or "?")
        shown = self.rel_file(str(event.get("workspace_path") or "")) or str(event.get("workspace_path"))
        elsewhere = str(event.get("imported_from") or "?")
        python = getattr(self, "python", "python")
        project = getattr(self, "project", None)
        fix = (f"create the project's environment and install it there editable ({FIX})" if project is not None and project.fallback
               else f"install the project editable through {project.managed_by} (it installs the project itself: recreate "
               "or sync its environment)" if project is not None and project.managed_by
               else f"install the project into its environment in editable mode ({python} -m pip install -e .)")
        if event.get("stopped"):
            message = (f"the tests import {name} from {elsewhere}, not from the workspace's {shown}/: they would test "
                       "another copy of the code, so they were not run")
        else:
            message = (f"the tests imported {name} from {elsewhere}, not from the workspace's {shown}/: they ran "
                       "against another copy of the code, so their outcomes say nothing about the workspace's")
        report.headline.append(f"ERROR: {message}. Fix: {fix}, then run the tests again.")
        report.add_test({
            "id": shown, "outcome": "error", "when": "collect", "check": "workspace-package", "message": message,
            "longrepr": f"{message}.\n  the workspace's {name}: {event.get('workspace_path')}\n  imported instead: "
                        f"{elsewhere}\nFix: {fix}.",
            "file": None, "line": None, "duration": 0.0,
        })

    def finish(self, exit_code: int, report: Report, output: str) -> None:
        python = getattr(self, "python", "python")
        project: ProjectPython | None = getattr(self, "project", None)
        no_project = self.no_project and not report.tests and exit_code in (0, 5)
        if project is not None and project.guessed and not no_project:
            report.headline.insert(0, project.fallback_note())
        if project is not None:
            report.notes += project.notes
            report.environment = project.as_details()
            if no_project:  # no Python project and no test: no Python advice either
                report.environment.pop("note", None)
        if runner_counts_differ(report):
            report.notes.append(f"pytest's own summary says “{report.summary}”: it counts each failed subtest as a failed "
                                "test too; cog counts each test once (one with a failed subtest failed), its subtests apart.")
        if not report.started and exit_code != 0:
            message = _not_started(python, exit_code, output, project, getattr(self, "interpreter_notes", []))
            if project is not None and project.guessed and NOT_STARTED not in output:
                message = f"{project.fallback_note()}.\n{message}"  # the likely why, first
            for note in getattr(self, "interpreter_notes", []):
                message += "\n" + note
            raise ToolCallError(message, code=ErrorCode.TOOL_ERROR)
        if exit_code in (3, 4):
            raise ToolCallError(
                f"pytest exit {exit_code}: {PYTEST_EXIT_MEANING[exit_code]}\n{output[-3000:]}", code=ErrorCode.TOOL_ERROR
            )
        collect_errors = [t for t in report.tests if t.get("when") == "collect" and t["outcome"] == "error"
                          and t.get("check") != "workspace-package"]
        if collect_errors:
            not_run = report.collected or 0
            where = []
            for t in collect_errors:
                f, line = python_location(t.get("longrepr"))
                if f:
                    t["file"], t["line"] = self.rel_file(f), line
                where.append(f"{t['id']}" + (f" (line {line})" if line else ""))
            n = len(collect_errors)
            report.notes.append(
                f"pytest stopped at {n} collection error{'s' if n > 1 else ''} in {', '.join(where)}: "
                + (f"the {not_run} tests collected elsewhere did not run. " if not_run and exit_code == 2 else "")
                + "Fix the import or syntax error first (or pass args=['--continue-on-collection-errors'] to run the rest)."
            )
        elif exit_code == 5 and no_project:
            report.notes.append(
                "No tests found: the workspace holds no project cog knows (pyproject.toml, setup.py, go.mod, Cargo.toml, "
                "package.json …) and pytest found no test_*.py files. Add tests, or name the command that runs them "
                "(test_command in cog.toml, or --test-command)."
            )
        elif exit_code == 5:
            report.notes.append(
                "Nothing matched: check the paths and the -k expression, or the test file names (test_*.py)."
            )


_CONFTEST = re.compile(r"^(ImportError while loading conftest|Error while loading conftest|ImportError while loading plugin|.*Error while loading plugin)", re.M)


def _not_started(python: str, exit_code: int, output: str, project: ProjectPython | None = None,
                 notes: list[str] | None = None) -> str:
    """pytest ended before the plugin said hello: say why, the real error first."""
    tail = output[-3000:]
    if NOT_STARTED in output:  # the interpreter itself could not start in the sandbox
        where = f" ({project.source}{', ' + str(project.env) if project.env else ''})" if project is not None else ""
        why = " ".join(notes or []) or "its folder (or the environment it belongs to) is not shown inside the sandbox."
        return (f"The project's Python {python}{where} could not start in the test sandbox: {why} Fix: make the "
                f"environment a real folder in the workspace ({FIX}), or, for an environment of yours elsewhere, check "
                "that it is a working virtualenv (its bin/python runs) outside ~/.ssh, ~/.config and the like; or run "
                f"with --sandbox off if you trust the project's tests.\n{tail}")
    if "No module named pytest" in output:
        advice = project.install_advice("pytest") if project is not None else f"install it ({python} -m pip install pytest)"
        return f"pytest is not installed for {python}: {advice}, then run the tests again.\n{tail}"
    found = _CONFTEST.search(output)
    if found:
        text = output[found.start():].strip()
        return f"pytest could not start: {text[:3000]}\n(exit {exit_code}; fix that file and run the tests again)"
    if "usage:" in output or "error: unrecognized arguments" in output:
        return f"pytest refused its arguments (exit {exit_code}):\n{tail}"
    return f"pytest ended before running any test (exit {exit_code}, with {python}):\n{tail}"
