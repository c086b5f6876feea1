"""The project's Python: which interpreter runs the workspace's tests, and what of the host the
sandbox must show for it to start. The one place that answers both.

Found the way people have it, first match wins, in the runner's folder and then the workspace root:

1. ``.venv`` or ``venv`` (their ``bin/python``), else any folder there holding ``pyvenv.cfg``;
2. uv: with ``uv.lock``, the person's ``UV_PROJECT_ENVIRONMENT`` (uv's default, ``.venv``, is 1.);
3. an activated ``$VIRTUAL_ENV`` that is not cog's own (``sys.prefix``);
4. Poetry (``poetry.lock``: ``poetry env info -p``), Hatch (``[tool.hatch]`` or ``hatch.toml``:
   ``hatch env find``), PDM (``pdm.lock``: ``pdm info --python``), asked only when the tool is
   installed on the host (:func:`~workspace_tools.hostbin.host_program`, never a workspace
   binary), with a timeout, no shell, never creating or syncing anything. A tool is not asked when
   the workspace holds what would make it run workspace code on the host (Hatch's custom
   collectors and ``requires``, PDM's ``.pdm-plugins``/``.pdm-python``, a ``poetry.toml``);
5. else cog's own interpreter, with a note saying so (:meth:`ProjectPython.fallback_note`).

What the sandbox shows (:func:`sandbox_paths`) is never taken from a workspace file's text (a
``home =`` in ``pyvenv.cfg`` is an attacker's to write): it is the base installation that the
env's interpreter, resolved on the host (``os.path.realpath``), reports when run isolated by its
real path — and only when that real path is named like a Python, lies in no virtualenv and is a
host file (outside every work tree) or an installation of pyenv or asdf (git checkouts themselves). An interpreter that is a file in the workspace (``venv --copies``) is never
run on the host. Whatever is bound passes :func:`bind_allowed`: never ``$HOME``, ``/tmp``,
``/run``, ``/var/tmp``, ``/dev/shm`` or a folder above one of them.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workspace_tools.hostbin import host_path, host_program, in_virtualenv, is_host_file

#: in-project folders tried first, in this order
VENV_NAMES = (".venv", "venv")
#: seconds a tool (poetry, hatch, pdm) or an interpreter may take to answer
TOOL_TIMEOUT = 20.0
#: a tool's "no environment" answer is asked again after this many seconds
NEGATIVE_TTL = 30.0
#: folders searched for a ``pyvenv.cfg`` folder (beyond .venv/venv) at most
SCAN_LIMIT = 500
#: the environment variable the runner passes the workspace's packages to the pytest plugin in
PACKAGES_ENV = "COGCLI_WORKSPACE_PACKAGES"
#: what an interpreter's file name looks like (only such a host file is run to ask its base)
_PYTHON_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

FIX = "python -m venv .venv && .venv/bin/pip install -e . pytest"


@dataclass(frozen=True)
class ProjectPython:
    """The interpreter that runs the workspace's tests and where it was found."""

    #: the interpreter to run, absolute (an env's ``bin/python`` as found, not resolved)
    python: str
    #: where it came from: .venv | venv | pyvenv.cfg | uv | $VIRTUAL_ENV | poetry | hatch | pdm | cog
    source: str
    #: the environment's folder (for PATH and VIRTUAL_ENV), None for cog's own or a bare interpreter
    env: Path | None = None
    #: whether ``env`` came from the person or a host tool (may be bound when outside the workspace)
    trusted_env: bool = False
    #: things people should read (a tool not asked, and why)
    notes: tuple[str, ...] = field(default=())

    @property
    def fallback(self) -> bool:
        """Only cog's own interpreter was found."""
        return self.source == "cog"

    @property
    def real(self) -> str:
        """The interpreter's real path on the host (links followed)."""
        return os.path.realpath(self.python)

    def fallback_note(self) -> str:
        return (
            "No project environment found (.venv, venv, $VIRTUAL_ENV, uv/poetry/hatch/pdm): pytest ran with "
            f"cog's own Python ({self.python}), not the project's; create one: {FIX}"
        )

    def describe(self) -> str:
        return f"{self.python} ({self.source})"


# -- finding the environment -------------------------------------------------------------------


def _python_in(env: Path) -> Path | None:
    candidate = env / "bin" / "python"
    try:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    except OSError:
        return None
    return None


def _in_project(base: Path) -> ProjectPython | None:
    for name in VENV_NAMES:
        found = _python_in(base / name)
        if found is not None:
            return ProjectPython(str(found), name, base / name)
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)[:SCAN_LIMIT]
    except OSError:
        return None
    for entry in entries:
        if entry.name in VENV_NAMES or entry.name in (".git", ".cog", "node_modules"):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        env = Path(entry.path)
        if (env / "pyvenv.cfg").is_file():
            found = _python_in(env)
            if found is not None:
                return ProjectPython(str(found), "pyvenv.cfg", env)
    return None


def _uv(base: Path) -> ProjectPython | None:
    """``uv.lock`` with the person's ``UV_PROJECT_ENVIRONMENT`` (relative: to the project)."""
    setting = os.environ.get("UV_PROJECT_ENVIRONMENT", "").strip()
    if not setting or not (base / "uv.lock").is_file():
        return None
    env = Path(setting).expanduser()
    env = env if env.is_absolute() else base / env
    found = _python_in(env)
    return ProjectPython(str(found), "uv", env, trusted_env=True) if found is not None else None


def _virtual_env() -> ProjectPython | None:
    """An activated virtualenv that is not the one cog runs in."""
    raw = os.environ.get("VIRTUAL_ENV", "").strip()
    if not raw or not os.path.isabs(raw):
        return None
    env = Path(raw)
    if os.path.realpath(env) in (os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)):
        return None
    found = _python_in(env)
    return ProjectPython(str(found), "$VIRTUAL_ENV", env, trusted_env=True) if found is not None else None


_answers: dict[tuple[str, str], tuple[float, str | None]] = {}


def _tool_env() -> dict[str, str]:
    """The person's environment for a host tool: no activated env or Python settings of cog's,
    and a PATH without workspace folders (the tool finds interpreters on it)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")}
    env["PATH"] = host_path()
    env.setdefault("LANG", "C.UTF-8")
    return env


def _ask(tool: str, args: Sequence[str], cwd: Path) -> str | None:
    """The last line ``tool args`` prints in ``cwd`` (an absolute path), or None. Cached: an
    answer while the path exists, a non-answer for :data:`NEGATIVE_TTL` seconds."""
    key = (tool, str(cwd))
    now = time.monotonic()
    cached = _answers.get(key)
    if cached is not None:
        stamp, answer = cached
        if (answer is not None and os.path.exists(answer)) or (answer is None and now - stamp < NEGATIVE_TTL):
            return answer
    program = host_program(tool)
    answer = None
    if program is not None:
        try:
            done = subprocess.run([program, *args], cwd=cwd, env=_tool_env(), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=TOOL_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0:
            lines = [line.strip() for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
            last = lines[-1] if lines else ""
            if last and os.path.isabs(last) and not _CONTROL.search(last) and len(last) < 4096:
                answer = last
    _answers[key] = (now, answer)
    return answer


def _toml(path: Path) -> dict[str, object]:
    import tomllib

    try:
        if path.stat().st_size > 1_000_000:
            return {}
        data = tomllib.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
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


def _poetry(base: Path, notes: list[str]) -> ProjectPython | None:
    if not (base / "poetry.lock").is_file() or host_program("poetry") is None:
        return None
    if (base / "poetry.toml").exists() or (base / ".poetry").exists():
        notes.append("poetry was not asked for the project's environment: the workspace has its own poetry settings "
                     "or plugins (poetry.toml, .poetry/), which would steer a program cog runs on the host")
        return None
    answer = _ask("poetry", ["--no-plugins", "--no-interaction", "--no-ansi", "env", "info", "-p"], base)
    if answer is None:
        return None
    env = Path(answer)
    found = _python_in(env)
    return ProjectPython(str(found), "poetry", env, trusted_env=True) if found is not None else None


def _hatch(base: Path, notes: list[str]) -> ProjectPython | None:
    if host_program("hatch") is None:
        return None
    config = _hatch_config(base)
    if config is None:
        return None
    env_config = config.get("env")
    if (base / "hatch_plugins.py").exists() or (isinstance(env_config, dict) and (env_config.get("requires") or env_config.get("collectors"))):
        notes.append("hatch was not asked for the project's environment: its settings load plugins (env requires, "
                     "collectors, hatch_plugins.py), which would run workspace code or installs on the host")
        return None
    answer = _ask("hatch", ["env", "find"], base)
    if answer is None:
        return None
    env = Path(answer)
    found = _python_in(env)
    return ProjectPython(str(found), "hatch", env, trusted_env=True) if found is not None else None


def _pdm(base: Path, notes: list[str]) -> ProjectPython | None:
    if not (base / "pdm.lock").is_file() or host_program("pdm") is None:
        return None
    if any((base / name).exists() for name in (".pdm-plugins", ".pdm-python", "pdm.toml")):
        notes.append("pdm was not asked for the project's environment: the workspace has its own pdm settings or "
                     "plugins (.pdm-plugins, .pdm-python, pdm.toml), which would steer a program cog runs on the host")
        return None
    answer = _ask("pdm", ["info", "--python"], base)
    if answer is None or not os.access(answer, os.X_OK) or not os.path.isfile(answer):
        return None
    python = Path(answer)
    env = python.parent.parent
    if (env / "pyvenv.cfg").is_file():
        return ProjectPython(str(python), "pdm", env, trusted_env=True)
    return ProjectPython(str(python), "pdm")  # a bare interpreter (PEP 582 mode)


def find_project_python(root: Path, workspace_root: Path | None = None) -> ProjectPython:
    """The interpreter that runs the tests of the project in ``root`` (see the module)."""
    bases = list(dict.fromkeys([Path(root), Path(workspace_root or root)]))
    for base in bases:
        found = _in_project(base)
        if found is not None:
            return found
    for base in bases:
        found = _uv(base)
        if found is not None:
            return found
    found = _virtual_env()
    if found is not None:
        return found
    notes: list[str] = []
    for base in bases:
        for ask in (_poetry, _hatch, _pdm):
            found = ask(base, notes)
            if found is not None:
                return ProjectPython(found.python, found.source, found.env, found.trusted_env, tuple(notes))
    return ProjectPython(sys.executable, "cog", None, notes=tuple(notes))


# -- what the sandbox shows ----------------------------------------------------------------------


def bind_allowed(path: str | os.PathLike[str], workspace: Path | None = None) -> bool:
    """Whether the sandbox may show the folder ``path`` read-only: the sandbox's one guard
    (:func:`workspace_tools.sandbox_view.bind_refusal`: never the home, ``/tmp``, ``/run``, ``/var/tmp``,
    ``/dev/shm``, the home's ``.ssh``/``.config``/…, nor a folder above one of them)."""
    from workspace_tools.sandbox_view import bind_refusal

    raw = os.fspath(path)
    if not raw or not os.path.isabs(raw) or _CONTROL.search(raw) or not os.path.isdir(raw):
        return False
    return not bind_refusal(Path(raw), workspace)


@functools.lru_cache(maxsize=32)
def _base_prefix(real: str, stamp: int) -> str | None:
    """``sys.base_prefix`` as the host interpreter at ``real`` reports it, run isolated (no site,
    no environment variables, no current folder), or None."""
    try:
        done = subprocess.run([real, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"], cwd="/",
                              env={"PATH": host_path(), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=TOOL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    text = done.stdout.decode("utf-8", "replace").strip()
    if not text or "\n" in text or not os.path.isabs(text) or _CONTROL.search(text):
        return None
    return text


def _within(path: str | os.PathLike[str], folder: Path) -> bool:
    here = Path(os.path.realpath(path))
    top = Path(os.path.realpath(folder))
    return here == top or top in here.parents


def _manager_roots() -> list[Path]:
    """Where the person's interpreter managers keep their installations, which are git checkouts
    themselves (pyenv, asdf), so :func:`~workspace_tools.hostbin.is_host_file` alone refuses them."""
    home = Path(os.path.expanduser("~"))
    roots = [os.environ.get("PYENV_ROOT") or home / ".pyenv", os.environ.get("ASDF_DATA_DIR") or home / ".asdf"]
    return [Path(os.path.realpath(r)) for r in roots if os.path.isabs(r)]


def _owned(path: str) -> bool:
    """Owned by root or this user and writable by no one else (no other user planted or can swap it)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_uid in (0, os.geteuid()) and not st.st_mode & 0o022


def _host_interpreter(real: str) -> bool:
    """Whether the file at ``real`` (links followed) may be run on the host to ask its base
    installation: named like a Python, in no virtualenv, owned by root or this user and writable by
    no one else, and a host file (outside every work tree) or one of pyenv's or asdf's installations."""
    if not _PYTHON_NAME.match(os.path.basename(real)) or in_virtualenv(real):
        return False
    if not os.path.isfile(real) or not os.access(real, os.X_OK) or not (_owned(real) and _owned(os.path.dirname(real))):
        return False
    return is_host_file(real) or any(_within(real, root / sub) for root in _manager_roots() for sub in ("versions", "installs"))


def sandbox_paths(project: ProjectPython, workspace: Path) -> tuple[list[Path], list[str]]:
    """(host folders the sandbox must show read-only for ``project``'s interpreter to start,
    notes when its base installation cannot be shown). Every folder passes :func:`bind_allowed`."""
    found: list[Path] = []
    notes: list[str] = []
    if project.fallback:
        return found, notes  # cog's own: the sandbox shows sys.prefix and sys.base_prefix itself
    if project.trusted_env and project.env is not None and not _within(project.env, workspace):
        found.append(Path(os.path.realpath(project.env)))  # the person's or a host tool's env (poetry's cache…)
    real = project.real
    if _within(real, workspace):
        notes.append(
            f"The project's Python ({project.python}) is a file inside the workspace (a venv made with --copies?): "
            "cog does not run it on the host to learn its base installation, so the sandbox shows that only when it "
            f"is outside $HOME and /tmp. If it cannot start there, recreate the environment with links: {FIX}"
        )
    elif not _host_interpreter(real):
        notes.append(
            f"The project's Python ({project.python}) resolves to {real}, which is not an interpreter installed on the "
            "host (it lies in a work tree or virtualenv, or is not named like python): cog does not run it to learn "
            "its base installation."
        )
    else:
        try:
            stamp = os.stat(real).st_mtime_ns
        except OSError:
            stamp = 0
        base = _base_prefix(real, stamp)
        if base is not None:
            found.append(Path(os.path.realpath(base)))
        install = Path(real).parent.parent  # …/bin/python3.11 -> its installation
        if base is None or not _within(real, Path(base)):
            found.append(install)
    shown = [p for p in dict.fromkeys(found) if bind_allowed(p, workspace)]
    return shown, notes


def interpreter_homes(workspace: Path) -> list[Path]:
    """What the sandbox shows for the workspace's own Python (its root's environment)."""
    workspace = Path(workspace)
    return sandbox_paths(find_project_python(workspace, workspace), workspace)[0]


# -- the workspace's own packages ------------------------------------------------------------------


def workspace_packages(roots: Iterable[Path], limit: int = 200) -> dict[str, list[str]]:
    """Top-level packages of the workspace's code: ``src/<name>/`` and ``<name>/`` holding
    ``__init__.py`` in each of ``roots`` (real folders, not links), name -> their folders."""
    found: dict[str, list[str]] = {}
    for root in dict.fromkeys(Path(r) for r in roots):
        for parent in (root / "src", root):
            try:
                entries = sorted(os.scandir(parent), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if len(found) >= limit:
                    return found
                name = entry.name
                if not name.isidentifier() or name.startswith("."):
                    continue
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                if (Path(entry.path) / "__init__.py").is_file():
                    paths = found.setdefault(name, [])
                    if entry.path not in paths:
                        paths.append(entry.path)
    return found
