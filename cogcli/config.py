"""Settings for a command: flags, then ``COG_*`` environment variables, then the workspace's own
settings, then defaults. Flags win.

The workspace's settings live in ``cog.toml`` at its root (any project: Go, Node, Rust, …; the keys
at the top level) or under ``[tool.cog]`` in its ``pyproject.toml``. When both set a key, ``cog.toml``
wins and a one-line warning names the key and both files; keys set in only one of them apply.

    [tool.cog]               # in pyproject.toml; in cog.toml the same keys without this header
    model = "openai:gpt-4o-mini"
    test_command = "pytest -q"
    runner = "go"            # force run_tests' runner: pytest | go | vitest | jest | node | cargo
    max_steps = 30           # 1 … 10,000
    timeout = 120            # seconds per tool call (at most a day)
    mcp_servers = ["npx -y @modelcontextprotocol/server-memory"]
    sandbox = "auto"         # run_tests under bubblewrap: auto | on | off
    secret_globs = ["config/credentials.*"]   # more files the tools keep away from (besides .env, keys, …)
    instruction_files = ["CLAUDE.md"]   # read per directory after AGENTS.override.md and AGENTS.md
    instruction_budget = 32768   # bytes of instruction files the model reads; 0 reads none
    context_window = 128000      # the model's context window in tokens, when cog does not know it (1,024 … 10,000,000)
    pass_env = ["DATABASE_URL"]  # more variables the tests get (never credential-named ones; --pass-env for those)

The workspace is not trusted, whichever file holds its settings: its ``mcp_servers`` start only once
the person approved them (:mod:`cogcli.trust`), its ``sandbox = "off"`` is ignored (``--sandbox off``
or ``COG_SANDBOX`` turn the sandbox off), its ``pass_env`` never passes a credential, and a settings
file that is a link leading out of the workspace is not read. Every value is checked (type, range,
length): a bad one is a :class:`ConfigError` naming the key, the file and the fix.

Environment: ``COG_MODEL``, ``COG_TEST_COMMAND``, ``COG_MAX_STEPS``, ``COG_TIMEOUT``, ``COG_SANDBOX``,
``COG_CONTEXT_WINDOW``.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from cogcli.errors import CogError, ConfigError

log = logging.getLogger("cogcli")

DEFAULT_MAX_STEPS = 25
SANDBOX_MODES = ("auto", "on", "off")
#: the smallest context window cog takes (--context-window says the same: cli.py keeps the numbers to import nothing)
MIN_CONTEXT_WINDOW = 1024
#: the largest context window cog takes, in tokens (--context-window says the same, see above): no
#: model reads more, and a window past it only hides the budget compaction keeps
MAX_CONTEXT_WINDOW = 10_000_000
#: the most steps a run may be given: a workspace must not buy itself an endless run
MAX_STEPS_LIMIT = 10_000
#: the longest per-call timeout, in seconds (a day): every call ends within its timeout
MAX_TIMEOUT = 24 * 60 * 60
SandboxSetting = Literal["auto", "on", "off"]
RunnerSetting = Literal["pytest", "go", "vitest", "jest", "node", "cargo"]

#: the settings file of any project, at the workspace root (the keys at its top level)
COG_TOML = "cog.toml"
PYPROJECT = "pyproject.toml"
#: a settings file larger than this is no settings file (and is not read whole into memory)
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: limits on the workspace's strings and lists: what a real project needs, many times over
MAX_COMMAND_CHARS = 8192
MAX_MODEL_CHARS = 512
MAX_LIST_ITEMS = 200
MAX_GLOB_CHARS = 256
MAX_INSTRUCTION_NAMES = 20
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

NO_MODEL_MESSAGE = """\
no model configured. Pick one of:
  cog edit --model openai:gpt-4o-mini "…"        with OPENAI_API_KEY set (OPENAI_BASE_URL for other OpenAI-compatible servers)
  cog edit --model anthropic:claude-sonnet-4-5 "…"   with ANTHROPIC_API_KEY set
  cog edit --model ollama:llama3.1 "…"            a local Ollama server, no key
  cog edit --model replay:fixtures/cassettes/calc_fix.jsonl "…"   the offline demo (in a copy of fixtures/calc)
or set it once: export COG_MODEL=openai:gpt-4o-mini, or model = "…" in cog.toml (or under [tool.cog] in pyproject.toml)"""

#: what to do about a bad value, per key (said after what is wrong with it)
_FIXES: dict[str, str] = {
    "model": 'give provider:model, e.g. model = "openai:gpt-4o-mini"',
    "test_command": 'give the shell command that runs the tests, e.g. test_command = "go test ./..."',
    "max_steps": f"give a whole number of steps from 1 to {MAX_STEPS_LIMIT:,} (default {DEFAULT_MAX_STEPS})",
    "timeout": f"give the seconds one tool call may take, more than 0 and at most {MAX_TIMEOUT:,} (a day)",
    "mcp_servers": 'give a list of command lines, e.g. mcp_servers = ["npx -y @modelcontextprotocol/server-memory"]',
    "sandbox": 'give "auto" or "on" (the workspace cannot turn the sandbox off: use --sandbox off)',
    "secret_globs": 'give a list of globs, e.g. secret_globs = ["config/credentials.*"]',
    "pass_env": 'give a list of variable names, e.g. pass_env = ["DATABASE_URL"]',
    "runner": "give one of pytest, go, vitest, jest, node, cargo (or test_command for any other)",
    "instruction_files": 'give a list of file names looked for in each directory, e.g. instruction_files = ["CLAUDE.md"]',
    "instruction_budget": "give the bytes of instruction files the model reads, from 0 (none) to 1048576 (1 MiB)",
    "context_window": f"give the model's context window in tokens, from {MIN_CONTEXT_WINDOW:,} to {MAX_CONTEXT_WINDOW:,}",
}


def _plain_text(value: str, what: str, limit: int) -> str:
    if len(value) > limit:
        raise ValueError(f"{what} is {len(value):,} characters long, more than the {limit:,} cog takes (it starts {value[:40]!r})")
    if "\x00" in value:
        raise ValueError(f"{what} holds a NUL byte ({value[:80]!r})")
    return value


def _no_control(value: str, what: str) -> str:
    if _CONTROL.search(value):
        raise ValueError(f"{what} holds a control character ({value[:80]!r})")
    return value


def _few(items: list[str], what: str, limit: int = MAX_LIST_ITEMS) -> list[str]:
    if len(items) > limit:
        raise ValueError(f"{len(items):,} {what} are more than the {limit:,} cog takes")
    return items


class CogConfig(BaseModel):
    """The workspace's settings (``cog.toml``, or ``[tool.cog]`` in ``pyproject.toml``). Unknown
    keys are warned about (a newer cog may know them). Strict: TOML has types, so ``max_steps =
    true`` or ``timeout = "10"`` is an error rather than a guess."""

    model_config = ConfigDict(extra="allow", strict=True)

    # list defaults are plain ``[]`` (pydantic copies them for each instance): ``default_factory=list``
    # has pydantic read ``list``'s text signature, which compiles tokenize's regex (~2.5 ms) at import
    model: str | None = None
    test_command: str | None = None
    max_steps: int | None = Field(default=None, ge=1, le=MAX_STEPS_LIMIT)
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT, allow_inf_nan=False)
    mcp_servers: list[str] = []
    sandbox: SandboxSetting | None = None
    secret_globs: list[str] = []
    pass_env: list[str] = []
    runner: RunnerSetting | None = None
    instruction_files: list[str] = []
    #: at most 1 MiB: a workspace's own settings must not fill the model's context with instructions
    instruction_budget: int | None = Field(default=None, ge=0, le=1024 * 1024)
    context_window: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW, le=MAX_CONTEXT_WINDOW)
    #: key → the file it was read from ("cog.toml" or "pyproject.toml")
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def sources(self) -> dict[str, str]:
        """Which file each key that is set came from: ``{"test_command": "cog.toml", …}``."""
        return self._sources

    @field_validator("model")
    @classmethod
    def _model_name(cls, name: str | None) -> str | None:
        if name is not None:
            _no_control(_plain_text(name, "the model name", MAX_MODEL_CHARS), "the model name")
            if not name.strip():
                raise ValueError("the model name is empty")
        return name

    @field_validator("test_command")
    @classmethod
    def _command(cls, command: str | None) -> str | None:
        if command is not None:
            _plain_text(command, "the command", MAX_COMMAND_CHARS)
            if not command.strip():
                raise ValueError("the command is empty")
        return command

    @field_validator("mcp_servers")
    @classmethod
    def _commands(cls, commands: list[str]) -> list[str]:
        for command in _few(commands, "servers", 32):
            _plain_text(command, "a command line", MAX_COMMAND_CHARS)
            if not command.strip():
                raise ValueError("a command line is empty")
        return commands

    @field_validator("secret_globs")
    @classmethod
    def _globs(cls, globs: list[str]) -> list[str]:
        for glob in _few(globs, "globs"):
            _no_control(_plain_text(glob, f"the glob {glob[:40]!r}", MAX_GLOB_CHARS), f"the glob {glob[:40]!r}")
            from workspace_tools.listing import glob_regex  # only when there are globs to check

            try:
                glob_regex(glob)
            except re.error as exc:
                raise ValueError(f"the glob {glob!r} cannot be read ({exc})") from None
        return globs

    @field_validator("pass_env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in _few(names, "names"):
            if not _ENV_NAME.match(name) or len(name) > 256:
                raise ValueError(f"{name[:80]!r} is not a variable name (letters, digits and _, not starting with a digit)")
        return names

    @field_validator("instruction_files")
    @classmethod
    def _plain_names(cls, names: list[str]) -> list[str]:
        for name in _few(names, "names", MAX_INSTRUCTION_NAMES):
            if not name or "/" in name or "\\" in name or name in (".", "..") or len(name) > 255 or _CONTROL.search(name):
                raise ValueError(f"{name[:80]!r} is not a file name")
        return names


@dataclass(frozen=True)
class Settings:
    root: Path
    model: str | None
    #: where ``model`` came from: "--model", "COG_MODEL", "cog.toml", "pyproject.toml" or None
    model_source: str | None
    test_command: str | None
    max_steps: int
    timeout: float | None
    mcp_servers: list[str] = field(default_factory=list)
    #: how run_tests runs the tests: "auto" (bubblewrap when it works), "on" or "off"
    sandbox: SandboxSetting = "auto"
    #: globs of files the tools treat as secrets, on top of the built-in ones (``secret_globs``)
    secret_globs: tuple[str, ...] = ()
    #: secret-looking paths the tools may read all the same (``--allow-secret PATH``)
    allow_secrets: tuple[str, ...] = ()
    #: where ``mcp_servers`` came from: "--mcp" (the person's) or the workspace's file, "cog.toml"
    #: or "pyproject.toml" (needs approval: see :attr:`mcp_needs_approval`)
    mcp_source: str | None = None
    #: variables the person passes to the tests (``--pass-env``)
    pass_env: tuple[str, ...] = ()
    #: variables the workspace asks for (``pass_env`` in its settings; never credential-named ones)
    workspace_pass_env: tuple[str, ...] = ()
    #: more paths tests may write in the sandbox (``--sandbox-writable``)
    sandbox_writable: tuple[str, ...] = ()
    #: the test runner run_tests uses instead of the ones it finds (``runner``)
    runner: str | None = None
    #: names read per directory after AGENTS.override.md and AGENTS.md (``instruction_files``)
    instruction_files: tuple[str, ...] = ()
    #: bytes of instruction files the model reads (0: none; ``--no-instructions`` sets 0)
    instruction_budget: int = 32 * 1024
    #: the model's context window in tokens from ``--context-window``, ``COG_CONTEXT_WINDOW`` or
    #: ``context_window`` in the settings (None: the table of known models, or what the provider reports)
    context_window: int | None = None
    #: which workspace file each of its settings came from: ``{"test_command": "cog.toml", …}``
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def mcp_needs_approval(self) -> bool:
        """Whether ``mcp_servers`` came from anywhere but the person's ``--mcp``: such commands
        start only once approved (:func:`cogcli.trust.require_trusted`)."""
        return bool(self.mcp_servers) and self.mcp_source != "--mcp"


def find_workspace(start: Path | str | None = None) -> Path:
    """The git top level of ``start`` (default: the current directory).

    Found by looking for ``.git`` (a directory, or a file in a worktree) upwards, so no git
    process and no gitpython are needed to answer (:func:`workspace_tools.hostfiles.repository`). A folder given explicitly (``-C DIR``) that
    is in no repository is the workspace itself; the current directory outside a repository is
    a :class:`ConfigError` that offers ``-C`` and ``git init``, rather than quietly making
    whatever folder cog was started in a workspace."""
    here = Path(start or os.getcwd()).expanduser().resolve()
    if not here.is_dir():
        raise ConfigError(f"workspace directory {str(here)!r} does not exist (check -C)")
    from workspace_tools.hostfiles import repository

    found = repository(here)  # the one decision of which repository (a .git naming another one is none)
    if found is not None:
        return found.work_tree
    if start is not None:
        return here
    raise ConfigError(
        f"{str(here)!r} is not in a git repository, and cog works on one (git_diff, undo and the change summary need it). "
        f"Run cog inside a repository, point it at one with -C path/to/repo, make this folder one with `git init`, "
        f"or use this folder as it is with -C ."
    )


def describe_source(file: str, key: str) -> str:
    """How a message names a setting: ``cog.toml mcp_servers`` or ``pyproject.toml [tool.cog] mcp_servers``."""
    return f"{file} [tool.cog] {key}" if file == PYPROJECT else f"{file} {key}"


def config_source(root: Path, key: str) -> str | None:
    """The workspace file ``key`` is set in, "cog.toml" or "pyproject.toml" (None: neither), for
    messages that name where a setting came from (``cog trust``, the approval prompt)."""
    return read_config(root).sources.get(key)


def read_config(root: Path) -> CogConfig:
    """The workspace's settings: ``root/cog.toml`` (top level) over ``[tool.cog]`` of
    ``root/pyproject.toml``, key by key (empty when neither has any)."""
    from_pyproject = _read_file(root, PYPROJECT)
    from_cog = _read_file(root, COG_TOML)
    if from_cog is None and from_pyproject is None:
        return CogConfig()
    if from_cog is None or from_pyproject is None:
        config, name = (from_cog, COG_TOML) if from_cog is not None else (from_pyproject, PYPROJECT)
        assert config is not None
        config._sources = {key: name for key in _set_keys(config)}
        return config
    both = _set_keys(from_pyproject) & _set_keys(from_cog)
    for key in sorted(both):
        log.warning("%s is set in both %s and %s [tool.cog]: the one in %s is used", key, COG_TOML, PYPROJECT, COG_TOML)
    merged = from_pyproject.model_copy(update={key: getattr(from_cog, key) for key in _set_keys(from_cog)})
    merged._sources = {**{key: PYPROJECT for key in _set_keys(from_pyproject)}, **{key: COG_TOML for key in _set_keys(from_cog)}}
    return merged


def _set_keys(config: CogConfig) -> set[str]:
    return {key for key in config.model_fields_set if key in CogConfig.model_fields}


def _read_file(root: Path, name: str) -> CogConfig | None:
    """The settings in ``root/name`` (None when it has none), validated; errors name the file."""
    path = root / name
    text = _workspace_text(root, path)
    if text is None:
        return None
    import tomllib

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        why = exc if isinstance(exc, tomllib.TOMLDecodeError) else "it is nested too deeply"
        raise ConfigError(f"{path} is not valid TOML: {why}") from None
    if name == PYPROJECT:
        tool = data.get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(f"[tool] in {path} must be a table (write [tool.cog] and its keys below it)")
        if "cog" not in tool:
            return None
        table = tool["cog"]
        if not isinstance(table, dict):
            raise ConfigError(f"[tool.cog] in {path} must be a table")
        where = "[tool.cog] "
    else:
        table = data
        nested = table.get("tool")
        if isinstance(nested, dict) and "cog" in nested:
            raise ConfigError(
                f"{path} has a [tool.cog] table, but cog.toml holds its settings at the top level: "
                "remove the [tool.cog] line so its keys stand at the top of the file"
            )
        where = ""
    try:
        config = CogConfig.model_validate(table)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = err.get("loc", ())
        key = str(loc[0]) if loc else ""
        shown = ".".join(str(p) for p in loc)
        msg = str(err.get("msg")).removeprefix("Value error, ")
        fix = _FIXES.get(key)
        raise ConfigError(f"{where}{shown} in {path}: {msg}" + (f"; {fix}" if fix else "")) from None
    for key in config.model_extra or {}:
        log.warning("unknown key %r %sin %s is ignored (known: %s)", key[:80], "under [tool.cog] " if where else "", path, ", ".join(CogConfig.model_fields))
    return config


def _workspace_text(root: Path, path: Path) -> str | None:
    """The text of the settings file ``path`` in the workspace ``root``, or None when there is
    none. Read as the tools read a workspace file (:meth:`Workspace.resolve`, then
    :func:`open_in_workspace`): a link that leads out of the workspace is not followed (a warning
    says so and the file is skipped), nor is a folder swapped for a link meanwhile."""
    if not os.path.lexists(path):
        return None
    import stat

    from cogcli.errors import ToolCallError
    from workspace_tools.paths import Workspace
    from workspace_tools.textfile import open_in_workspace

    try:
        workspace = Workspace(root)
        real = workspace.resolve(path.name)
    except ToolCallError:
        target = os.path.realpath(path)
        log.warning(
            "%s is not read: it is a link to %s, outside the workspace (cog takes the workspace's settings only from files in it)",
            path, target,
        )
        return None
    if not os.path.lexists(real):
        return None  # a link to nothing
    try:
        fd = open_in_workspace(real, workspace.root)
    except ToolCallError as exc:
        log.warning("%s is not read: %s", path, exc.message)
        return None
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc.strerror or exc}); fix its permissions or remove it") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                return None
            log.warning("%s is not read: it is not a regular file (a pipe, socket or device)", path)
            return None
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES // (1024 * 1024)} MiB, too large to be a settings file; make it smaller")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: it is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def _env_number(name: str, kind: type[int] | type[float], limit: float) -> Any:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ConfigError(f"{name} must be {what}, got {raw!r}") from None
    return _bounded(name, value, limit, raw)


def _bounded(name: str, value: float, limit: float, shown: Any = None) -> Any:
    """``value`` when it is a finite number above 0 and at most ``limit``; else a ConfigError naming ``name``."""
    shown = value if shown is None else shown
    if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a number greater than 0, got {shown!r}")
    if value > limit:
        raise ConfigError(f"{name} must be at most {limit:,}, got {shown!r}")
    return value


def _context_window(flag: int | None) -> int | None:
    """``--context-window``, else ``COG_CONTEXT_WINDOW``: both held to the same floor and ceiling
    as ``context_window`` in the settings (:data:`MIN_CONTEXT_WINDOW`, :data:`MAX_CONTEXT_WINDOW`)."""
    name, window = "--context-window", flag
    if window is None:
        name, raw = "COG_CONTEXT_WINDOW", os.environ.get("COG_CONTEXT_WINDOW", "").strip()
        if not raw:
            return None
        try:
            window = int(raw)
        except ValueError:
            raise ConfigError(f"COG_CONTEXT_WINDOW must be a whole number of tokens, got {raw[:40]!r}") from None
    if not MIN_CONTEXT_WINDOW <= window <= MAX_CONTEXT_WINDOW:
        raise ConfigError(
            f"{name} must be at least {MIN_CONTEXT_WINDOW} and at most {MAX_CONTEXT_WINDOW:,} (tokens), got {window:,}: "
            "give the model's context window, e.g. 128000"
        )
    return window


def _workspace_model(root: Path, spec: str, file: str) -> str:
    """A workspace's ``model``: a ``replay:`` cassette it names must be a file inside the workspace
    (resolved from its root, no link out): a workspace file never decides which of the host's
    files cog reads."""
    provider, _, path = spec.partition(":")
    if provider != "replay" or not path:
        return spec
    from workspace_tools.paths import Workspace

    try:
        inside = Workspace(root).resolve(path)
    except CogError as exc:
        raise ConfigError(
            f"{describe_source(file, 'model')} names the cassette {path!r}, which is not in the workspace "
            f"({exc.message}): a workspace's settings may replay only a cassette inside it. Pass it yourself with "
            "--model replay:PATH or COG_MODEL"
        ) from None
    return f"replay:{inside}"


def load_settings(
    root: Path,
    *,
    model: str | None = None,
    test_command: str | None = None,
    max_steps: int | None = None,
    timeout: float | None = None,
    mcp_servers: list[str] | None = None,
    sandbox: str | None = None,
    allow_secrets: list[str] | None = None,
    pass_env: list[str] | None = None,
    sandbox_writable: list[str] | None = None,
    context_window: int | None = None,
    instructions: bool = True,
) -> Settings:
    """Resolve every setting for a command run in ``root``: flag > environment > config > default."""
    config = read_config(root)
    sources = config.sources
    env_model = os.environ.get("COG_MODEL", "").strip() or None
    if model:
        chosen, source = model, "--model"
    elif env_model:
        chosen, source = env_model, "COG_MODEL"
    elif config.model:
        chosen, source = _workspace_model(root, config.model, sources.get("model", PYPROJECT)), sources.get("model", PYPROJECT)
    else:
        chosen, source = None, None
    if max_steps is not None:
        _bounded("--max-steps", max_steps, MAX_STEPS_LIMIT)
    if timeout is not None:
        _bounded("--timeout", timeout, MAX_TIMEOUT)
    return Settings(
        root=root,
        model=chosen,
        model_source=source,
        test_command=test_command or os.environ.get("COG_TEST_COMMAND", "").strip() or config.test_command,
        max_steps=max_steps or _env_number("COG_MAX_STEPS", int, MAX_STEPS_LIMIT) or config.max_steps or DEFAULT_MAX_STEPS,
        timeout=timeout or _env_number("COG_TIMEOUT", float, MAX_TIMEOUT) or config.timeout,
        mcp_servers=list(mcp_servers) if mcp_servers else list(config.mcp_servers),
        sandbox=_sandbox(sandbox, config),
        secret_globs=tuple(config.secret_globs),
        allow_secrets=tuple(allow_secrets or ()),
        mcp_source="--mcp" if mcp_servers else (sources.get("mcp_servers", PYPROJECT) if config.mcp_servers else None),
        pass_env=tuple(pass_env or ()),
        workspace_pass_env=tuple(config.pass_env),
        sandbox_writable=tuple(sandbox_writable or ()),
        runner=config.runner,
        instruction_files=tuple(config.instruction_files),
        instruction_budget=(config.instruction_budget if config.instruction_budget is not None else 32 * 1024) if instructions else 0,
        context_window=_context_window(context_window) or config.context_window,
        sources=dict(sources),
    )


def _sandbox(flag: str | None, config: CogConfig) -> SandboxSetting:
    env = os.environ.get("COG_SANDBOX", "").strip().lower() or None
    if env is not None and env not in SANDBOX_MODES:
        raise ConfigError(f"COG_SANDBOX must be auto, on or off, got {env!r}")
    from_config = config.sandbox
    if from_config == "off" and not (flag or env):
        file = config.sources.get("sandbox", PYPROJECT)
        log.warning(
            '%ssandbox = "off" in %s is ignored: the workspace cannot turn the test sandbox off '
            "(a test or the model could have written it). Use --sandbox off or COG_SANDBOX=off",
            "[tool.cog] " if file == PYPROJECT else "", file,
        )
        from_config = None
    chosen = flag or env or from_config or "auto"
    if chosen not in SANDBOX_MODES:
        raise ConfigError(f"--sandbox must be auto, on or off, got {chosen!r}")
    return chosen  # type: ignore[return-value]
