"""How many background commands (``run_command(background=true)``) run, as the terminal's live
line says it: ``… Run tests  all · 3/10 · 3 passed · 1 in background``.

Read from the wire events alone (the renderer's rule), so ``cog render`` of a saved stream says the
same: each result of ``run_command``/``command_output``/``kill_command`` carries its job's state
(:class:`cogcli.contract.details.BackgroundJobDetails`); the newest word on each job counts.
"""

from __future__ import annotations

from cogcli.contract.details_readers import read_background_job  # noqa: F401 (re-exported)


def background_tail(running: int) -> str:
    """What the live line ends with: `` · 2 in background`` (nothing when none runs)."""
    return f" · {running} in background" if running > 0 else ""
