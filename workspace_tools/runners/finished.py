"""A finished run (one :class:`Section` per runner) as its readers need it: ``details`` for the
application, text for the model, a few words for the row, and the full report in a file when the
details would be too big. Knows no runner: everything comes from the shared report shape.

``details`` (JSON; the keys a client may rely on):

- ``outcome``: ``passed`` | ``failed`` | ``error`` | ``no-tests`` | ``build-failed`` (several
  sections: the worst; ``no-tests`` only when no section ran a test). Anything but ``passed`` is a
  failed test run (``cog tool run_tests`` exits 1).
- ``exit_code``: the runner's own exit code (several sections: the first that is not 0).
- ``counted``: False when cog could not read per-test results (a plain ``test_command``); then
  the counts below are absent and ``outcome`` comes from the exit code alone.
- ``passed``, ``failed``, ``skipped``, ``errors``, ``xfailed``, ``xpassed``: counts (build errors
  and collection errors count as ``errors``); ``warnings``; ``subtests`` {passed, failed, skipped};
  ``collected`` when the runner said. One number, one meaning: a test counts once (one whose
  subtest failed is failed), its subtests apart; ``summary`` says these counts in words (with what
  else the runner counted: ``1 deselected``) and ``runner_summary`` is the runner's own line
  (pytest's counts a failed subtest as a failed test, and its test as passed).
- ``failures``: up to :data:`FAILURES_KEPT` of ``{id, outcome, when, message, text, file, line}``
  (failed tests, errors, build errors; ``text`` is the runner's own failure text, its end kept).
- ``tests``: per-test records (see :mod:`.report`) up to :data:`TESTS_KEPT`; ``tests_total``;
  ``tests_dropped``; ``report_file`` (under ``.cog/``, relative to the workspace) holds every
  record when some were dropped, and then ``slowest`` lists the slowest tests, ``{id, duration}``.
- ``runner``, ``command``, ``sandbox``, ``duration_s``, ``notes``, ``output_tail``,
  ``output_dropped_bytes``; ``sections``: per runner ``{runner, root, command, outcome, exit_code,
  counts…, duration_s}``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from workspace_tools.runners.report import COUNT_KEYS, OUTCOME_MEANING, Section, counts_text, report_words, worst

#: per-test records kept in details (the rest go to the report file)
TESTS_KEPT = 500
#: failures kept in details, with their text cut to FAILURE_DETAIL_CHARS
FAILURES_KEPT = 100
FAILURE_DETAIL_CHARS = 4000
#: characters of one failure's text the model reads, and how many failures it reads with text
FAILURE_TEXT_CHARS = 1500
FAILURES_WITH_TEXT = 15
FAILURES_LISTED = 100
SLOWEST = 10
REPORTS_DIR = ".cog/test-reports"
REPORTS_KEPT = 10

PYTEST_EXIT_MEANING = {
    0: "all tests passed",
    1: "some tests failed",
    2: "the run was interrupted (collection errors or a test stopped it)",
    3: "pytest hit an internal error",
    4: "pytest was called wrongly (usage error)",
    5: "no tests were collected",
}


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _title(s: Section) -> str:
    return f"{s.runner} in {s.root}/" if s.root else s.runner


def _meaning(s: Section) -> str:
    if s.exit_code < 0:
        return f"{s.runner} was killed by {signal_name(s.exit_code)}"
    if s.runner == "pytest" and s.exit_code in PYTEST_EXIT_MEANING:
        return PYTEST_EXIT_MEANING[s.exit_code]
    if s.outcome == "failed" and not s.report.problems():  # a test script whose other commands failed
        return "it failed, though no test it counted did"
    return OUTCOME_MEANING.get(s.outcome, "ended with an unexpected exit code")


def _failure_entry(t: dict[str, Any]) -> dict[str, Any]:
    text = (t.get("longrepr") or t.get("message") or "").rstrip()
    if len(text) > FAILURE_DETAIL_CHARS:
        text = "…" + text[-FAILURE_DETAIL_CHARS:]
    return {"id": t["id"], "outcome": t["outcome"], "when": t.get("when"), "message": t.get("message"), "text": text,
            "file": t.get("file"), "line": t.get("line")}


def summary_words(sections: list[Section]) -> str:
    """``1 failed, 3 passed`` (or ``build failed``, ``exit 2, no counts``) for the row."""
    parts = []
    for s in sections:
        if not s.counted:
            words = "passed" if s.exit_code == 0 else f"{'error' if s.outcome == 'error' else 'failed'} (exit {s.exit_code}), no counts"
        elif s.outcome == "build-failed":
            words = "build failed" + (f", {counts_text(s.report.counts)}" if s.report.tests else "")
        else:
            words = report_words(s.report)
        parts.append(f"{s.runner}: {words}" if len(sections) > 1 else words)
    return "; ".join(parts)


def _short(text: str) -> str:
    text = text.rstrip()
    if len(text) > FAILURE_TEXT_CHARS:
        text = "…" + text[-FAILURE_TEXT_CHARS:]
    return "\n".join("    " + line for line in text.splitlines())


def _section_text(s: Section) -> list[str]:
    if not s.counted:
        verdict = "passed (exit 0)" if s.exit_code == 0 else (
            f"was killed by {signal_name(s.exit_code)}" if s.exit_code < 0 else
            f"{'could not run' if s.outcome == 'error' else 'failed'} (exit {s.exit_code})")
        return [
            f"`{s.command}` {verdict} in {s.duration:.2f} s. " + (s.report.notes[0] if s.report.notes else
            "cog cannot read per-test results from this command, so there are no counts: its exit code is the verdict."),
            *s.report.notes[1:],
            "Output (end):",
            s.output[-6000:],
        ]
    r = s.report
    counts = report_words(r)
    if r.build_errors:
        n = len(r.build_errors)
        counts = f"build failed ({n} target{'s' if n > 1 else ''})" + (f", {counts}" if r.tests else "")
    lines = [f"{_title(s)} ({s.selection}): {counts} in {s.duration:.2f} s — exit {s.exit_code}: {_meaning(s)}"]
    if s.outcome == "no-tests" and s.exit_code == 0:
        lines.append("No tests ran: check the paths and the name filter, or that the project has tests.")
    lines += r.notes
    problems = r.problems()
    for i, t in enumerate(problems[:FAILURES_LISTED]):
        word = "BUILD FAILED" if t.get("when") == "build" else ("ERROR" if t["outcome"] == "error" else "FAILED")
        head = f"{word} {t['id']}"
        if t["outcome"] == "error" and t.get("when") not in (None, "build", "call"):
            head += f" (in {t['when']})"
        if i < FAILURES_WITH_TEXT:
            lines += ["", head, _short(t.get("longrepr") or t.get("message") or "")]
        else:
            lines.append(f"{head} - {(t.get('message') or '')[:200]}")
    if len(problems) > FAILURES_LISTED:
        lines.append(f"… and {len(problems) - FAILURES_LISTED} more failing tests")
    if s.exit_code < 0 or s.outcome == "no-tests" or (s.exit_code != 0 and not problems):
        lines += ["", "Output (end):", s.output[-2000:]]
    return lines


def model_text(sections: list[Section], sandboxed: bool) -> str:
    blocks = ["\n".join(_section_text(s)) for s in sections]
    text = "\n\n".join([*dict.fromkeys(n for s in sections for n in s.report.headline), *blocks])
    if sandboxed:
        text += (
            "\n(ran in a sandbox: no network beyond loopback; writable: the workspace except .git/ and .cog/, "
            "/tmp and a throwaway $HOME)"
        )
    return text


def _section_summary(s: Section) -> dict[str, Any]:
    out: dict[str, Any] = {"runner": s.runner, "root": s.root, "command": s.command, "outcome": s.outcome,
                           "exit_code": s.exit_code, "duration_s": round(s.duration, 3), "counted": s.counted}
    if s.counted:
        out.update(s.report.counts)
        if s.report.summary:
            out["summary"], out["runner_summary"] = report_words(s.report), s.report.summary
    if s.report.environment:
        out["environment"] = s.report.environment
    return out


def details(sections: list[Section], sandbox: str, workspace_root: Path, *, force_file: bool = False) -> dict[str, Any]:
    counted = all(s.counted for s in sections)
    exit_code = next((s.exit_code for s in sections if s.exit_code != 0), 0)
    tests = [t for s in sections for t in s.report.tests]
    problems = [t for s in sections for t in s.report.problems()]
    d: dict[str, Any] = {
        "runner": sections[0].runner if len(sections) == 1 else "several",
        "outcome": worst([s.outcome for s in sections]),
        "exit_code": exit_code,
        "counted": counted,
        "command": " ; ".join(s.command for s in sections),
        "sandbox": sandbox,
        "duration_s": round(sum(s.duration for s in sections), 3),
    }
    if counted:
        for key in COUNT_KEYS:
            d[key] = sum(s.report.counts[key] for s in sections)
        d["warnings"] = sum(s.report.warnings for s in sections)
        d["subtests"] = {k: sum(s.report.subtests[k] for s in sections) for k in ("passed", "failed", "skipped")}
        known = [s.report.collected for s in sections]
        d["collected"] = sum(c for c in known if c is not None) if any(c is not None for c in known) else None
    d["failures"] = [_failure_entry(t) for t in problems[:FAILURES_KEPT]]
    d["failures_total"] = len(problems)
    d["tests_total"] = len(tests)
    d["tests"] = tests[:TESTS_KEPT]
    d["tests_dropped"] = max(0, len(tests) - TESTS_KEPT)
    if d["tests_dropped"]:  # every test's time is in ``tests`` otherwise
        d["slowest"] = [{"id": t["id"], "duration": t.get("duration") or 0.0}
                        for t in sorted(tests, key=lambda t: -(t.get("duration") or 0.0))[:SLOWEST]]
    summaries = [s.report.summary for s in sections if s.report.summary]
    if summaries:  # the counts above in words (the row's), and the runner's own line as it printed it
        d["summary"] = "; ".join(report_words(s.report) for s in sections if s.report.summary)
        d["runner_summary"] = "; ".join(summaries)
    environments = [s.report.environment for s in sections if s.report.environment]
    if environments:  # which Python environment ran: its source and path
        d["environment"] = environments[0]
    d["notes"] = [n for s in sections for n in (*s.report.headline, *s.report.notes)]
    d["sections"] = [_section_summary(s) for s in sections]
    d["output_tail"] = "\n".join(s.output for s in sections) if len(sections) > 1 else sections[0].output
    d["output_dropped_bytes"] = sum(s.output_dropped for s in sections)
    if d["tests_dropped"] or len(problems) > FAILURES_KEPT or force_file:
        d["report_file"] = write_report(workspace_root, d, tests, problems)
    return d


def write_report(workspace_root: Path, summary: dict[str, Any], tests: list[dict[str, Any]],
                 problems: list[dict[str, Any]]) -> str | None:
    """The whole report (every test) as JSON under ``.cog/test-reports/``; its path relative to the
    workspace, or None when it could not be written. Only the last :data:`REPORTS_KEPT` stay.
    The folders are opened (made) without following a link, and every file is written, renamed
    and removed in that folder's descriptor: a link at ``.cog`` or ``.cog/test-reports`` (which
    would lead outside the workspace) is refused with a warning naming it, and nothing is written."""
    import logging
    import re

    from workspace_tools.host import files as hostfiles

    root = Path(workspace_root).resolve()
    try:
        fd = hostfiles.open_dir(root / REPORTS_DIR, root, create=True)
    except hostfiles.LinkRefused as exc:
        logging.getLogger("cogcli").warning("the test report was not written: %s (remove the link)", exc)
        return None
    except OSError:
        return None
    try:
        hostfiles.exclude_from_git(root)  # says itself why not, when it cannot (a report is worth writing anyway)
        name = f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{int(time.time() * 1000) % 1000:03d}.json"
        full = {**{k: v for k, v in summary.items() if k not in ("tests", "failures", "report_file")},
                "failures": [_failure_entry(t) for t in problems], "tests": tests}
        tmp = name + ".tmp"
        out = hostfiles.open_at(fd, tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666, where=f"{REPORTS_DIR}/{tmp}")
        with os.fdopen(out, "wb") as f:
            f.write(json.dumps(full, ensure_ascii=False, default=str).encode("utf-8"))
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        for old in sorted(n for n in os.listdir(fd) if re.fullmatch(r"run-.*\.json", n))[:-REPORTS_KEPT]:
            try:
                os.unlink(old, dir_fd=fd)
            except FileNotFoundError:
                pass
        return f"{REPORTS_DIR}/{name}"
    except OSError:
        return None
    finally:
        os.close(fd)
