"""The workspace's own settings files: ``cog.toml`` at its root (any project; the keys at the top
level) and ``[tool.cog]`` in its ``pyproject.toml``, read as hostile input.

When both set a key, ``cog.toml`` wins and a one-line warning names the key and both files. Neither
file is read through a link out of the workspace; every value is checked (type, range, length) and
a bad one is a :class:`ConfigError` naming the key, the file and the fix. :mod:`cogcli.settings.load`
puts these under the person's flags and environment.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Literal


from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from cogcli.contract.errors import ConfigError
from cogcli.settings.hook_tables import FIX as HOOKS_FIX, HookTables, check_tables
from cogcli.settings.remote_servers import WorkspaceRemoteServer, check_servers
from cogcli.settings.options import (  # noqa: F401 (the bounds are the settings' own, declared once; re-exported)
    CACHE_TTLS,
    DEFAULT_MAX_STEPS,
    MAX_CONTEXT_WINDOW,
    MAX_STEPS_LIMIT,
    MAX_TIMEOUT,
    MIN_CONTEXT_WINDOW,
    SANDBOX_MODES,
)

log = logging.getLogger("cogcli")

SandboxSetting = Literal["auto", "on", "off"]
CacheTtlSetting = Literal[CACHE_TTLS]  # type: ignore[valid-type] (the settings' own choices: Literal["5m", "1h"])
#: the most model prices a workspace's ``prices`` table may hold, and the highest price it may
#: name (USD per million tokens): a table, not a database
MAX_PRICES = 200
MAX_PRICE = 10_000.0
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
#: what to do about a bad value, per key (said after what is wrong with it)
_FIXES: dict[str, str] = {
    "model": 'give provider:model, e.g. model = "openai:gpt-4o-mini"',
    "test_command": 'give the shell command that runs the tests, e.g. test_command = "go test ./..."',
    "max_steps": f"give a whole number of steps from 1 to {MAX_STEPS_LIMIT:,} (default {DEFAULT_MAX_STEPS})",
    "timeout": f"give the seconds one tool call may take, more than 0 and at most {MAX_TIMEOUT:,} (a day)",
    "mcp_servers": 'give a list of command lines, e.g. mcp_servers = ["npx -y @modelcontextprotocol/server-memory"]',
    "remote_servers": 'give a table per server with its url, e.g. [mcp_servers.docs] url = "https://mcp.example.com/mcp"',
    "sandbox": 'give "auto" or "on" (the workspace cannot turn the sandbox off: use --sandbox off)',
    "secret_globs": 'give a list of globs, e.g. secret_globs = ["config/credentials.*"]',
    "pass_env": 'give a list of variable names, e.g. pass_env = ["DATABASE_URL"]',
    "runner": "give one of pytest, go, vitest, jest, node, cargo (or test_command for any other)",
    "instruction_files": 'give a list of file names looked for in each directory, e.g. instruction_files = ["CLAUDE.md"]',
    "instruction_budget": "give the bytes of instruction files the model reads, from 0 (none) to 1048576 (1 MiB)",
    "context_window": f"give the model's context window in tokens, from {MIN_CONTEXT_WINDOW:,} to {MAX_CONTEXT_WINDOW:,}",
    "cache_ttl": 'give "5m" (the default) or "1h" (Anthropic\'s 1-hour prompt cache: writes cost 2× the input price)',
    "prompt_cache_key": "give true (send the thread id as prompt_cache_key to an OpenAI-compatible server) or false",
    "prices": (
        'give a table per model of USD per million tokens, e.g. [prices."my-model"] with input = 1.0, output = 4.0, '
        f"cache_read = 0.1, cache_write = 1.25 (each from 0 to {MAX_PRICE:,.0f}; at most {MAX_PRICES} models)"
    ),
    "hooks": HOOKS_FIX + " (a workspace's hooks run only once you approve them with `cog trust`)",
}


class PriceSetting(BaseModel):
    """One model's prices in a workspace's ``prices`` table (USD per million tokens)."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)  # built when a cog.toml sets prices, not at start-up

    input: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    output: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    #: default: the input price (no discount)
    cache_read: float | None = Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False)
    #: default: the input price (no surcharge)
    cache_write: float | None = Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False)


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


def check_prices(prices: dict[str, PriceSetting]) -> dict[str, PriceSetting]:
    """A ``prices`` table (the workspace's or the person's): at most :data:`MAX_PRICES` models, each
    name plain text."""
    if len(prices) > MAX_PRICES:
        raise ValueError(f"{len(prices):,} models are more than the {MAX_PRICES} cog takes")
    for name in prices:
        _no_control(_plain_text(name, "a model name", MAX_MODEL_CHARS), "a model name")
        if not name.strip():
            raise ValueError("a model name is empty")
    return prices


class CogConfig(BaseModel):
    """The workspace's settings (``cog.toml``, or ``[tool.cog]`` in ``pyproject.toml``). Unknown
    keys are warned about (a newer cog may know them). Strict: TOML has types, so ``max_steps =
    true`` or ``timeout = "10"`` is an error rather than a guess."""

    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)  # built when a config is read, not at start-up

    # list defaults are plain ``[]`` (pydantic copies them for each instance): ``default_factory=list``
    # has pydantic read ``list``'s text signature, which compiles tokenize's regex (~2.5 ms) at import
    model: str | None = None
    test_command: str | None = None
    max_steps: int | None = Field(default=None, ge=1, le=MAX_STEPS_LIMIT)
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT, allow_inf_nan=False)
    mcp_servers: list[str] = []
    #: ``[mcp_servers.NAME]`` tables (a URL each): connected to once the person approved the URL
    remote_servers: dict[str, WorkspaceRemoteServer] = {}
    sandbox: SandboxSetting | None = None
    secret_globs: list[str] = []
    pass_env: list[str] = []
    runner: RunnerSetting | None = None
    instruction_files: list[str] = []
    #: at most 1 MiB: a workspace's own settings must not fill the model's context with instructions
    instruction_budget: int | None = Field(default=None, ge=0, le=1024 * 1024)
    context_window: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW, le=MAX_CONTEXT_WINDOW)
    #: how long Anthropic keeps the prompt cache: "5m" (default) or "1h" (writes cost 2× input)
    cache_ttl: CacheTtlSetting | None = None
    #: send the thread id as ``prompt_cache_key`` (default: only to api.openai.com)
    prompt_cache_key: bool | None = None
    #: ``diagnostics = false``: no checks after file changes here; ``diagnostics_off``: checkers left out
    diagnostics: bool | None = None
    diagnostics_off: list[str] = []
    #: model name → its prices, adding to or overriding :data:`cogcli.settings.prices.PRICES`
    prices: dict[str, PriceSetting] = {}
    #: hook commands per event (:mod:`cogcli.hooks`): they run only once the person approved them (``cog trust``)
    hooks: HookTables = {}
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

    @model_validator(mode="before")
    @classmethod
    def _named_servers(cls, data: Any) -> Any:
        """``[mcp_servers.NAME]`` tables are remote servers; ``mcp_servers = [...]`` stays commands."""
        if isinstance(data, dict) and isinstance(data.get("mcp_servers"), dict):
            data = {**data, "remote_servers": data["mcp_servers"]}
            del data["mcp_servers"]
        return data

    @field_validator("remote_servers")
    @classmethod
    def _remote(cls, servers: dict[str, WorkspaceRemoteServer]) -> dict[str, WorkspaceRemoteServer]:
        check_servers(servers)  # type: ignore[arg-type]
        return servers

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
            from workspace_tools.workspace.listing import glob_regex  # only when there are globs to check

            try:
                glob_regex(glob)
            except re.error as exc:
                raise ValueError(f"the glob {glob!r} cannot be read ({exc})") from None
        return globs

    @field_validator("pass_env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        from workspace_tools.sandbox.environment import is_variable_name  # here: read only when a workspace sets it

        for name in _few(names, "names"):
            if not is_variable_name(name) or len(name) > 256:
                raise ValueError(f"{name[:80]!r} is not a variable name (letters, digits and _, not starting with a digit)")
        return names

    @field_validator("prices")
    @classmethod
    def _price_names(cls, prices: dict[str, PriceSetting]) -> dict[str, PriceSetting]:
        return check_prices(prices)

    @field_validator("hooks")
    @classmethod
    def _hooks(cls, tables: HookTables) -> HookTables:
        return check_tables(tables)

    @field_validator("instruction_files")
    @classmethod
    def _plain_names(cls, names: list[str]) -> list[str]:
        for name in _few(names, "names", MAX_INSTRUCTION_NAMES):
            if not name or "/" in name or "\\" in name or name in (".", "..") or len(name) > 255 or _CONTROL.search(name):
                raise ValueError(f"{name[:80]!r} is not a file name")
        return names


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
    for key in table:  # said before the bad values, so a mistyped key is seen with them
        if key not in CogConfig.model_fields and key != "allow":  # a stranger's allow list: config._allow says why it is ignored
            warn_unknown(str(key), list(CogConfig.model_fields), f"{'under [tool.cog] ' if where else ''}in {path}")
    try:
        return CogConfig.model_validate(table)
    except ValidationError as exc:
        raise ConfigError(every_error(exc, path, _FIXES, where)) from None


def every_error(exc: ValidationError, path: Path, fixes: dict[str, str], where: str = "") -> str:
    """Every bad value of a settings file at once, a line each: the key, the file, what is wrong
    and what to give instead (a key with several errors: its first)."""
    lines: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        loc = err.get("loc", ())
        shown = ".".join(str(p) for p in loc)
        if shown in lines:
            continue
        msg = str(err.get("msg")).removeprefix("Value error, ")
        fix = fixes.get(str(loc[0]) if loc else "")
        lines[shown] = f"{where}{shown} in {path}: {msg}" + (f"; {fix}" if fix else "")
    return "\n".join(lines.values())


def warn_unknown(key: str, known: list[str], where: str) -> None:
    """The warning for a key no setting has: the closest known key when one is close (``modle``,
    ``test-command``), then every known key."""
    import difflib

    plain = key.strip().lower().replace("-", "_")
    close = [plain] if plain in known else difflib.get_close_matches(plain, known, n=1, cutoff=0.6)
    if close:
        log.warning("unknown key %r %s is ignored: did you mean %s?", key[:80], where, close[0])
    else:
        log.warning("unknown key %r %s is ignored (known: %s)", key[:80], where, ", ".join(known))


def _workspace_text(root: Path, path: Path) -> str | None:
    """The text of the settings file ``path`` in the workspace ``root``, or None when there is
    none. Read as the tools read a workspace file (:meth:`Workspace.resolve`, then
    :func:`open_in_workspace`): a link that leads out of the workspace is not followed (a warning
    says so and the file is skipped), nor is a folder swapped for a link meanwhile."""
    if not os.path.lexists(path):
        return None
    import stat

    from cogcli.contract.errors import ToolCallError
    from workspace_tools.workspace.paths import Workspace
    from workspace_tools.text.textfile import open_in_workspace

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
