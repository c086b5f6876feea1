"""The person's own settings: ``$XDG_CONFIG_HOME/cog/config.toml`` (default
``~/.config/cog/config.toml``), below flags and ``COG_*`` variables and above the workspace's
``cog.toml`` / ``[tool.cog]`` (:mod:`cogcli.settings.options` has the layers).

    model = "anthropic:claude-sonnet-4-5"
    max_steps = 40
    timeout = 300                # seconds per tool call
    sandbox = "on"               # auto | on | off (the person may turn it off; a workspace may not)
    approval = "ask"             # ask | auto | stdin: what cog edit does before a call that writes or runs
    pass_env = ["DATABASE_URL"]  # variables every workspace's tests get (credential-named ones too)
    sandbox_writable = ["~/.cache/my-tool"]
    mcp_servers = ["npx -y @modelcontextprotocol/server-memory"]   # yours: they start unasked
    # or, named (cog mcp add NAME URL; not both forms in one file):
    # [mcp_servers.linear]
    # url = "https://mcp.linear.app/mcp"
    instructions = true
    context_window = 200000
    cache_ttl = "1h"
    prompt_cache_key = true
    [providers.openai]           # base URLs (OPENAI_BASE_URL / ANTHROPIC_BASE_URL still win)
    base_url = "http://localhost:8000/v1"
    api = "responses"            # openai only: a server that speaks the Responses API (COG_OPENAI_API wins)
    [prices."my-model"]          # USD per million tokens, over cog's table and the workspace's
    input = 1.0
    output = 4.0

The file is trusted, like the person's flags: its ``sandbox = "off"``, ``mcp_servers`` and
credential-named ``pass_env`` apply. It is never read from the workspace: a config file that is,
or leads through a link to, a file inside the workspace cog works on is not read (a warning says
so), since the model or a test could have written it. It is bounded (1 MiB) and typed: a bad value
is a :class:`~cogcli.contract.errors.ConfigError` naming the file, the key and the fix; an unknown key is
warned about (a newer cog may know it).

**Adding a section** (a table, e.g. ``[[hooks.pre_tool_use]]``, ``allow = […]``, ``[commands]``):
write a pydantic model for it (``ConfigDict(extra="forbid", strict=True)``, every string and list
bounded) and add one field with a default to :class:`PersonSections`; add what to do about a bad
value to :data:`FIXES`; then read ``person.sections.<name>`` in :func:`cogcli.settings.load.load_settings`
into a field of :class:`~cogcli.settings.load.Settings`. A plain setting (one value with a flag and a
variable) is declared in :mod:`cogcli.settings.options` instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cogcli.contract.errors import ConfigError
from cogcli.settings.hook_tables import FIX as HOOKS_FIX, HookTables, check_tables
from cogcli.settings.options import BY_NAME, SettingError, SettingFlags
from cogcli.settings.remote_servers import FIX as SERVERS_FIX, RemoteServer, check_servers
from cogcli.settings.workspace_file import MAX_PRICES, PriceSetting, check_prices, every_error, warn_unknown

log = logging.getLogger("cogcli")

CONFIG_NAME = "config.toml"
#: a config file larger than this is no config file (and is not read whole into memory)
MAX_PERSON_CONFIG_BYTES = 1024 * 1024
MAX_URL_CHARS = 2048

#: what to do about a bad value in a section, per section
FIXES: dict[str, str] = {
    "providers": (
        'give a table per provider (openai, anthropic, ollama) with base_url, e.g. [providers.openai] base_url = "http://localhost:8000/v1"; '
        '[providers.openai] may say api = "responses" or "chat"'
    ),
    "hooks": HOOKS_FIX,
    "mcp_servers": SERVERS_FIX,
    "prices": (
        'give a table per model of USD per million tokens, e.g. [prices."my-model"] with input = 1.0, output = 4.0, '
        f"cache_read = 0.1, cache_write = 1.25 (at most {MAX_PRICES} models)"
    ),
}


def config_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/cog`` when it is an absolute path, else ``~/.config/cog``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME", "").strip()
    folder = Path(base) if base and Path(base).is_absolute() else Path(env.get("HOME") or Path.home()) / ".config"
    return folder / "cog"


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The person's config file (it may not exist)."""
    return config_home(environ) / CONFIG_NAME


def shown_path(path: Path) -> str:
    """``path`` with the home folder as ``~`` (how messages and ``cog config`` name it)."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


class ProviderSetting(BaseModel):
    """One provider's table under ``[providers]``."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    base_url: str | None = Field(default=None, max_length=MAX_URL_CHARS)
    #: the API the provider speaks: ``openai`` only, "responses" (OpenAI's Responses API) or "chat"
    #: (Chat Completions); unset: the Responses API at api.openai.com, Chat Completions elsewhere
    api: Literal["responses", "chat"] | None = None

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        if url is not None:
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc or any(c < " " for c in url):
                raise ValueError(f"{url[:80]!r} is not an http:// or https:// URL")
        return url


class PersonSections(BaseModel):
    """The tables of the person's config (its plain settings are :mod:`cogcli.settings.options`'). Add a
    section here: one field with a default (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)  # built when a config is read, not at start-up

    #: provider → its base URL (below the provider's own variable, e.g. OPENAI_BASE_URL)
    providers: dict[Literal["openai", "anthropic", "ollama"], ProviderSetting] = {}
    #: model name → its prices (over cog's table and the workspace's ``prices``)
    prices: dict[str, PriceSetting] = {}
    #: event → the person's hooks (``[[hooks.PreToolUse]]``, :mod:`cogcli.hooks`); run by a
    #: session (:func:`cogcli.hooks.trust.session_hooks`, from ``Settings.person_hooks``)
    hooks: HookTables = {}
    #: name → a remote MCP server (``[mcp_servers.NAME]``, :mod:`cogcli.settings.remote_servers`);
    #: the list form ``mcp_servers = [...]`` is the plain setting of that name
    mcp_servers: dict[str, RemoteServer] = {}

    @field_validator("mcp_servers")
    @classmethod
    def _servers(cls, servers: dict[str, RemoteServer]) -> dict[str, RemoteServer]:
        return check_servers(servers)

    @field_validator("providers")
    @classmethod
    def _api_of_openai(cls, providers: dict[str, ProviderSetting]) -> dict[str, ProviderSetting]:
        for name, table in providers.items():
            if table.api is not None and name != "openai":
                raise ValueError(f"api is a setting of [providers.openai] only; remove it from [providers.{name}]")
        return providers

    @field_validator("hooks")
    @classmethod
    def _few_hooks(cls, tables: HookTables) -> HookTables:
        return check_tables(tables)

    @field_validator("prices")
    @classmethod
    def _few_prices(cls, prices: dict[str, PriceSetting]) -> dict[str, PriceSetting]:
        return check_prices(prices)


@dataclass
class PersonConfig:
    """What the person's config file says (empty when there is none)."""

    #: the file (None: none was read)
    path: Path | None = None
    #: its plain settings, checked as flags are (:mod:`cogcli.settings.options`)
    flags: SettingFlags = field(default_factory=SettingFlags)
    _sections: PersonSections | None = None

    @property
    def sections(self) -> PersonSections:
        """Its tables (``providers``, ``prices``, …)."""
        if self._sections is None:
            self._sections = PersonSections()
        return self._sections

    @property
    def label(self) -> str:
        """How settings from it are said to come from: ``~/.config/cog/config.toml``."""
        return shown_path(self.path) if self.path is not None else "config.toml"


def read_person_config(workspace: Path | None = None, environ: Mapping[str, str] | None = None) -> PersonConfig:
    """The person's config (empty when there is no file). ``workspace``: the folder cog works on,
    which the file must not be in (nor lead into through a link)."""
    path = config_path(environ)
    if not os.path.lexists(path):
        return PersonConfig()
    real = Path(os.path.realpath(path))
    if workspace is not None:
        root = Path(os.path.realpath(workspace))
        if real == root or root in real.parents or (path.parent.resolve() == root or root in path.parent.resolve().parents):
            log.warning(
                "%s is not read: it is in the workspace %s (a model or a test could have written it). "
                "Keep your config outside the folder cog works on (set XDG_CONFIG_HOME elsewhere)",
                path if real == path else f"{path} (a link to {real})", root,
            )
            return PersonConfig()
    if not real.is_file():
        if not real.exists():
            return PersonConfig()  # a link to nothing
        raise ConfigError(f"{path} is not a file; make it a TOML file of settings or remove it")
    try:
        with open(real, "rb") as f:
            data = f.read(MAX_PERSON_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc.strerror or exc}); fix its permissions or remove it") from None
    if len(data) > MAX_PERSON_CONFIG_BYTES:
        raise ConfigError(f"{path} is over 1 MiB, too large to be a settings file; make it smaller")
    return parse_person_config(data, path)


def parse_person_config(data: bytes, path: Path) -> PersonConfig:
    """``data`` (the file's bytes) as the person's config; errors name ``path``."""
    import tomllib

    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: it is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        why = exc if isinstance(exc, tomllib.TOMLDecodeError) else "it is nested too deeply"
        raise ConfigError(f"{path} is not valid TOML: {why}") from None
    shown = shown_path(path)
    values: dict[str, Any] = {}
    tables: dict[str, Any] = {}
    bad: list[str] = []  # every bad value, said at once
    for key, value in table.items():
        setting = BY_NAME.get(key)
        if key == "mcp_servers" and isinstance(value, dict):  # [mcp_servers.NAME] tables, not the list setting
            tables[key] = value
        elif setting is not None:
            if not setting.config:
                bad.append(
                    f"{key} in {path} is not a setting of your config file: give it with {setting.flag}"
                    + (" or in the workspace's cog.toml" if key == "test_command" else "")
                )
                continue
            try:
                values[key] = setting.check(value, f"{key} in {shown}")
            except SettingError as exc:
                bad.append(str(exc))
        elif key in PersonSections.model_fields:
            tables[key] = value
        else:
            warn_unknown(key, [s.name for s in BY_NAME.values() if s.config] + list(PersonSections.model_fields), f"in {path}")
    sections = None
    if tables:
        try:
            sections = PersonSections.model_validate(tables)
        except ValidationError as exc:
            bad.append(every_error(exc, path, FIXES))
    if bad:
        raise ConfigError("\n".join(bad))
    return PersonConfig(path=path, flags=SettingFlags(**values), _sections=sections)
