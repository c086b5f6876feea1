"""``/jobs`` in ``cog chat``: the session's background commands (id, state, age, bytes printed,
the command); ``/jobs kill ID`` ends one and everything it started."""

from __future__ import annotations

from typing import Any


def jobs_command(session: Any, argument: str) -> str:
    """What ``/jobs ARGUMENT`` prints."""
    from cogcli.contract.errors import CogError
    from cogcli.session.background import job_rows, jobs_text, kill_job
    from cogcli.shown.visible import visible

    words = argument.split()
    if not words:
        return jobs_text(job_rows(session))
    if words[0] == "kill" and len(words) == 2:
        try:
            row = kill_job(session, words[1])
        except CogError as exc:
            return visible(exc.message, one_line=True)
        return f"{row.id} {row.state()}: {visible(row.command, one_line=True)}"
    return f"unknown /jobs argument {visible(argument, one_line=True)!r}: /jobs lists them, /jobs kill ID ends one"
