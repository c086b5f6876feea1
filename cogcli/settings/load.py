"""Settings for a command: flags, then ``COG_*`` environment variables, then the person's config
(``~/.config/cog/config.toml``, :mod:`cogcli.settings.person_file`), then the workspace's own settings,
then defaults. Flags win. Every setting a person gives is declared once in :mod:`cogcli.settings.options`
(its flag, variable, config key, bounds and the front ends it applies to); :func:`load_settings`
merges the layers into :class:`Settings`, and ``Settings.origins`` says where each came from
(``cog config`` shows it).

The workspace's settings live in ``cog.toml`` at its root (any project; the keys at the top level) or
under ``[tool.cog]`` in its ``pyproject.toml``; when both set a key, ``cog.toml`` wins (a warning says so).

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
    cache_ttl = "1h"             # Anthropic's prompt cache for an hour (writes 2× input) instead of 5 minutes
    prompt_cache_key = true      # send the thread id as prompt_cache_key (default: only to api.openai.com)
    [prices."my-model"]          # USD per million tokens, for the cost shown (adds to cog's table)
    input = 1.0
    output = 4.0
    cache_read = 0.1
    cache_write = 1.25

The workspace is not trusted, whichever file holds its settings: its ``mcp_servers`` start only once
the person approved them (:mod:`cogcli.settings.trust`), its ``sandbox = "off"`` is ignored (``--sandbox off``
or ``COG_SANDBOX`` turn the sandbox off), its ``pass_env`` never passes a credential, and a settings
file that is a link leading out of the workspace is not read. Every value is checked (type, range,
length): a bad one is a :class:`ConfigError` naming the key, the file and the fix.

Environment: ``COG_MODEL``, ``COG_TEST_COMMAND``, ``COG_MAX_STEPS``, ``COG_TIMEOUT``, ``COG_SANDBOX``,
``COG_CONTEXT_WINDOW``, ``COG_CACHE_TTL``, ``COG_PASS_ENV``, ``COG_SANDBOX_WRITABLE``, ``COG_APPROVAL``,
``COG_ALLOW`` (run_command patterns, ``;``-separated), ``COG_COMMAND_NETWORK``
(:data:`cogcli.settings.options.SETTINGS` is the list).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from cogcli.contract.errors import CogError, ConfigError
from cogcli.settings.options import BY_NAME, SETTINGS, UNSET, SettingError, SettingFlags, from_environment, from_flags
from cogcli.settings.person_file import PersonConfig, read_person_config
from cogcli.settings.workspace_file import (  # noqa: F401 (the workspace's settings, re-exported for callers)
    DEFAULT_MAX_STEPS,
    SANDBOX_MODES,
    MIN_CONTEXT_WINDOW,
    MAX_CONTEXT_WINDOW,
    MAX_STEPS_LIMIT,
    MAX_TIMEOUT,
    SandboxSetting,
    COG_TOML,
    PYPROJECT,
    CogConfig,
    describe_source,
    config_source,
    read_config,
)

log = logging.getLogger("cogcli")


def no_model_message(command: str = "cog edit", instruction: str = ' "…"') -> str:
    """What to say when no model is set, in the words of the front end the person used:
    ``cog edit --model … "…"``, ``cog chat --model …``."""
    choices = [
        ("openai:gpt-4o-mini", "with OPENAI_API_KEY set (OPENAI_BASE_URL for other OpenAI-compatible servers)"),
        ("anthropic:claude-sonnet-4-5", "with ANTHROPIC_API_KEY set"),
        ("ollama:llama3.1", "a local Ollama server, no key"),
        ("replay:fixtures/cassettes/calc_fix.jsonl", "the offline demo (in a copy of fixtures/calc)"),
    ]
    lines = [f"{command} --model {spec}{instruction}" for spec, _ in choices]
    width = max(len(line) for line in lines[:-1])
    shown = "\n".join(f"  {line.ljust(width)}   {note}" for line, (_, note) in zip(lines, choices))
    return (
        f"no model configured. Pick one of:\n{shown}\n"
        "or set it once: export COG_MODEL=openai:gpt-4o-mini, model = \"…\" in ~/.config/cog/config.toml (yours), "
        "or in the workspace's cog.toml (or under [tool.cog] in pyproject.toml)"
    )


NO_MODEL_MESSAGE = no_model_message()


@dataclass(frozen=True)
class Settings:
    """The settings of one workspace, merged from every source."""
    root: Path
    model: str | None
    #: where ``model`` came from: "--model", "COG_MODEL", "cog.toml", "pyproject.toml" or None
    model_source: str | None
    test_command: str | None
    max_steps: int
    timeout: float | None
    mcp_servers: list[str] = field(default_factory=list)
    #: variables for a server command of ``mcp_servers``, given apart from its command line (an
    #: editor's MCP servers over ACP): their values never appear in argv, ``ps`` or a message
    mcp_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: the person's named remote servers: name → :class:`cogcli.settings.remote_servers.RemoteServer`
    #: (``[mcp_servers.NAME]`` of their config.toml; theirs, so they connect unasked)
    remote_servers: Mapping[str, Any] = field(default_factory=dict)
    #: the workspace's named remote servers (``[mcp_servers.NAME]`` of its cog.toml): connected to
    #: only once the person approved each URL (``cog trust``); the person's own of a name win
    workspace_remote_servers: Mapping[str, Any] = field(default_factory=dict)
    #: how run_tests runs the tests: "auto" (bubblewrap when it works), "on" or "off"
    sandbox: SandboxSetting = "auto"
    #: globs of files the tools treat as secrets, on top of the built-in ones (``secret_globs``)
    secret_globs: tuple[str, ...] = ()
    #: secret-looking paths the tools may read all the same (``--allow-secret PATH``)
    allow_secrets: tuple[str, ...] = ()
    #: tools plan mode lets run though they are not read-only (``--plan-allow``; the person's only)
    plan_allow: tuple[str, ...] = ()
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
    #: how long Anthropic keeps the prompt cache: "5m" or "1h" (``COG_CACHE_TTL``, ``cache_ttl``)
    cache_ttl: str = "5m"
    #: send the thread id as ``prompt_cache_key`` (None: only to api.openai.com)
    prompt_cache_key: bool | None = None
    #: how much the model reasons: "off", "low", "medium" or "high" (``--reasoning``, ``COG_REASONING``, ``reasoning``)
    reasoning: str = "off"
    #: whether the model is sent images: "auto" (from its name), "on" or "off" (``--vision``, ``COG_VISION``, ``vision``)
    vision: str = "auto"
    #: model name → :class:`cogcli.settings.prices.Price`, over cog's own table (``prices``)
    prices: Mapping[str, Any] = field(default_factory=dict)
    #: the workspace's own hooks (``[[hooks.<Event>]]``): run only once the person approved them
    #: (:mod:`cogcli.hooks.trust`); the person's own are in their config.toml
    hooks: Mapping[str, Any] = field(default_factory=dict)
    #: the person's own hooks (``[hooks]`` of their config.toml, :mod:`cogcli.settings.person_file`)
    person_hooks: Mapping[str, Any] = field(default_factory=dict)
    #: which workspace file each of its settings came from: ``{"test_command": "cog.toml", …}``
    sources: Mapping[str, str] = field(default_factory=dict)
    #: whether ``mcp_servers`` are the person's (``--mcp`` or their config file), not the workspace's
    mcp_personal: bool = False
    #: ask | auto | stdin from ``--approval``/``--yes``, ``COG_APPROVAL`` or the person's config (None: the front end's default)
    approval: str | None = None
    #: provider → base URL from the person's config (below the provider's variable, e.g. OPENAI_BASE_URL)
    base_urls: Mapping[str, str] = field(default_factory=dict)
    #: provider → the API it speaks, from the person's config (``[providers.openai] api``; ``COG_OPENAI_API`` wins)
    provider_apis: Mapping[str, str] = field(default_factory=dict)
    #: setting → where its value came from: a flag ("--model"), a variable ("COG_MODEL"), the
    #: person's config ("~/.config/cog/config.toml"), the workspace's file ("cog.toml",
    #: "pyproject.toml") or "default"
    origins: Mapping[str, str] = field(default_factory=dict)
    #: the person's config file read (None: there was none)
    person_config: Path | None = None
    #: a run's budgets (``--max-tokens``, ``--max-cost`` in US dollars; :mod:`cogcli.loop.budgets`) and the
    #: JSON Schema file its final answer must match (``--output-schema``; :mod:`cogcli.loop.output_schema`):
    #: the person's (flags, COG_MAX_TOKENS / COG_MAX_COST, their config), never the workspace's
    max_tokens: int | None = None
    max_cost: float | None = None
    #: a schema file, or the schema itself (``cog batch`` reads it once for every task)
    output_schema: Path | Mapping[str, Any] | None = None
    #: the person's patterns of commands run_command runs without asking (``--allow``, ``COG_ALLOW``,
    #: ``allow`` in their config.toml; never the workspace's): :mod:`cogcli.contract.allow_list`
    allow: tuple[str, ...] = ()
    #: the person gives run_command the host's network (``--command-network``, ``COG_COMMAND_NETWORK=1``,
    #: ``command_network = true`` in their config.toml)
    command_network: bool = False
    #: the person gives run_tests' tests the host's network in the sandbox (``--test-network``,
    #: ``COG_TEST_NETWORK=1``, ``test_network = true`` in their config.toml; never the workspace's)
    test_network: bool = False
    keep_jobs: bool = False  #: the person's ``--keep-jobs`` (never the workspace's): :mod:`workspace_tools.shell.kept`
    #: the snapshots before commands keep the files git ignores too (``COG_UNDO_IGNORED=1``, ``undo_ignored = true``)
    undo_ignored: bool = False
    #: check file changes with the project's checkers, and the ones left out (docs/diagnostics.md)
    diagnostics: bool = True
    diagnostics_off: tuple[str, ...] = ()
    #: how many subagents (``task`` calls) run at once (``--max-subagents``; docs/subagents.md)
    max_subagents: int = 3

    @property
    def mcp_needs_approval(self) -> bool:
        """Whether ``mcp_servers`` came from the workspace's settings, not the person's (``--mcp``,
        their config file): such commands start only once approved (:func:`cogcli.settings.trust.require_trusted`)."""
        return bool(self.mcp_servers) and not (self.mcp_personal or self.mcp_source == "--mcp")


def find_workspace(start: Path | str | None = None) -> Path:
    """The git top level of ``start`` (default: the current directory).

    Found by looking for ``.git`` (a directory, or a file in a worktree) upwards, so no git
    process and no gitpython are needed to answer (:func:`workspace_tools.host.files.repository`). A folder given explicitly (``-C DIR``) that
    is in no repository is the workspace itself; the current directory outside a repository is
    a :class:`ConfigError` that offers ``-C`` and ``git init``, rather than quietly making
    whatever folder cog was started in a workspace."""
    here = Path(start or os.getcwd()).expanduser().resolve()
    if not here.is_dir():
        raise ConfigError(f"workspace directory {str(here)!r} does not exist (check -C)")
    from workspace_tools.host.files import repository

    found = repository(here)  # the one decision of which repository (a .git naming another one is none)
    if found is not None:
        return check_workspace(Path(found.work_tree))
    check_workspace(here)  # the home folder is never one, nor is the hint's -C . offered for it
    if start is not None:
        return here
    raise ConfigError(
        f"{str(here)!r} is not in a git repository, and cog works on one (git_diff, undo and the change summary need it). "
        f"Run cog inside a repository, point it at one with -C path/to/repo, make this folder one with `git init`, "
        f"or use this folder as it is with -C ."
    )


def check_workspace(root: Path) -> Path:
    """``root``, unless it is the home folder, ``/`` or a folder above the home: cog would list,
    search and write in everything the person has (a :class:`ConfigError`, exit 2, says so)."""
    home = Path(os.path.realpath(Path.home()))
    real = Path(os.path.realpath(root))
    if real == home or real in home.parents or real == Path(real.anchor):
        what = "your home folder" if real == home else "the root folder" if real == Path(real.anchor) else "a folder above your home"
        raise ConfigError(
            f"{str(root)!r} is {what}: cog will not make it a workspace (its tools would list, search and change "
            "everything in it). Run cog in a project folder, or point it at one with -C path/to/project"
        )
    return root


def _workspace_model(root: Path, spec: str, file: str) -> str:
    """A workspace's ``model``: a ``replay:`` cassette it names must be a file inside the workspace
    (resolved from its root, no link out): a workspace file never decides which of the host's
    files cog reads."""
    provider, _, path = spec.partition(":")
    if provider != "replay" or not path:
        return spec
    from workspace_tools.workspace.paths import Workspace

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
    flags: SettingFlags | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    person: PersonConfig | None = None,
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
    max_tokens: int | None = None,
    max_cost: float | None = None,
    output_schema: Path | Mapping[str, Any] | None = None,
    allow: list[str] | None = None,
    command_network: bool | None = None,
) -> Settings:
    """Resolve every setting for a command run in ``root``: flags > environment > the person's
    config > the workspace's settings > defaults (:mod:`cogcli.settings.options`).

    ``flags``: the flags given (the keywords below are the same, for callers that name a few);
    ``environ``: the variables to read (default ``os.environ``); ``person``: the person's config
    (default: read from ``$XDG_CONFIG_HOME/cog/config.toml``); ``output_schema``: the JSON Schema
    (a file, or the schema itself) the run's final answer must match (``--output-schema``)."""
    environ = os.environ if environ is None else environ
    try:
        named = from_flags({
            "model": model, "test_command": test_command, "max_steps": max_steps, "timeout": timeout,
            "mcp_servers": mcp_servers, "sandbox": sandbox, "allow_secrets": allow_secrets, "pass_env": pass_env,
            "sandbox_writable": sandbox_writable, "context_window": context_window, "instructions": None if instructions else False,
            "allow": allow, "command_network": command_network, "max_tokens": max_tokens, "max_cost": max_cost,
        })
        given = from_flags((flags or SettingFlags()).merge(named).given())  # checked here too: a caller may build flags itself
        env_layer = from_environment(environ)
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    if person is None:
        person = read_person_config(root, environ)
    config = read_config(root)
    layers = ((given, None), (env_layer, "env"), (person.flags, person.label))
    chosen: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for setting in SETTINGS:
        for layer, label in layers:
            value = layer.get(setting.name)
            if value is not UNSET:
                chosen[setting.name] = value
                origins[setting.name] = setting.flag if label is None else setting.env if label == "env" else label  # type: ignore[assignment]
                break

    def pick(name: str, workspace: Any, default: Any) -> Any:
        if name in chosen:
            return chosen[name]
        if workspace is not None and not (isinstance(workspace, (list, tuple, dict)) and not workspace):
            origins[name] = config.sources.get(name, PYPROJECT)
            return workspace
        origins[name] = "default"
        return default

    chosen_model = pick("model", config.model, None)
    if origins["model"] in (COG_TOML, PYPROJECT):
        chosen_model = _workspace_model(root, chosen_model, origins["model"])
    sandbox_mode = chosen["sandbox"] if "sandbox" in chosen else pick("sandbox", _workspace_sandbox(config), "auto")
    servers = pick("mcp_servers", tuple(config.mcp_servers), ())
    allow = chosen.get("instructions", True)
    budget = (config.instruction_budget if config.instruction_budget is not None else 32 * 1024) if allow else 0
    if "instructions" not in chosen:
        origins["instructions"] = "default"
    # settings declared in cogcli.settings.options that nothing above treats specially: a Settings field of
    # the same name gets the value of the highest layer (a workspace's CogConfig key of that name too)
    special = {"model", "sandbox", "mcp_servers", "instructions", "approval", "yes", "test_command", "max_steps", "timeout",
               "allow_secrets", "pass_env", "sandbox_writable", "context_window", "cache_ttl", "prompt_cache_key", "allow"}
    plain = {  # the workspace's value only for a key CogConfig declares (never one of its unknown extras)
        f.name: pick(f.name, getattr(config, f.name) if f.name in CogConfig.model_fields else None,
                     f.default if f.default is not MISSING else f.default_factory())  # type: ignore[misc]
        for f in fields(Settings) if f.name in BY_NAME and f.name not in special
    }
    return Settings(
        **plain,
        root=root,
        model=chosen_model,
        model_source=None if origins["model"] == "default" else origins["model"],
        test_command=pick("test_command", config.test_command, None),
        max_steps=pick("max_steps", config.max_steps, DEFAULT_MAX_STEPS),
        timeout=pick("timeout", config.timeout, None),
        mcp_servers=list(servers),
        sandbox=sandbox_mode,
        secret_globs=tuple(config.secret_globs),
        allow_secrets=pick("allow_secrets", None, ()),
        mcp_source=None if origins["mcp_servers"] == "default" else "--mcp" if origins["mcp_servers"] == "--mcp" else origins["mcp_servers"],
        mcp_personal=origins["mcp_servers"] in ("--mcp", person.label),
        pass_env=pick("pass_env", None, ()),
        workspace_pass_env=tuple(config.pass_env),
        sandbox_writable=pick("sandbox_writable", None, ()),
        runner=config.runner,
        instruction_files=tuple(config.instruction_files),
        instruction_budget=budget,
        context_window=pick("context_window", config.context_window, None),
        cache_ttl=pick("cache_ttl", config.cache_ttl, "5m"),
        prompt_cache_key=pick("prompt_cache_key", config.prompt_cache_key, None),
        prices={**_prices(config.prices), **_prices(person.sections.prices)},
        hooks=dict(config.hooks),
        person_hooks=dict(person.sections.hooks),
        remote_servers=dict(person.sections.mcp_servers),
        workspace_remote_servers={k: v for k, v in config.remote_servers.items() if k not in person.sections.mcp_servers},
        sources=dict(config.sources),
        approval=_approval(chosen, origins),
        base_urls={name: p.base_url for name, p in person.sections.providers.items() if p.base_url},
        provider_apis={name: p.api for name, p in person.sections.providers.items() if p.api},
        origins=origins,
        person_config=person.path,
        allow=_allow(given, env_layer, person, config, origins),
        output_schema=output_schema,
    )


def _allow(given: SettingFlags, env_layer: SettingFlags, person: PersonConfig, config: CogConfig, origins: dict[str, str]) -> tuple[str, ...]:
    """The person's patterns of commands run_command runs unasked: ``--allow``, ``COG_ALLOW`` and
    ``allow`` in their config.toml, added together, each checked (:mod:`cogcli.contract.allow_list`); a
    workspace's own ``allow`` is never one of them (the workspace is the stranger's)."""
    if (config.model_extra or {}).get("allow") is not None:
        log.warning("allow in the workspace's settings is ignored: only your own --allow or COG_ALLOW let commands run unasked")
    layers = [(given.allow, "--allow", "--allow"), (env_layer.allow, "COG_ALLOW", "COG_ALLOW"),
              (person.flags.allow, f"allow in your config.toml ({person.label})", person.label)]
    given_layers = [layer for layer in layers if layer[0]]
    origins["allow"] = " + ".join(label for _, _, label in given_layers) or "default"
    if not given_layers:
        return ()
    from cogcli.contract.allow_list import AllowList, BadPattern

    for patterns, where, _ in given_layers:
        try:
            AllowList.of(list(patterns))
        except BadPattern as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return AllowList.of([p for patterns, _, _ in given_layers for p in patterns]).patterns


def _approval(chosen: dict[str, Any], origins: dict[str, str]) -> str | None:
    """``--yes`` is ``--approval auto``; with another ``--approval`` it is a usage error."""
    origins.pop("yes", None)
    if chosen.get("yes"):
        if chosen.get("approval", "auto") != "auto" and origins.get("approval") == "--approval":
            raise ConfigError(f"--yes means --approval auto; it cannot go with --approval {chosen['approval']}")
        origins["approval"] = "--yes"
        return "auto"
    if "approval" not in chosen:
        origins["approval"] = "default"
    return chosen.get("approval")


def _workspace_sandbox(config: CogConfig) -> SandboxSetting | None:
    """The workspace's ``sandbox``, but never "off" (a warning says it is ignored)."""
    if config.sandbox == "off":
        file = config.sources.get("sandbox", PYPROJECT)
        log.warning(
            '%ssandbox = "off" in %s is ignored: the workspace cannot turn the test sandbox off '
            "(a test or the model could have written it). Use --sandbox off or COG_SANDBOX=off",
            "[tool.cog] " if file == PYPROJECT else "", file,
        )
        return None
    return config.sandbox


def _prices(table: Mapping[str, Any]) -> dict[str, Any]:
    """A ``prices`` table (the workspace's or the person's) as :class:`cogcli.settings.prices.Price` (a
    cache price not given is the input price)."""
    if not table:
        return {}
    from cogcli.settings.prices import Price

    return {
        name: Price(
            input=p.input, output=p.output,
            cache_read=p.input if p.cache_read is None else p.cache_read,
            cache_write=p.input if p.cache_write is None else p.cache_write,
        )
        for name, p in table.items()
    }
