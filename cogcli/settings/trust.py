"""Commands a workspace's ``[tool.cog]`` names to run on this machine (``mcp_servers``) start only
after the person approved that exact command line *and* the workspace files it runs.

The workspace is not trusted: a cloned repository, a test, or a model's ``write_file`` can put any
command there — or rewrite the script an approved command runs. So each (workspace, setting,
command line) the person approves is remembered per user, outside every repository
(``~/.config/cog/trusted-commands.json``, or under ``$XDG_CONFIG_HOME``), with the sha256 of each
workspace file the command runs (:func:`command_files`); a changed command line is a new one, and a
changed file makes cog ask again, naming it. On a terminal cog asks; off a terminal it refuses
(exit 2) naming the command (and the changed files) and ``cog trust``. ``--yes`` does not approve
these: it approves the model's tool calls, not the workspace's start-up commands. Commands given on
the command line (``--mcp``) are the person's own and need no approval.

What the approval covers (the server is started with the workspace root as its working directory,
so a relative path means a file of the workspace):

- the program (the first word): a path (``./bin/server``, ``.venv/bin/python``), or the file a
  ``PATH`` lookup finds — and, for each ``PATH`` folder inside the workspace before it, that no
  file of that name is there (one planted later would run instead);
- every other word, and the value of ``--option=value``, that names a file in the workspace (the
  script, a config file), also inside a shell's ``-c '…'`` string; a script name
  (``srv.py``, ``server.js``, …) that does not exist yet is covered as absent;
- ``python -m pkg``: every file of the package folder ``pkg/`` (or ``pkg.py``), or that neither
  exists (one planted later would shadow an installed module).

Files are read without following a link out of the workspace: a path in the workspace whose real
path is outside (``.venv/bin/python`` → ``/usr/bin/python3``) is the person's own file — it is not
read, but where the link points is part of the approval (a link retargeted is asked about again).
- a Python command's import closure in the workspace and the workspace virtualenv its program
  lives in (:mod:`cogcli.settings.trust_closure`): a module rewritten, a ``json.py`` planted beside the
  script, a ``.pth`` dropped into the venv each make cog ask again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from cogcli.settings import trust_closure
from cogcli.settings.load import describe_source
from cogcli.contract.errors import ConfigError
from cogcli.shown.visible import visible

STORE_NAME = "trusted-commands.json"
#: the fingerprint of a file the command would run that does not exist (yet)
ABSENT = "absent"
#: the prefix of a workspace path that leads out of the workspace: the real path follows
OUTSIDE = "outside:"
#: a name with one of these suffixes is a script: covered even when it does not exist yet
SCRIPT_SUFFIXES = frozenset({".py", ".pyw", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".sh", ".bash", ".zsh",
                             ".rb", ".pl", ".php", ".lua", ".jar"})
#: the most files of one ``python -m`` package an approval fingerprints (more: the rest is left out)
MAX_PACKAGE_FILES = 2000
_NESTING = 2  # shell strings inside shell strings, at most


class TrustedCommand(BaseModel):
    workspace: str
    setting: str
    command: str
    approved_at: str = ""
    #: the workspace files the command runs, as approved: path (relative to the workspace) →
    #: ``sha256:<hex>``, ``absent``, or ``outside:<real path>``; None: approved before cog covered files
    files: dict[str, str] | None = None


class TrustStore(BaseModel):
    version: int = 1
    commands: list[TrustedCommand] = Field(default_factory=list)


def store_path() -> Path:
    """``$XDG_CONFIG_HOME/cog/trusted-commands.json`` (default ``~/.config/cog/…``)."""
    from cogcli.settings.person_file import config_home

    return config_home() / STORE_NAME


def load_store(path: Path | None = None) -> TrustStore:
    path = path or store_path()
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return TrustStore()
    except OSError as exc:
        raise ConfigError(f"cannot read the approved commands in {path}: {exc.strerror}") from None
    try:
        return TrustStore.model_validate_json(raw)
    except ValidationError:
        raise ConfigError(
            f"{path} is not a valid list of approved commands; fix or delete it (cog trust asks again)"
        ) from None


def save_store(store: TrustStore, path: Path | None = None) -> None:
    """Write atomically (temp file + rename), readable by the user only."""
    path = path or store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(store.model_dump(), indent=2) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- the files a command runs --------------------------------------------------------------


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


class _Files:
    """Collects ``path → fingerprint`` for the workspace files of one command."""

    def __init__(self, workspace: Path) -> None:
        self.given = os.path.abspath(workspace)
        self.root = os.path.realpath(workspace)
        self.found: dict[str, str] = {}

    def _key(self, lexical: str, real: str) -> str | None:
        for base, path in ((self.root, lexical), (self.given, lexical), (self.root, real)):
            if _within(path, base):
                return os.path.relpath(path, base)
        return None

    def add(self, named: str, *, script: bool = False) -> bool:
        """Cover the path ``named`` (relative to the root: the server's working directory). True
        when it exists. Absent and not a ``script``: nothing is recorded."""
        if not named or len(named) > 4096 or "\x00" in named or "://" in named:
            return False
        lexical = os.path.normpath(os.path.join(self.root, named))
        real = os.path.realpath(lexical)
        key = self._key(lexical, real)
        if key is None:  # outside the workspace, not reached through it: the person's own file
            return os.path.lexists(lexical)
        if not _within(real, self.root):
            if os.path.lexists(lexical):
                self.found[key] = OUTSIDE + real
                return True
            return False
        if os.path.isdir(real):
            return True
        if not os.path.exists(real):
            if script:
                self.found.setdefault(key, ABSENT)
            return False
        self.found[key] = _digest(real)
        return True

    def program(self, name: str) -> None:
        """The first word: a path, or what a ``PATH`` lookup from the root finds."""
        if "/" in name:
            self.add(name, script=True)
            return
        for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
            candidate = os.path.normpath(os.path.join(self.root, folder or ".", name))
            key = self._key(candidate, os.path.realpath(candidate))
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                if key is not None:
                    self.add(candidate)
                return
            if key is not None:  # one planted here later (or made executable) would run instead
                self.found[key] = "not executable" if os.path.lexists(candidate) else ABSENT

    def words(self, words: Sequence[str], depth: int = 0) -> None:
        for word in words:
            if word.startswith("-"):
                _, eq, value = word.partition("=")
                if eq:
                    self.add(value, script=Path(value).suffix in SCRIPT_SUFFIXES)
                continue
            self.add(word, script=Path(word).suffix in SCRIPT_SUFFIXES)
            if depth < _NESTING and any(c.isspace() for c in word):  # sh -c 'python srv.py': the words inside
                self.shell(word, depth + 1)

    def shell(self, text: str, depth: int) -> None:
        """The words of a shell command line: each command's program, and its other words."""
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:
            return
        start = True
        for token in tokens:
            if token and all(c in "();<>|&" for c in token):
                start = True
            elif start and "=" in token and not token.startswith("="):  # VAR=value before a command
                self.words([token.partition("=")[2]], depth)
            elif start:
                self.program(token)
                start = False
            else:
                self.words([token], depth)

    def module(self, name: str) -> None:
        """``python -m name``: the package folder's files, or ``name.py`` (or that neither exists)."""
        parts = [p for p in name.split(".") if p]
        if not parts:
            return
        top = os.path.join(self.root, parts[0])
        real = os.path.realpath(top)
        if os.path.isdir(top):
            if not _within(real, self.root):
                self.found[parts[0] + "/"] = OUTSIDE + real
                return
            count = 0
            for folder, dirs, files in os.walk(real):  # does not descend into links
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for file in sorted(files):
                    if count >= MAX_PACKAGE_FILES:
                        return
                    self.add(os.path.join(folder, file))
                    count += 1
            return
        if not self.add(parts[0] + ".py", script=True):
            self.found.setdefault(parts[0] + "/", ABSENT)


def _digest(real: str) -> str:
    """``sha256:<hex>`` of the file at ``real`` (a path with no links), read without following
    one swapped in since; ``unreadable`` or ``not a file`` when it cannot be read as one."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "unreadable" if os.path.lexists(real) else ABSENT
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a file"
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return "sha256:" + digest.hexdigest()
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)


def _python(word: str) -> bool:
    base = os.path.basename(word)
    return base.startswith(("python", "pypy")) and base.rstrip("0123456789.").endswith(("python", "pypy"))


def command_files(workspace: Path, command: str) -> dict[str, str]:
    """The workspace files ``command`` runs when started in ``workspace``: path relative to the
    workspace → ``sha256:<hex>``, ``absent`` or ``outside:<real path>`` (see the module's doc)."""
    try:
        argv = shlex.split(trust_closure.project_relative(command))
    except ValueError:
        return {}  # such a command never starts (the MCP client refuses to parse it)
    if not argv:
        return {}
    files = _Files(workspace)
    absent = lambda rel: files.found.setdefault(rel, ABSENT)  # noqa: E731
    files.program(argv[0])
    files.words(argv[1:])
    for i, word in enumerate(argv):
        if _python(word):
            for j in range(i + 1, len(argv)):
                arg = argv[j]
                if arg == "-m" and j + 1 < len(argv):
                    files.module(argv[j + 1])
                    trust_closure.cover_module(files.root, argv[j + 1], files.add, absent)
                    break
                if arg.startswith("-m") and len(arg) > 2:
                    files.module(arg[2:])
                    trust_closure.cover_module(files.root, arg[2:], files.add, absent)
                    break
                if not arg.startswith("-"):
                    script = os.path.realpath(os.path.join(files.root, arg))
                    if _within(script, files.root) and os.path.isfile(script):
                        trust_closure.cover_imports(files.root, os.path.dirname(script), [script], files.add, absent)
                    break
            venv = trust_closure.venv_of(files.root, word)
            if venv is not None:  # everything in it: .pth files, packages, byte code
                files.found[os.path.relpath(venv, files.root) + "/ (virtualenv)"] = trust_closure.tree_fingerprint(venv)
    trust_closure.cover_sourced(files.root, files.found, files.add)  # sh hook.sh that does `. lib.sh`
    return dict(sorted(files.found.items()))


# --- approvals -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Review:
    """One command checked against the approvals: ``files`` as they are now; ``changed``: those
    that differ from what was approved (empty when approved, or never approved)."""

    command: str
    files: dict[str, str]
    approved: bool
    changed: tuple[str, ...] = field(default=())


def _entry(store: TrustStore, workspace: Path, setting: str, command: str) -> TrustedCommand | None:
    key = str(Path(workspace).resolve())
    return next((c for c in store.commands if c.workspace == key and c.setting == setting and c.command == command), None)


def review(store: TrustStore, workspace: Path, setting: str, command: str) -> Review:
    now = command_files(workspace, command)
    entry = _entry(store, workspace, setting, command)
    if entry is None:
        return Review(command, now, approved=False)
    changed = differences(entry.files if entry.files is not None else {}, now)
    return Review(command, now, approved=not changed, changed=changed)


def differences(before: dict[str, str], now: dict[str, str]) -> tuple[str, ...]:
    """The files whose fingerprints differ between an approval and now (newly covered as absent: no change)."""
    return tuple(sorted(k for k in {*before, *now} if before.get(k) != now.get(k) and {before.get(k), now.get(k)} != {None, ABSENT}))


def is_trusted(store: TrustStore, workspace: Path, setting: str, command: str) -> bool:
    return review(store, workspace, setting, command).approved


def approve(store: TrustStore, workspace: Path, setting: str, command: str, files: dict[str, str] | None = None) -> None:
    """Remember ``command`` as approved with ``files`` (default: the files it runs now)."""
    files = command_files(workspace, command) if files is None else files
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    entry = _entry(store, workspace, setting, command)
    if entry is not None:
        store.commands.remove(entry)
    store.commands.append(
        TrustedCommand(workspace=str(Path(workspace).resolve()), setting=setting, command=command, approved_at=now, files=files)
    )


def untrusted(workspace: Path, setting: str, commands: Sequence[str], store: TrustStore | None = None) -> list[str]:
    store = store if store is not None else load_store()
    return [c for c in commands if not is_trusted(store, workspace, setting, c)]


def _terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _ask_on_terminal(question: str) -> bool:
    sys.stderr.write(question)
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def describe_file(path: str, fingerprint: str) -> str:
    """One covered file as a line shows it (control characters escaped)."""
    shown = visible(path, one_line=True)
    if fingerprint.startswith("sha256:"):
        return f"{shown}  (sha256 {fingerprint[7:19]}…)"
    if fingerprint.startswith(OUTSIDE):
        return f"{shown} -> {visible(fingerprint[len(OUTSIDE):], one_line=True)}  (outside the workspace: yours, not read)"
    if fingerprint == ABSENT:
        return f"{shown}  (does not exist; if it appears, cog asks again)"
    if fingerprint.startswith("tree:"):
        return f"{shown}  ({fingerprint.split(':')[1]} entries; if any changes, cog asks again)"
    return f"{shown}  ({fingerprint})"


def question(workspace: Path, setting: str, command: str, checked: Review | None = None, *, source: str = "pyproject.toml") -> str:
    """The prompt for ``command``: the command line and each workspace file it runs, every
    control character shown escaped (a ``\\r ESC[2K`` in the command would otherwise wipe what
    precedes it)."""
    checked = checked or Review(command, command_files(workspace, command), approved=False)
    lines = [
        f"cog: {visible(str(workspace), one_line=True)}/{describe_source(source, setting)} "
        + ("wants cog to connect to this MCP server (with your sign-in to it, if any):" if command.startswith(("http://", "https://")) else "wants to run this command on this machine, outside the sandbox:"),
        f"    {visible(command, one_line=True)}",
    ]
    if checked.changed:
        lines.append(f"  changed since you approved it: {', '.join(visible(p, one_line=True) for p in checked.changed)}")
    if checked.files:
        lines.append("  it runs these workspace files (approved as they are now):")
        lines += [f"    {describe_file(path, fp)}" for path, fp in checked.files.items()]
    lines.append("Allow it (remembered until the command or these files change)? [y/N] ")
    return "\n".join(lines)


def refusal(workspace: Path, setting: str, checked: Review, *, source: str = "pyproject.toml") -> str:
    """Why ``checked.command`` does not start off a terminal, and what to do."""
    where = (f"[tool.cog] {setting}" if source == "pyproject.toml" else setting) + f" in {workspace}/{source}"
    yours = ("put the hook in your own ~/.config/cog/config.toml" if setting.startswith("hooks.") else "add the server yourself with cog mcp add NAME URL"
             if setting.startswith("mcp_servers.") else "pass the server yourself with --mcp")
    if checked.changed:
        return (
            f"not starting {checked.command!r} from {where}: {', '.join(checked.changed)} changed since you approved it "
            "(a test or an edit may have rewritten it). Review the change, then run `cog trust` in this workspace "
            f"on a terminal to approve it again, or {yours}"
        )
    return (
        f"not starting {checked.command!r} from {where}: a workspace's commands run only once you approved them. "
        f"Run `cog trust` in this workspace on a terminal to review and approve it, or {yours}"
    )


def require_trusted(
    workspace: Path,
    setting: str,
    commands: Sequence[str],
    *,
    ask: Callable[[str], bool] | None = None,
    interactive: bool | None = None,
    source: str = "pyproject.toml",
) -> dict[str, dict[str, str]]:
    """Each command → the files it runs, as approved, once every one is approved (asking on a
    terminal, remembering a yes); raise :class:`ConfigError` naming the first refused or
    unapprovable one (and its changed files) otherwise."""
    store = load_store()
    reviews = [review(store, workspace, setting, c) for c in commands]
    approved = {r.command: r.files for r in reviews}
    if not (pending := [r for r in reviews if not r.approved]):
        return approved
    interactive = _terminal() if interactive is None else interactive
    ask = ask or _ask_on_terminal
    for checked in pending:
        if not interactive:
            raise ConfigError(refusal(workspace, setting, checked, source=source))
        if not ask(question(workspace, setting, checked.command, checked, source=source)):
            raise ConfigError(f"not starting {checked.command!r} from [tool.cog] {setting}: not approved "
                              f"(approve it with `cog trust`, or remove it from {source})")
        if command_files(workspace, checked.command) != checked.files:  # changed while the person read the question
            raise ConfigError(f"not starting {checked.command!r} from [tool.cog] {setting}: the files it runs changed while "
                              "you were asked; run `cog trust` to review them again")
        approve(store, workspace, setting, checked.command, checked.files)
        save_store(store)
    return approved
