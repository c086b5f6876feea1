"""What the end of a run or a direct call means for whoever started it: its exit status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cogcli.contract.errors import ErrorCode
from cogcli.wire.exit_codes import EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE, run_exit_code

if TYPE_CHECKING:
    from cogcli.contract.result import ToolResult
    from cogcli.loop.runtime import RunResult

USAGE_CODES = frozenset({ErrorCode.TOOL_NOT_FOUND, ErrorCode.INVALID_ARGUMENTS})


def exit_status(result: RunResult) -> int:
    """What a finished run means for whoever started it (:func:`cogcli.wire.exit_codes.run_exit_code`)."""
    tests = result.tests or {}
    return run_exit_code(str(result.status), error_code=result.error_code,
                         tests_failed=tests.get("failed", 0) + tests.get("errors", 0), tests_error=result.tests_error is not None)


def call_exit_status(result: ToolResult) -> int:
    """What a direct call's end means: 0 ok (and its tests, if any, passed), 1 the call or its
    tests failed, 2 unknown tool or bad arguments."""
    from cogcli.contract.details_readers import read_test_report

    if result.error_code in USAGE_CODES:
        return EXIT_USAGE
    report = read_test_report(result.details)
    if result.error is not None or (report is not None and not report.ok) or tests_failed(result.details):
        return EXIT_TASK_FAILED
    return EXIT_OK


def tests_failed(details: Any) -> bool:
    """A test run whose ``outcome`` is anything but ``passed``: failing tests, a build that failed,
    no tests collected, a runner error, or a plain test command that exited non-zero."""
    return isinstance(details, dict) and details.get("outcome") not in (None, "passed")
