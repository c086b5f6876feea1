"""``cog batch report DIR``: what a batch's results say, as a table or JSON — also while it runs
(it reads ``results.jsonl``, which the batch appends to as each task ends)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cogcli.batch.output_folder import Layout, TaskResult, read_results
from cogcli.shown.visible import error_lines, visible

STATUSES = ("passed", "failed", "error", "aborted")
#: how many of the slowest tasks the report names
SLOWEST = 5


def summarize(results: dict[str, TaskResult]) -> dict[str, Any]:
    """The report of a batch's results (the last result of each id), as JSON-ready data."""
    rows = list(results.values())
    by_status = Counter(r.status for r in rows)
    tests: Counter[str] = Counter()
    tests_passing = 0
    with_tests = 0
    for r in rows:
        if r.tests:
            with_tests += 1
            tests.update({k: v for k, v in r.tests.items() if isinstance(v, int)})
            if not r.tests.get("failed") and not r.tests.get("errors"):
                tests_passing += 1
    known = [r.cost_usd for r in rows if r.cost_usd is not None]
    slowest = sorted(rows, key=lambda r: r.duration_s, reverse=True)[:SLOWEST]
    return {
        "tasks": len(rows),
        "by_status": {s: by_status.get(s, 0) for s in STATUSES},
        "tasks_with_tests": with_tests,
        "tasks_tests_passing": tests_passing,
        "tests": dict(tests),
        "steps": sum(r.steps for r in rows),
        "input_tokens": sum(r.input_tokens for r in rows),
        "output_tokens": sum(r.output_tokens for r in rows),
        "cost_usd": round(sum(known), 6) if known else None,
        "cost_unknown_tasks": len(rows) - len(known),
        "duration_s": round(sum(r.duration_s for r in rows), 3),
        "slowest": [{"id": r.id, "status": r.status, "duration_s": r.duration_s} for r in slowest],
        "results": [r.model_dump(mode="json") for r in sorted(rows, key=lambda r: r.id)],
    }


def money(cost: float | None, unknown: int = 0) -> str:
    if cost is None:
        return "cost unknown"
    text = f"${cost:,.4f}" if cost < 1 else f"${cost:,.2f}"
    return f"{text} (+{unknown} of unknown price)" if unknown else text


def table(report: dict[str, Any], out: Path) -> str:
    """The report as text for a person."""
    lines = [f"{visible(str(out))}: {report['tasks']} task{'s' if report['tasks'] != 1 else ''}"]
    if not report["tasks"]:
        return lines[0] + " finished so far"
    width = max(len(s) for s in STATUSES)
    lines += ["", f"  {'status':<{width}}  tasks"]
    for status in STATUSES:
        lines.append(f"  {status:<{width}}  {report['by_status'][status]:>5}")
    t = report["tests"]
    lines += [
        "",
        f"  tests     {report['tasks_tests_passing']} of {report['tasks_with_tests']} tasks passing "
        f"({t.get('passed', 0):,} passed, {t.get('failed', 0):,} failed, {t.get('errors', 0):,} errors)",
        f"  tokens    {report['input_tokens']:,} in, {report['output_tokens']:,} out · {report['steps']:,} steps",
        f"  cost      {money(report['cost_usd'], report['cost_unknown_tasks'])}",
        f"  time      {report['duration_s']:,.1f} s of task time",
        "",
        "  slowest",
    ]
    for row in report["slowest"]:
        lines.append(f"    {row['duration_s']:>8.1f} s  {row['status']:<{width}}  {visible(row['id'])}")
    failing = [r for r in report["results"] if r["status"] != "passed"]
    if failing:
        lines += ["", "  not passed"]
        for r in failing:
            why = error_lines(r.get("error") or "", lines=4, width=160)
            lines.append(f"    {r['status']:<{width}}  {visible(r['id'])}{'  ' + why[0] if why else ''}")
            lines += [f"    {'':<{width}}  {'':<{len(visible(r['id']))}}  {part}" for part in why[1:]]
    return "\n".join(lines)


def report(out: Path) -> dict[str, Any]:
    return summarize(read_results(Layout(out).results))
