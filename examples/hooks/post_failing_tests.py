#!/usr/bin/env python3
"""A PostToolUse hook that posts the names of failing tests somewhere — reading cog's ``details``.

cog gives a hook what the tool gave the application, not only the text the model read: for
run_tests, ``details`` holds the counts and each failure (``details.failures``: id, file, line,
message). This hook posts one JSON message per failing test run to a webhook (Slack, Mattermost,
Discord, a CI bot: anything that takes a JSON POST):

    {"text": "2 failing tests in calc (thread 0f3…): tests/test_ops.py::test_add, …",
     "failing": [{"id": …, "file": …, "line": …, "message": …}], "passed": 4, "failed": 2, …}

    # ~/.config/cog/config.toml
    [[hooks.PostToolUse]]
    matcher = "run_tests"
    command = "python3 ~/cog-hooks/post_failing_tests.py"
    pass_env = ["FAILING_TESTS_WEBHOOK"]   # named like a credential: cog passes it to this hook only

Where it posts: ``$FAILING_TESTS_WEBHOOK`` (a URL), else it appends the message as a line to
``$FAILING_TESTS_LOG`` (default ``~/.local/state/cog/failing-tests.jsonl``). A passing run
posts nothing. A post that fails is a warning (exit 1): cog logs it and the run goes on.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

MAX_NAMES = 20


def failing(details: dict) -> list[dict]:
    """The failing tests, from ``details.failures`` (else from ``details.tests``)."""
    found = details.get("failures")
    if not isinstance(found, list):
        found = [t for t in details.get("tests") or [] if isinstance(t, dict) and t.get("outcome") in ("failed", "error")]
    return [{k: t.get(k) for k in ("id", "file", "line", "message")} for t in found if isinstance(t, dict)]


def message(event: dict, details: dict, tests: list[dict]) -> dict:
    total = details.get("failures_total") or len(tests)
    project = os.path.basename(event.get("cwd") or os.getcwd())
    names = ", ".join(t["id"] for t in tests[:MAX_NAMES]) + (f" and {total - MAX_NAMES} more" if total > MAX_NAMES else "")
    return {
        "text": f"{total} failing test{'s' if total != 1 else ''} in {project} (thread {event.get('session_id')}): {names}",
        "failing": tests,
        "passed": details.get("passed"),
        "failed": details.get("failed"),
        "errors": details.get("errors"),
        "outcome": details.get("outcome"),
        "session_id": event.get("session_id"),
    }


def main() -> int:
    event = json.load(sys.stdin)
    details = event.get("details")
    if event.get("hook_event_name") != "PostToolUse" or not isinstance(details, dict):
        return 0  # not a test run's result (or the run was refused before it ran)
    tests = failing(details)
    if not tests and details.get("outcome") in (None, "passed"):
        return 0
    body = message(event, details, tests)
    url = os.environ.get("FAILING_TESTS_WEBHOOK", "").strip()
    if url:
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except OSError as exc:
            print(f"post_failing_tests: posting to the webhook failed: {exc}", file=sys.stderr)
            return 1
        return 0
    log = os.environ.get("FAILING_TESTS_LOG") or os.path.expanduser("~/.local/state/cog/failing-tests.jsonl")
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(body) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
