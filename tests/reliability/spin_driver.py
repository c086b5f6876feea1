"""``cog`` with one more built-in tool, ``spin``: a synchronous tool that burns CPU in a tight loop
and never looks at its abort signal (tests/reliability/test_rel_signals.py).

    python spin_driver.py edit --json --model replay:CASSETTE "…"

Everything else is the real ``cog`` entry point: argument parsing, settings, the signal handling,
the run loop, the renderers and the exit code.
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

import cogcli.commands.edit as edit_command
from cogcli.contract.tool import tool


class SpinParams(BaseModel):
    seconds: float = 600


def spin(params: SpinParams) -> str:
    import time

    end = time.monotonic() + params.seconds
    n = 0
    while time.monotonic() < end:  # CPU-bound, never checks an abort flag
        n += 1
    return f"spun {n}"


SPIN = tool(name="spin", description="Burn CPU.", parameters=SpinParams, execute=spin)
real_make_tools = edit_command.make_tools


def make_tools(settings: Any, **kwargs: Any) -> list[Any]:
    return [*real_make_tools(settings, **kwargs), SPIN]


edit_command.make_tools = make_tools  # type: ignore[assignment]

if __name__ == "__main__":
    from cogcli.cli import main

    sys.argv = ["cog", *sys.argv[1:]]
    main()
