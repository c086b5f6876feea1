"""What ``cog`` exits with, so CI can tell a task's outcome from its exit code alone.

0 the task is done (and the last test run, if any, passed); 1 the agent finished but a tool or a
test failed, or the task was not done; 2 usage or configuration error; 130 interrupted (Ctrl-C);
143 terminated (SIGTERM).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_TASK_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def run_exit_code(status: str | None, *, error_code: str | None, tests_failed: int, tests_error: bool) -> int:
    """What a run that ended with ``status`` exits with — the one rule, read from a
    :class:`~cogcli.loop.runtime.RunResult` (:func:`cogcli.session.exit_status`) or from a stream's
    ``finish`` event (:meth:`cogcli.render.summary.RunSummary.exit_code`): 0 completed and the last
    test run (if any) passed; 1 the task failed (an error, the step limit, refused calls, failing
    or unfinished tests); 2 the model provider refused the configuration; 130 aborted."""
    if status == "aborted":
        return EXIT_INTERRUPTED
    if status == "error" and error_code == "MODEL_CONFIG_ERROR":
        return EXIT_USAGE
    if status != "completed" or tests_error or tests_failed > 0:
        return EXIT_TASK_FAILED
    return EXIT_OK
