"""What the sandbox shows of the host: the folders it hides, the one guard every read-only bind
goes through, and the credential files it covers.

Nothing in the workspace decides what the sandbox shows. Every folder bound back read-only (what a
runner needs, a toolchain, an interpreter) goes through :func:`bindable`, which refuses the home,
``/tmp``, ``/run``, ``/var/run``, ``/var/tmp``, ``/dev/shm``, ``/`` and every folder above them, the
home's key folders (:data:`HOME_SECRETS`), and any path reached through a link that lies in the
workspace (a committed ``node_modules -> /root``): such a link is not shown, and the run's result
says so. Credential files (:data:`CREDENTIAL_FILES`) in a bound folder, or at the top of a
toolchain home the person's environment names, are covered with an empty file.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

log = logging.getLogger("cogcli")

#: the person's extra writable paths (``:``-separated); ``--sandbox-writable`` sets it
WRITABLE_ENV = "COG_SANDBOX_WRITABLE"
#: host places that hold sockets and per-user runtime state: replaced by empty ones inside
HIDDEN_DIRS = ("/run", "/var/run", "/var/tmp", "/dev/shm")


#: files that hold credentials, as the last parts of their path (``("etc", "npmrc")``: the global
#: npmrc of a Node installation); covered with an empty file wherever a bound folder would show them
CREDENTIAL_FILES: tuple[tuple[str, ...], ...] = (
    ("credentials",), ("credentials.toml",), ("credentials.json",), ("application_default_credentials.json",),
    (".npmrc",), ("etc", "npmrc"), (".yarnrc.yml",), (".netrc",), ("_netrc",), (".git-credentials",),
    (".pypirc",), (".pgpass",), (".vault-token",), (".docker", "config.json"), ("gh", "hosts.yml"),
    ("composer", "auth.json"), (".m2", "settings.xml"), (".m2", "settings-security.xml"),
)


#: how deep below a bound folder, and through how many entries, credential files are searched
CREDENTIAL_SCAN_DEPTH = 4


CREDENTIAL_SCAN_LIMIT = 20_000


#: variables of the person's environment naming toolchain homes whose top may hold credential files
#: (``$CARGO_HOME/credentials.toml``), covered even where the sandbox shows them without a bind
TOOLCHAIN_HOME_VARS = ("CARGO_HOME", "RUSTUP_HOME", "GOPATH", "NVM_DIR", "NPM_CONFIG_PREFIX", "DOCKER_CONFIG")


def home_dir() -> Path | None:
    """The home directory the sandbox replaces with an empty one (None: none that can be)."""
    raw = os.environ.get("HOME") or str(Path.home())
    home = Path(raw)
    if not home.is_absolute() or home == Path("/"):
        return None
    try:
        resolved = home.resolve()
    except OSError:
        return None
    if resolved == Path("/") or not resolved.is_dir():
        return None
    return resolved


def _is_within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def _covered(path: Path, hidden: Sequence[Path]) -> bool:
    return any(_is_within(path, h) for h in hidden)


def hiding_places() -> list[Path]:
    """The folders the sandbox replaces with empty ones: the home, ``/tmp``, ``/run``, ``/var/run``,
    ``/var/tmp``, ``/dev/shm`` (as written and resolved)."""
    places = [Path("/tmp"), *(Path(h) for h in HIDDEN_DIRS)]
    raw_home = os.environ.get("HOME") or str(Path.home())
    if os.path.isabs(raw_home):
        places.append(Path(raw_home))
    home = home_dir()
    if home is not None:
        places.append(home)
    for place in list(places):
        try:
            places.append(place.resolve())
        except (OSError, RuntimeError):
            continue
    return list(dict.fromkeys(places))


def _links_followed(path: Path, limit: int = 40) -> list[Path]:
    """The symbolic links met, in order, while resolving the absolute ``path`` (where each lies)."""
    met: list[Path] = []
    pending = list(path.parts[1:])
    current = Path("/")
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        try:
            target = os.readlink(candidate)
        except OSError:  # not a link (or not there): one plain step
            current = candidate
            continue
        met.append(candidate)
        if len(met) > limit:
            break
        if os.path.isabs(target):
            current = Path("/")
        pending[:0] = [p for p in target.split("/") if p]
    return met


def workspace_link(path: Path, workspace: Path) -> Path | None:
    """The first link lying in the workspace that resolving ``path`` goes through, or None."""
    root = Path(workspace).resolve()
    return next((link for link in _links_followed(Path(path)) if _is_within(link, root)), None)


#: folders of the home that hold keys and credentials: never shown, even as part of a toolchain
#: (``~/.local`` itself is not one: uv's and pipx's Pythons live in ``~/.local/share``)
HOME_SECRETS = (".config", ".cache", ".ssh", ".gnupg", ".aws", ".docker", ".kube", ".local/share/keyrings", ".password-store")


def bind_refusal(path: Path, workspace: Path | None) -> str:
    """Why ``path`` must not be bound into the sandbox ("" when it may be): it would show a folder
    the sandbox hides (the home, ``/tmp``, ``/run``, ``/var/run``, ``/var/tmp``, ``/dev/shm``, ``/``
    or a folder above one of them; the home's ``.ssh``, ``.config``, … or a folder in one), or a link
    in the workspace decides where it leads. The one guard of every read-only bind."""
    path = Path(path)
    if not path.is_absolute():
        return "it is not an absolute path"
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "it does not exist"
    if workspace is not None:
        link = workspace_link(path, workspace)
        if link is not None:
            return f"it is reached through {_shown(link)}, a link in the workspace: no workspace file decides what the sandbox shows"
        if _is_within(real, Path(workspace).resolve()):
            return "it is in the workspace, which the sandbox shows as it is"
    if real == Path("/"):
        return "it is /, above every folder the sandbox hides"
    for place in hiding_places():
        if _is_within(place, real):
            what = "it is" if place == real else "it holds"
            return f"{what} {_shown(place)}, which the sandbox hides"
    home = home_dir()
    for secret in (home / sub for sub in HOME_SECRETS) if home is not None else ():
        if _is_within(real, secret) or _is_within(secret, real):
            return f"it is or holds {_shown(secret)}, where keys and credentials live"
    return ""


#: folders of the home holding keys where a confirmed Python environment may still lie (a cache:
#: poetry's ``~/.cache/pypoetry/virtualenvs``); the environment's folder alone is shown, never the cache
ENV_HOSTS = (".cache",)


def is_env_folder(path: Path) -> bool:
    """Whether ``path`` holds what a Python environment holds beside its interpreter: ``pyvenv.cfg``
    (a virtualenv) or ``conda-meta/`` (a conda environment)."""
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()


def env_bind_refusal(path: Path, workspace: Path | None) -> str:
    """Why the Python environment at ``path`` (one the host confirmed: its own interpreter
    answered from it) must not be shown read-only to the tests ("" when it may). Unlike
    :func:`bind_refusal`, it may lie in a hidden place (``~/.cache/pypoetry/virtualenvs/x``) and
    be reached through a workspace link (``.venv -> ~/.virtualenvs/x``): that folder alone is
    shown. Never ``/``, a hidden place or a folder holding one, a key folder of the home
    (``.ssh``, ``.config``, …) or a folder holding one, nor anything inside a key folder other
    than a cache (:data:`ENV_HOSTS`)."""
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError):
        return "it does not exist"
    if not real.is_dir() or not is_env_folder(real):
        return "it is not a Python environment (no pyvenv.cfg nor conda-meta/ in it)"
    if real == Path("/"):
        return "it is /, above every folder the sandbox hides"
    for place in hiding_places():
        if _is_within(place, real):
            return f"it {'is' if place == real else 'holds'} {_shown(place)}, which the sandbox hides"
    home = home_dir()
    for sub in HOME_SECRETS if home is not None else ():
        secret = home / sub  # type: ignore[operator]
        if _is_within(secret, real):
            return f"it is or holds {_shown(secret)}, where keys and credentials live"
        if _is_within(real, secret) and sub not in ENV_HOSTS:
            return f"it lies in {_shown(secret)}, where keys and credentials live"
    return ""


def _env_bind_args(path: Path, workspace: Path, hidden: Sequence[Path], bound: list[Path]) -> list[str]:
    """The bwrap ``--ro-bind`` that shows the confirmed environment ``path`` (see :func:`env_bind_refusal`)."""
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError):
        return []
    if _is_within(real, workspace) or not _covered(real, hidden) or _covered(real, bound):
        return []
    why = env_bind_refusal(real, workspace)
    if why:
        log.warning("sandbox: the Python environment %s is not shown to the tests: %s", _shown(real), why)
        return []
    bound.append(real)
    return ["--ro-bind", str(real), str(real)]


def bindable(path: Path, workspace: Path) -> bool:
    """Whether ``path`` may be bound read-only into the sandbox of ``workspace``; a refusal is
    logged (see :func:`bind_refusal`). Every bind of a runner's, toolchain's or interpreter's
    folder goes through here."""
    why = bind_refusal(path, workspace)
    if why:
        log.warning("sandbox: %s is not shown to the tests: %s", _shown(Path(path)), why)
    return not why


def _shown(path: Path) -> str:
    """A path as a message shows it: JSON-quoted when it holds a control character."""
    text = str(path)
    return json.dumps(text, ensure_ascii=False) if re.search(r"[\x00-\x1f\x7f-\x9f]", text) else text


def _ro_bind_args(path: Path, workspace: Path, hidden: Sequence[Path], bound: list[Path],
                  links_out: list[tuple[Path, Path]]) -> list[str]:
    """The bwrap ``--ro-bind`` that shows ``path`` inside the sandbox: none when the sandbox shows it
    anyway (not hidden, in the workspace, in a folder already bound) or :func:`bindable` refuses
    it. ``bound`` gets what is bound; ``links_out`` each refused (workspace link, target)."""
    path = Path(path)
    if not path.is_absolute() or not os.path.lexists(path):
        return []
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        return []
    if not real.exists() or _is_within(real, workspace) or not _covered(real, hidden) or _covered(real, bound):
        return []  # the sandbox shows it as it is (or there is nothing to show)
    if not bindable(path, workspace):
        link = workspace_link(path, workspace)
        if link is not None:
            links_out.append((link, real))
        return []
    bound.append(real)
    return ["--ro-bind", str(real), str(real)]


def _link_note(link: Path, target: Path, workspace: Path) -> str:
    try:
        shown = str(link.relative_to(workspace))
    except ValueError:
        shown = str(link)
    return (
        f"Sandbox: {_shown(Path(shown))} is a link out of the workspace to {_shown(target)}, which the sandbox does "
        "not show (no workspace file decides what the sandbox shows), so the tests see nothing there. To show it "
        f"to them, the person can run cog with --sandbox-writable {_shown(target)} ({WRITABLE_ENV}; it is then "
        "writable too) or --sandbox off."
    )


def _credential_files(top: Path, depth: int, limit: int, skip: Sequence[Path]) -> Iterator[Path]:
    """Regular files under ``top`` (not following links, at most ``depth`` levels down, through at
    most ``limit`` entries, not into ``skip``) whose path ends as one of :data:`CREDENTIAL_FILES`."""
    names = {suffix[-1] for suffix in CREDENTIAL_FILES}
    if top.name in names and top.is_file() and not top.is_symlink():  # a file bound by itself
        if any(top.parts[-len(suffix):] == suffix for suffix in CREDENTIAL_FILES):
            yield top
        return
    level = [str(top)]
    seen = 0
    for _ in range(depth):
        following: list[str] = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        seen += 1
                        if seen > limit:
                            log.warning("searched %d entries under %s for credential files and stopped", limit, top)
                            return
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                if not any(_is_within(Path(entry.path), s) for s in skip):
                                    following.append(entry.path)
                            elif entry.name in names and entry.is_file(follow_symlinks=False):
                                parts = Path(entry.path).parts
                                if any(parts[-len(suffix):] == suffix for suffix in CREDENTIAL_FILES):
                                    yield Path(entry.path)
                        except OSError:
                            continue
            except OSError:
                continue
        level = following


def _shown_credentials(bound: Sequence[Path], hidden: Sequence[Path], skip: Sequence[Path]) -> list[Path]:
    """Credential files the sandbox would show: in the folders bound back, and at the top of the
    toolchain homes the person's environment names (:data:`TOOLCHAIN_HOME_VARS`) where the sandbox
    shows them (not hidden, or bound back). Never one in the workspace or a writable path."""
    found: list[Path] = []
    for top in bound:
        found += _credential_files(top, CREDENTIAL_SCAN_DEPTH, CREDENTIAL_SCAN_LIMIT, skip)
    for variable in TOOLCHAIN_HOME_VARS:
        for raw in os.environ.get(variable, "").split(os.pathsep):
            if not raw or not os.path.isabs(raw):
                continue
            try:
                top = Path(raw).resolve()
            except (OSError, RuntimeError):
                continue
            if top.is_dir() and not _covered(top, skip) and (not _covered(top, hidden) or _covered(top, bound)):
                found += _credential_files(top, 2, CREDENTIAL_SCAN_LIMIT, skip)
    return [f for f in dict.fromkeys(found) if not _covered(f, skip)]


def _empty_file() -> str:
    """An empty regular file of the person's (in cog's cache, which the sandbox hides) to lay over a
    credential file: tests read it as empty (``/dev/null``, the fallback, is a device they may not
    open there)."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cogcli"
    path = folder / "empty"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        info = os.lstat(path) if os.path.lexists(path) else None
        if info is None or not stat.S_ISREG(info.st_mode) or info.st_size:
            path.unlink(missing_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
            os.close(fd)
        return str(path)
    except OSError:
        return "/dev/null"
