"""The interpreter that runs a workspace's tests and where it was found (what
:mod:`workspace_tools.sandbox.python` finds and :mod:`workspace_tools.sandbox.python_binds` shows to the sandbox)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

FIX = "python -m venv .venv && .venv/bin/pip install -e . pytest"
#: environments a tool makes and keeps (its ``source``), and how a package gets into each: the
#: tool's own way, never ``pip install`` into it (the tool would undo it, or refuse the next sync)
MANAGED = {
    "hatch": "",  # said in ProjectPython.install_advice (hatch-test or another env)
    "tox": "add {package} to the deps of tox's {env} environment (tox.ini or [tool.tox]), then run `tox -e {env}` once",
    "nox": "install {package} in the nox session (session.install(\"{package}\")), then run `nox -s {env}` once",
    "poetry": "poetry add --group dev {package}",
    "pipenv": "pipenv install --dev {package}",
    "pdm": "pdm add -dG test {package}",
    "uv": "uv add --dev {package}",
    "conda": "conda install -n {env} {package} (or add it to environment.yml and run conda env update)",
}


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

    @property
    def whose(self) -> str:
        """Whose interpreter it is, in a few words, when it is not the project's."""
        return "cog's own Python" if self.fallback else "your python3 on PATH"

    def fallback_note(self) -> str:
        whose = self.whose
        return (
            "No project environment found (.venv, venv, $VIRTUAL_ENV, uv/poetry/pipenv/hatch/pdm/conda): pytest ran "
            f"with {whose} ({self.python}), not the project's; create one ({FIX}) or, with poetry, pipenv, hatch or "
            "pdm, install it (poetry install, pipenv install --dev …)"
        )

    @property
    def managed_by(self) -> str | None:
        """The tool that made and keeps the environment (hatch, tox, poetry …), None for one the
        person made (``.venv``) or none: a managed env is changed through its tool, never with pip."""
        return self.source if self.source in MANAGED else None

    def install_advice(self, package: str = "pytest") -> str:
        """How to get ``package`` into the environment that runs the tests: through the tool that
        manages it (its own settings), else pip into the person's own env, else a new ``.venv``."""
        tool = self.managed_by
        name = self.env.name if self.env is not None else ""
        if tool == "hatch" and name.startswith("hatch-test"):
            return (f"add {package} to Hatch's hatch-test environment ([tool.hatch.envs.hatch-test] "
                    "extra-dependencies in pyproject.toml), then run `hatch test` once: Hatch installs it there")
        if tool == "hatch":
            return (f"run `hatch test` once: Hatch makes its hatch-test environment, with {package}, and cog "
                    f"uses that (or add {package} to [tool.hatch.envs.{name or 'default'}] dependencies)")
        if tool is not None:
            return f"{MANAGED[tool].format(package=package, env=name)} (the environment is {tool}'s: not pip)"
        if self.fallback:
            return f"create the project's environment ({FIX})"
        return f"install it in the workspace's environment ({self.python} -m pip install {package})"

    def describe(self) -> str:
        return f"{self.python} ({self.source})"

    def as_details(self) -> dict[str, str | None]:
        """What a result's details say about it: which interpreter, where it came from, its env;
        when no project environment was found, ``note`` (the fallback note and why: renderers show
        it under the row whatever the outcome)."""
        out = {"python": self.python, "source": self.source, "env": str(self.env) if self.env is not None else None}
        if self.guessed:
            out["note"] = "; ".join([self.fallback_note(), *self.notes])
        return out
