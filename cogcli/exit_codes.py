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
