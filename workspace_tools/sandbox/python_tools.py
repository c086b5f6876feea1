"""The person's own Python tools, asked where a project's environment is: declared once, here.

Each :class:`EnvTool` says when a project uses the tool (its lock or settings file), which
workspace files would make the tool run workspace code or installs on the host (then it is not
asked, and a note says so), the command that answers (run with the person's program only:
:func:`~workspace_tools.host.programs.host_program`, never a workspace binary; no shell, a timeout,
never creating or syncing anything), and how to read the answer. A tool's answer is a path; what
it leads to is checked by :mod:`workspace_tools.sandbox.python` (an interpreter there) and, before the
sandbox shows it, confirmed by the host (:func:`workspace_tools.sandbox.python_binds.confirmed_env`).

- Poetry (``poetry.lock``): ``poetry env info -p`` (pipx's or the installer's poetry, which live in
  a virtualenv of their own, count as the person's: :func:`~workspace_tools.host.programs.tool_roots`);
- Pipenv (``Pipfile``): ``pipenv --venv`` (``~/.local/share/virtualenvs/<name>-<hash>``), with
  ``.env`` loading off;
- Hatch (``[tool.hatch]`` or ``hatch.toml``): first ``hatch env find hatch-test`` (the environments
  ``hatch test`` runs the tests in, one per matrix entry: the first made that holds pytest), then
  ``hatch env find`` (the default environment);
- PDM (``pdm.lock``): ``pdm info --python``;
- conda, mamba, micromamba (``environment.yml`` naming an environment): ``env list --json``, the
  person's environment of that name.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workspace_tools.host.programs import host_path, host_program

#: seconds a tool (poetry, hatch, pdm…) may take to answer
TOOL_TIMEOUT = 20.0
#: a tool's "no environment" answer is asked again after this many seconds
NEGATIVE_TTL = 30.0
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: (tool, folder) -> (when, the answer or None)
_answers: dict[tuple[str, str], tuple[float, str | None]] = {}


def _small_text(path: Path, limit: int) -> str | None:
    """A regular file's text, None when it is over ``limit`` bytes or not a regular file: opened
    without waiting, so a FIFO the sandbox made in the workspace never hangs cog."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = fh.read(limit + 1)
        except OSError:
            return None
    return data.decode("utf-8", errors="replace") if len(data) <= limit else None


def _toml(path: Path) -> dict[str, object]:
    import tomllib

    text = _small_text(path, 1_000_000)
    try:
        data = tomllib.loads(text) if text is not None else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _hatch_config(base: Path) -> dict[str, object] | None:
    """The project's Hatch settings (``[tool.hatch]`` or ``hatch.toml``), None when it has none."""
    found = None
    tool = _toml(base / "pyproject.toml").get("tool")
    if isinstance(tool, dict) and isinstance(tool.get("hatch"), dict):
        found = dict(tool["hatch"])
    if (base / "hatch.toml").is_file():
        found = {**(found or {}), **_toml(base / "hatch.toml")}
    return found


def _hatch_steering(base: Path) -> bool:
    env = (_hatch_config(base) or {}).get("env")
    return (base / "hatch_plugins.py").exists() or (isinstance(env, dict) and bool(env.get("requires") or env.get("collectors")))


_CONDA_NAME = re.compile(r"^name:\s*['\"]?([A-Za-z0-9_.+-]{1,100})['\"]?\s*$", re.M)


def conda_env_name(base: Path) -> str | None:
    """The environment ``environment.yml`` (or ``.yaml``) names, or None."""
    for name in ("environment.yml", "environment.yaml"):
        text = _small_text(base / name, 1_000_000)
        if text is None:
            continue
        found = _CONDA_NAME.search(text[:100_000])
        if found:
            return found.group(1)
    return None


def _last_path(out: str, base: Path) -> str | None:
    """The last line printed, when it is an absolute path."""
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return last if last and os.path.isabs(last) and not _CONTROL.search(last) and len(last) < 4096 else None


def _conda_env(out: str, base: Path) -> str | None:
    """The person's conda environment named as ``environment.yml`` says, from ``env list --json``."""
    wanted = conda_env_name(base)
    try:  # from the JSON object on: a notice printed before it is not the answer
        envs = json.loads(out[out.index("{"):]).get("envs")
    except (ValueError, AttributeError):
        return None
    for env in envs if isinstance(envs, list) else ():
        if isinstance(env, str) and os.path.isabs(env) and os.path.basename(env) == wanted and not _CONTROL.search(env):
            return env
    return None


@dataclass(frozen=True)
class EnvTool:
    """One tool that knows where a project's environment is."""

    #: how the result names it (its ``source``)
    name: str
    #: the programs that may answer, first installed wins
    programs: tuple[str, ...]
    argv: tuple[str, ...]
    #: the project uses the tool
    applies: Callable[[Path], bool]
    #: the workspace holds what would make the tool run workspace code or installs on the host
    steering: Callable[[Path], bool]
    #: what of the workspace steers it, for the note when it is not asked
    steering_files: str
    #: the answer read from the tool's output: a path or None
    read: Callable[[str, Path], str | None] = _last_path
    #: the answer is the interpreter (``bin/python``), not the environment's folder
    answers_python: bool = False
    #: more variables for the tool (e.g. pipenv's ``.env`` loading off)
    env: Mapping[str, str] = field(default_factory=dict)
    #: the command listing the environments the tool itself runs the tests in (``hatch test``'s
    #: hatch-test matrix), asked first: the first of them that was made and holds pytest wins
    test_argv: tuple[str, ...] = ()
    #: what makes the project's environment with the tool, for a note when the tool is not installed
    make: str = ""
    #: the project works with the tool (not only builds with it: ``[tool.hatch.build]`` is hatchling's),
    #: so a missing tool is worth a note; None: whenever it applies
    worked_with: Callable[[Path], bool] | None = None

    def program(self) -> str | None:
        return next((p for p in map(host_program, self.programs) if p is not None), None)

    def skipped_note(self) -> str | None:
        """When the tool is on PATH only where cog runs nothing on the host (a virtualenv, a work
        tree): a note saying so, else None."""
        import shutil

        for name in self.programs:
            raw = shutil.which(name)
            if raw is not None and host_program(name) is None:
                return (f"{self.name} was not asked for the project's environment: the {name} on PATH ({raw}) is inside a "
                        "virtualenv or a git work tree, where cog runs no program on the host; install "
                        f"{self.name} with pipx or its own installer, or link it from a folder such as ~/.local/bin")
        return None

    def missing_note(self, base: Path) -> str | None:
        """The project uses the tool, and it is not installed (or not on PATH); None when the project
        only builds with it."""
        if self.worked_with is not None and not self.worked_with(base):
            return None
        return (f"the project uses {self.name}, which is not installed here (or not on PATH): install it and make the "
                f"project's environment ({self.make}), then run the tests again")

    def refused_note(self) -> str:
        return (f"{self.name} was not asked for the project's environment: the workspace has {self.steering_files}, "
                "which would steer a program cog runs on the host")


def _exists(*names: str) -> Callable[[Path], bool]:
    return lambda base: any(os.path.lexists(base / n) for n in names)


def _files(*names: str) -> Callable[[Path], bool]:
    return lambda base: any((base / n).is_file() for n in names)


TOOLS: tuple[EnvTool, ...] = (
    EnvTool("poetry", ("poetry",), ("--no-plugins", "--no-interaction", "--no-ansi", "env", "info", "-p"),
            applies=_files("poetry.lock"), steering=_exists("poetry.toml", ".poetry"),
            steering_files="its own poetry settings or plugins (poetry.toml, .poetry/)", make="poetry install"),
    EnvTool("pipenv", ("pipenv",), ("--venv",), applies=_files("Pipfile", "Pipfile.lock"), steering=lambda base: False,
            steering_files="nothing", env={"PIPENV_DONT_LOAD_ENV": "1", "PIPENV_VERBOSITY": "-1", "PIPENV_NOSPIN": "1",
                                           "PIPENV_YES": "0", "PIPENV_IGNORE_VIRTUALENVS": "1"}, make="pipenv install --dev"),
    EnvTool("hatch", ("hatch",), ("env", "find"), applies=lambda base: _hatch_config(base) is not None,
            steering=_hatch_steering, steering_files="settings that load plugins (env requires, collectors, hatch_plugins.py)",
            test_argv=("env", "find", "hatch-test"), make="hatch test",
            worked_with=lambda base: (base / "hatch.toml").is_file() or "envs" in (_hatch_config(base) or {})),
    EnvTool("pdm", ("pdm",), ("info", "--python"), applies=_files("pdm.lock"),
            steering=_exists(".pdm-plugins", ".pdm-python", "pdm.toml"), answers_python=True,
            steering_files="its own pdm settings or plugins (.pdm-plugins, .pdm-python, pdm.toml)", make="pdm install"),
    EnvTool("conda", ("conda", "mamba", "micromamba"), ("env", "list", "--json"),
            applies=lambda base: conda_env_name(base) is not None, steering=_exists(".condarc"), read=_conda_env,
            steering_files="its own conda settings (.condarc)", make="conda env create -f environment.yml"),
)


def tool_env(extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The person's environment for a host tool: no activated env or Python settings of cog's,
    and a PATH without workspace folders (the tool finds interpreters on it: pyenv's shims count)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")}
    env["PATH"] = host_path()
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra)
    return env


def ask(tool: EnvTool, cwd: Path) -> str | None:
    """The tool's answer in ``cwd`` (an absolute path), or None. Cached: an answer while the path
    exists, a non-answer for :data:`NEGATIVE_TTL` seconds."""
    return _run(tool.name, tool.program(), tool.argv, cwd, lambda out: tool.read(out, cwd), tool.env)


def _made_envs(out: str, base: Path) -> str | None:
    """The environments a tool listed (absolute paths, one a line) that exist with a
    ``bin/python``, one a line; None when there is none."""
    lines = [line.strip() for line in out.splitlines()]
    made = [line for line in lines if line and os.path.isabs(line) and not _CONTROL.search(line) and len(line) < 4096
            and os.path.isfile(os.path.join(line, "bin", "python"))]
    return "\n".join(made[:50]) or None


def ask_test_envs(tool: EnvTool, cwd: Path) -> list[str]:
    """The environments the tool itself tests in (:attr:`EnvTool.test_argv`) that were made, in
    the tool's order; [] when it lists none (or has no such command)."""
    if not tool.test_argv:
        return []
    answer = _run(f"{tool.name}-test", tool.program(), tool.test_argv, cwd, lambda out: _made_envs(out, cwd), tool.env)
    return answer.split("\n") if answer else []


def _run(key_name: str, program: str | None, argv: Sequence[str], cwd: Path, read: Callable[[str], str | None],
         extra: Mapping[str, str] = {}) -> str | None:
    key = (key_name, str(cwd))
    now = time.monotonic()
    cached = _answers.get(key)
    if cached is not None:
        stamp, answer = cached
        if (answer is not None and all(map(os.path.exists, answer.split("\n")))) or (answer is None and now - stamp < NEGATIVE_TTL):
            return answer
    answer = None
    if program is not None:
        try:
            done = subprocess.run([program, *argv], cwd=cwd, env=tool_env(extra), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=TOOL_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0 and len(done.stdout) < 1_000_000:
            answer = read(done.stdout.decode("utf-8", "replace"))
    _answers[key] = (now, answer)
    return answer


#: asked of the person's ``python3`` on PATH (pyenv, asdf and mise shims pick the version the
#: project names, as in the person's shell): its interpreter, when pytest is installed for it
_PYTEST_PYTHON = "import sys, importlib.util\nprint(sys.executable if importlib.util.find_spec('pytest') else '')"


def person_python(cwd: Path) -> str | None:
    """The interpreter the person's own ``python3`` (on their PATH, shims included) runs in
    ``cwd``, when pytest is installed for it; None otherwise. Run isolated (``-I``: no current
    folder, no user site, no ``PYTHON*`` variables)."""
    program = host_program("python3") or host_program("python")
    return _run("python3", program, ("-I", "-c", _PYTEST_PYTHON), cwd, lambda out: _last_path(out, cwd))
