"""The interpreter that runs a workspace's tests and where it was found (what
:mod:`workspace_tools.sandbox.python` finds and :mod:`workspace_tools.sandbox.python_binds` shows to the sandbox)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

FIX = "python -m venv .venv && .venv/bin/pip install -e . pytest"


@dataclass(frozen=True)
class ProjectPython:
    """The interpreter that runs the workspace's tests and where it was found."""

    #: the interpreter to run, absolute (an env's ``bin/python`` as found, not resolved)
    python: str
    #: where it came from: .venv | venv | pyvenv.cfg | tox | nox | uv | $VIRTUAL_ENV | $CONDA_PREFIX |
    #: poetry | pipenv | hatch | pdm | conda | PATH | cog
    source: str
    #: the environment's folder (for PATH and VIRTUAL_ENV), None for cog's own or a bare interpreter
    env: Path | None = None
    #: whether ``env`` came from the person or a host tool
    trusted_env: bool = False
    #: things people should read (a tool not asked, and why)
    notes: tuple[str, ...] = field(default=())

    @property
    def fallback(self) -> bool:
        """Only cog's own interpreter was found."""
        return self.source == "cog"

    @property
    def guessed(self) -> bool:
        """No project environment was found: the person's python3 on PATH, or cog's own."""
        return self.source in ("cog", "PATH")

    @property
    def real(self) -> str:
        """The interpreter's real path on the host (links followed)."""
        return os.path.realpath(self.python)

    def fallback_note(self) -> str:
        whose = "cog's own Python" if self.fallback else "your python3 on PATH"
        return (
            "No project environment found (.venv, venv, $VIRTUAL_ENV, uv/poetry/pipenv/hatch/pdm/conda): pytest ran "
            f"with {whose} ({self.python}), not the project's; create one ({FIX}) or, with poetry, pipenv, hatch or "
            "pdm, install it (poetry install, pipenv install --dev …)"
        )

    def describe(self) -> str:
        return f"{self.python} ({self.source})"

    def as_details(self) -> dict[str, str | None]:
        """What a result's details say about it: which interpreter, where it came from, its env."""
        return {"python": self.python, "source": self.source, "env": str(self.env) if self.env is not None else None}
