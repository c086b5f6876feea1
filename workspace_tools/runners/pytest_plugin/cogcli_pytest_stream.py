"""pytest plugin of cogcli's ``run_tests``: one JSON line per finished test, written to a pipe as it finishes.

Loaded with ``-p cogcli_pytest_stream`` (this directory on ``PYTHONPATH``) into the workspace's
own pytest, where cogcli is not installed: this file uses the standard library and pytest only.
It does nothing unless ``COGCLI_PYTEST_REPORT_FD`` names an inherited, writable fd, and under
pytest-xdist it runs only on the controller (which re-fires every worker's reports as they arrive).

Each line is one JSON object, written with one ``os.write`` loop (no buffering):

- ``{"event": "start", "pytest": "9.2.0", "rootdir": "…", "pid": 123}``
- ``{"event": "collected", "count": 12}``
- ``{"event": "test", "id": "tests/test_a.py::test_x", "outcome": "passed", "duration": 0.01,
  "when": "call", "message": null, "longrepr": null, "stop": 1700000000.0, "subtests": []}``
  outcome is passed | failed | skipped | error | xfailed | xpassed; it combines the setup,
  call and teardown reports (a test has finished at its teardown report; a setup failure or
  skip counts) and pytest 9 subtests (a failed subtest fails its test).
- ``{"event": "collect_error", "id": "tests/test_b.py", "outcome": "error", "message": …, "longrepr": …}``
- ``{"event": "foreign_package", "package": "iniconfig", "workspace_path": "/ws/src/iniconfig",
  "imported_from": "/venv/…/site-packages/iniconfig/__init__.py", "stopped": true}``: a package of the
  workspace's own (``COGCLI_WORKSPACE_PACKAGES``: JSON ``{"packages": {name: [folders]}}``, set by the
  runner) was imported, by the time the tests start or the session ends, from somewhere else (an
  installed copy): the tests would not test the workspace's code. Found before the tests start, the
  run stops there (``stopped``); under xdist each worker's finding reaches the controller at its end.
- ``{"event": "finish", "exitstatus": 1, "warnings": 2, "summary": "1 failed, 2 passed"}`` (warnings: how
  many pytest recorded; summary: pytest's own summary words, None when its reporter has none)
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import pytest

REPORT_FD_ENV = "COGCLI_PYTEST_REPORT_FD"
PACKAGES_ENV = "COGCLI_WORKSPACE_PACKAGES"
#: the key of an xdist worker's findings in its ``workeroutput``
WORKER_KEY = "cogcli_foreign_packages"
#: a failure's text is cut to its last this many characters (the end holds the assertion and location)
MAX_LONGREPR = 20_000


class _Writer:
    """Writes whole lines to the fd; stops quietly (never fails the test run) if the reader is gone."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pid = os.getpid()
        self.broken = False

    def emit(self, obj: dict[str, Any]) -> None:
        # a test that forks gets a copy of this plugin: only the pytest process writes
        if self.broken or os.getpid() != self.pid:
            return
        data = (json.dumps(obj, ensure_ascii=False, default=str) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError:
            self.broken = True

    def close(self) -> None:
        if os.getpid() == self.pid:
            try:
                os.close(self.fd)
            except OSError:
                pass


def _text(report: Any) -> str | None:
    if not getattr(report, "longrepr", None):
        return None
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, lineno, reason)
        text = str(longrepr[2])
    else:
        try:
            text = report.longreprtext
        except Exception:
            text = str(longrepr)
    return text[-MAX_LONGREPR:]


def _message(report: Any) -> str | None:
    """The one-line reason: the crash message of a failure, the reason of a skip."""
    longrepr = getattr(report, "longrepr", None)
    if not longrepr:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if message:
        return str(message)[:2000]
    lines = [line for line in str(longrepr).splitlines() if line.strip()]
    return lines[-1][:2000] if lines else None


def _is_subtest(report: Any) -> bool:
    return type(report).__name__ == "SubtestReport"


def _subtest_description(report: Any) -> str:
    try:
        return report._sub_test_description().strip()
    except Exception:
        return ""


def _workspace_packages() -> dict[str, list[str]]:
    """The workspace's own top-level packages and their folders, as the runner passed them."""
    try:
        data = json.loads(os.environ.get(PACKAGES_ENV) or "{}")
    except ValueError:
        return {}
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict):
        return {}
    return {str(name): [str(p) for p in paths if isinstance(p, str)]
            for name, paths in packages.items() if isinstance(paths, list)}


def _module_files(module: Any) -> list[str]:
    where = getattr(module, "__file__", None)
    if isinstance(where, str) and where:
        return [where]
    try:
        return [str(p) for p in getattr(module, "__path__", None) or ()]  # a namespace package
    except Exception:
        return []


def _inside(path: str, folder: str) -> bool:
    here, top = os.path.realpath(path), os.path.realpath(folder)
    return here == top or here.startswith(top.rstrip(os.sep) + os.sep)


def foreign_packages(packages: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The workspace's packages that are imported (in ``sys.modules``) from outside their folders."""
    found = []
    for name, folders in packages.items():
        module = sys.modules.get(name)
        if module is None or not folders:
            continue
        files = _module_files(module)
        if not files or any(_inside(f, d) for f in files for d in folders):
            continue
        found.append({"event": "foreign_package", "id": name, "package": name, "workspace_path": folders[0],
                      "imported_from": os.path.realpath(files[0]), "outcome": "error"})
    return found


class _WorkerCheck:
    """On an xdist worker: its findings go to the controller with the worker's output."""

    def __init__(self, config: Any, packages: dict[str, list[str]]) -> None:
        self.config = config
        self.packages = packages

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        found = foreign_packages(self.packages)
        if found:
            self.config.workeroutput[WORKER_KEY] = found


class _Pending:
    __slots__ = ("setup", "call", "teardown", "subtests", "duration")

    def __init__(self) -> None:
        self.setup: Any = None
        self.call: Any = None
        self.teardown: Any = None
        self.subtests: list[dict[str, Any]] = []
        self.duration = 0.0


def _combine(p: _Pending) -> tuple[str, str, Any]:
    """(outcome, the phase that decided it, the report whose text explains it)."""
    if p.setup is not None and p.setup.failed:
        return "error", "setup", p.setup
    if p.setup is not None and p.setup.skipped:
        return ("xfailed" if hasattr(p.setup, "wasxfail") else "skipped"), "setup", p.setup
    outcome, when, source = "passed", "call", p.call
    call = p.call
    if call is not None:
        if hasattr(call, "wasxfail"):
            outcome = {"skipped": "xfailed", "passed": "xpassed"}.get(call.outcome, call.outcome)
        else:
            outcome = call.outcome
    failed_subtests = [s for s in p.subtests if s["outcome"] == "failed"]
    if outcome == "passed" and failed_subtests:
        outcome = "failed"
    if p.teardown is not None and p.teardown.failed and outcome != "failed":
        return "error", "teardown", p.teardown
    return outcome, when, source


class CogStream:
    """Registered on the controller only; turns pytest's reports into JSON lines."""

    def __init__(self, writer: _Writer, packages: dict[str, list[str]] | None = None) -> None:
        self.writer = writer
        self.packages = packages or {}
        self.foreign_sent: set[str] = set()
        self.pending: dict[str, _Pending] = {}
        self.collect_errors: set[str] = set()
        self.collected_sent = False
        self.warnings = 0

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str, location: Any) -> None:
        self.warnings += 1

    # -- collection -----------------------------------------------------------------------

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            nodeid = report.nodeid or "<collection>"
            if nodeid in self.collect_errors:  # every xdist worker reports the same error
                return
            self.collect_errors.add(nodeid)
            self.writer.emit(
                {
                    "event": "collect_error",
                    "id": nodeid,
                    "outcome": "error",
                    "when": "collect",
                    "message": _message(report),
                    "longrepr": _text(report),
                    "stop": time.time(),
                }
            )
        elif report.skipped and report.nodeid and report.nodeid not in self.collect_errors:
            # a module skipped as a whole (pytest.skip(allow_module_level=True))
            self.collect_errors.add(report.nodeid)
            self.writer.emit(
                {
                    "event": "test",
                    "id": report.nodeid,
                    "outcome": "skipped",
                    "when": "collect",
                    "duration": 0.0,
                    "message": _message(report),
                    "longrepr": _text(report),
                    "stop": time.time(),
                    "subtests": [],
                }
            )

    def pytest_collection_finish(self, session: Any) -> None:
        self._collected(len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Any) -> None:
        self._collected(len(ids))

    def _collected(self, count: int) -> None:
        if not self.collected_sent:
            self.collected_sent = True
            self.writer.emit({"event": "collected", "count": count})

    # -- running ----------------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: Any) -> None:
        pending = self.pending.setdefault(report.nodeid, _Pending())
        if _is_subtest(report):
            pending.subtests.append(
                {
                    "description": _subtest_description(report),
                    "outcome": report.outcome,
                    "duration": getattr(report, "duration", 0.0),
                    "message": _message(report),
                    "longrepr": _text(report) if report.failed else None,
                }
            )
            return
        pending.duration += getattr(report, "duration", 0.0) or 0.0
        setattr(pending, report.when, report)
        if report.when != "teardown":
            return
        del self.pending[report.nodeid]
        outcome, when, source = _combine(pending)
        message = _message(source) if source is not None else None
        longrepr = _text(source) if source is not None and outcome not in ("passed", "xpassed") else None
        failed_subtests = [s for s in pending.subtests if s["outcome"] == "failed"]
        # the test itself did not raise (pytest may already have marked it "contains N failed subtests")
        if outcome == "failed" and failed_subtests and (
            source is None or source.passed or isinstance(getattr(source, "longrepr", None), str)
        ):
            # each failed subtest named as pytest's summary names it: SUBFAILED(n=2) - AssertionError: …
            named = [f"SUBFAILED{s['description'] or '(?)'} - {s['message'] or 'failed'}" for s in failed_subtests]
            message = "; ".join(named[:3]) + (f"; and {len(named) - 3} more failed subtests" if len(named) > 3 else "")
            longrepr = "\n\n".join(
                f"SUBFAILED{s['description'] or '(?)'}:\n{s['longrepr'] or s['message'] or ''}" for s in failed_subtests
            )[-MAX_LONGREPR:]
        if pending.teardown is not None and pending.teardown.failed and when != "teardown":
            # failed in the call and again in teardown: keep both texts
            longrepr = ((longrepr or "") + "\n\n[teardown] " + (_text(pending.teardown) or ""))[-MAX_LONGREPR:]
        self.writer.emit(
            {
                "event": "test",
                "id": report.nodeid,
                "outcome": outcome,
                "when": when,
                "duration": round(pending.duration, 6),
                "message": message,
                "longrepr": longrepr,
                "stop": getattr(report, "stop", None) or time.time(),
                "subtests": pending.subtests,
            }
        )

    # -- the workspace's own packages, imported from elsewhere -----------------------------------

    def _report_foreign(self, found: list[dict[str, Any]], stopped: bool) -> list[str]:
        sent = []
        for event in found:
            if event["package"] not in self.foreign_sent:
                self.foreign_sent.add(event["package"])
                self.writer.emit({**event, "stopped": stopped, "stop": time.time()})
                sent.append(event["package"])
        return sent

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> None:
        sent = self._report_foreign(foreign_packages(self.packages), stopped=True)
        if sent:
            raise session.Interrupted(
                f"the workspace's {', '.join(sent)} imported from an installed copy, not the workspace: "
                "install the project editable (pip install -e .) into the environment that runs the tests"
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        found = output.get(WORKER_KEY) if isinstance(output, dict) else None
        if isinstance(found, list):
            self._report_foreign([e for e in found if isinstance(e, dict) and "package" in e], stopped=False)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        self._report_foreign(foreign_packages(self.packages), stopped=False)
        self.writer.emit({"event": "finish", "exitstatus": int(exitstatus), "warnings": self.warnings,
                          "summary": _summary_line(session.config)})


def _summary_line(config: Any) -> str | None:
    """pytest's own summary words (``9 failed, 15 passed, 46 subtests passed``), as its last line
    says them: its terminal reporter's, so plugins' categories count as pytest counts them."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    try:
        parts, _ = reporter.build_summary_stats_line()
        return ", ".join(text for text, _markup in parts) or None
    except Exception:  # an older or replaced terminal reporter: cog's own counts are used
        return None


def pytest_configure(config: Any) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller streams
        packages = _workspace_packages()
        if packages and hasattr(config, "workeroutput"):
            config.pluginmanager.register(_WorkerCheck(config, packages), "cogcli-worker-check")
        return
    # taken out of the environment: the tests' own subprocesses (a nested pytest) must not write to it
    raw = os.environ.pop(REPORT_FD_ENV, None)
    if not raw:
        return
    try:
        fd = int(raw)
        os.fstat(fd)
    except (ValueError, OSError):
        return
    try:
        os.set_inheritable(fd, False)  # tests' subprocesses do not need it
    except OSError:
        pass
    writer = _Writer(fd)
    config.pluginmanager.register(CogStream(writer, _workspace_packages()), "cogcli-stream")
    config._cogcli_stream_writer = writer
    writer.emit({"event": "start", "pytest": pytest.__version__, "rootdir": str(config.rootpath), "pid": os.getpid()})


def pytest_unconfigure(config: Any) -> None:
    writer = getattr(config, "_cogcli_stream_writer", None)
    if writer is not None:
        writer.close()
