"""The one place a run starts, below every front end: :class:`Session` (see :mod:`cogcli.session.session`).

- :mod:`cogcli.session.session` — :class:`Session` (run, invoke a tool, threads, undo), the exit
  status of a run and of a direct call;
- :mod:`cogcli.session.factory` — the workspace tools and the model a session's settings make;
- :mod:`cogcli.session.project` — what each run gathers: the thread it continues, the instruction
  files, the model's context window.
"""

from __future__ import annotations

from cogcli.session.ends import call_exit_status, exit_status
from cogcli.session.session import RunNotStarted, Session, store_problem
from cogcli.session.factory import make_model, make_tools, test_env

__all__ = [
    "RunNotStarted",
    "Session",
    "call_exit_status",
    "exit_status",
    "test_env",
    "make_model",
    "make_tools",
    "store_problem",
]
