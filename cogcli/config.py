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
    cache_ttl = "1h"             # Anthropic's prompt cache for an hour (writes 2× input) instead of 5 minutes
    prompt_cache_key = true      # send the thread id as prompt_cache_key (default: only to api.openai.com)
    [prices."my-model"]          # USD per million tokens, for the cost shown (adds to cog's table)
    input = 1.0
    output = 4.0
    cache_read = 0.1
    cache_write = 1.25

The workspace is not trusted, whichever file holds its settings: its ``mcp_servers`` start only once
the person approved them (:mod:`cogcli.trust`), its ``sandbox = "off"`` is ignored (``--sandbox off``
or ``COG_SANDBOX`` turn the sandbox off), its ``pass_env`` never passes a credential, and a settings
file that is a link leading out of the workspace is not read. Every value is checked (type, range,
length): a bad one is a :class:`ConfigError` naming the key, the file and the fix.

Environment: ``COG_MODEL``, ``COG_TEST_COMMAND``, ``COG_MAX_STEPS``, ``COG_TIMEOUT``, ``COG_SANDBOX``,
``COG_CONTEXT_WINDOW``, ``COG_CACHE_TTL``, ``COG_ALLOW`` (run_command patterns, ``;``-separated),
``COG_COMMAND_NETWORK``.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.errors import CogError, ConfigError
from cogcli.workspace_settings import (  # noqa: F401 (the workspace's settings, re-exported for callers)
    DEFAULT_MAX_STEPS,
    SANDBOX_MODES,
    MIN_CONTEXT_WINDOW,
    MAX_CONTEXT_WINDOW,
    MAX_STEPS_LIMIT,
    MAX_TIMEOUT,
    SandboxSetting,
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
        "or set it once: export COG_MODEL=openai:gpt-4o-mini, or model = \"…\" in cog.toml (or under [tool.cog] in pyproject.toml)"
    )


NO_MODEL_MESSAGE = no_model_message()


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
    #: variables for a server command of ``mcp_servers``, given apart from its command line (an
    #: editor's MCP servers over ACP): their values never appear in argv, ``ps`` or a message
    mcp_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
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
    #: how long Anthropic keeps the prompt cache: "5m" or "1h" (``COG_CACHE_TTL``, ``cache_ttl``)
    cache_ttl: str = "5m"
    #: send the thread id as ``prompt_cache_key`` (None: only to api.openai.com)
    prompt_cache_key: bool | None = None
    #: model name → :class:`cogcli.pricing.Price`, over cog's own table (``prices``)
    prices: Mapping[str, Any] = field(default_factory=dict)
    #: the workspace's own hooks (``[[hooks.<Event>]]``): run only once the person approved them
    #: (:mod:`cogcli.hooks.trust`); the person's own are in their config.toml
    hooks: Mapping[str, Any] = field(default_factory=dict)
    #: which workspace file each of its settings came from: ``{"test_command": "cog.toml", …}``
    sources: Mapping[str, str] = field(default_factory=dict)
    #: a run's budgets (``--max-tokens``, ``--max-cost`` in US dollars; :mod:`cogcli.budgets`) and the
    #: JSON Schema file its final answer must match (``--output-schema``; :mod:`cogcli.structured`):
    #: the person's flags only, never the workspace's
    max_tokens: int | None = None
    max_cost: float | None = None
    #: a schema file, or the schema itself (``cog batch`` reads it once for every task)
    output_schema: Path | Mapping[str, Any] | None = None
    #: the person's patterns of commands run_command runs without asking (``--allow``, ``COG_ALLOW``,
    #: ``allow`` in their config.toml; never the workspace's): :mod:`cogcli.allow`
    allow: tuple[str, ...] = ()
    #: the person gives run_command the host's network (``--command-network``, ``COG_COMMAND_NETWORK=1``,
    #: ``command_network = true`` in their config.toml)
    command_network: bool = False

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
    max_tokens: int | None = None,
    max_cost: float | None = None,
    output_schema: Path | Mapping[str, Any] | None = None,
    allow: list[str] | None = None,
    command_network: bool | None = None,
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
        cache_ttl=_cache_ttl(config),
        prompt_cache_key=config.prompt_cache_key,
        prices=_prices(config),
        hooks=dict(config.hooks),
        sources=dict(sources),
        max_tokens=max_tokens,
        max_cost=max_cost,
        output_schema=output_schema,
        allow=_allow(allow, config),
        command_network=_command_network(command_network),
    )


def _allow(flags: list[str] | None, config: CogConfig) -> tuple[str, ...]:
    """``--allow`` patterns and ``COG_ALLOW`` (patterns separated by ``;``), each checked; a
    workspace's own ``allow`` is never one of them (the workspace is the stranger's)."""
    from cogcli.allow import AllowList, BadPattern, person_settings

    env = [p for p in os.environ.get("COG_ALLOW", "").split(";") if p.strip()]
    mine = person_settings()[0]
    if (config.model_extra or {}).get("allow") is not None:
        log.warning("allow in the workspace's settings is ignored: only your own --allow or COG_ALLOW let commands run unasked")
    try:
        AllowList.of(mine)
    except BadPattern as exc:
        raise ConfigError(f"allow in your config.toml: {exc}") from None
    try:
        return AllowList.of([*(flags or []), *env, *mine]).patterns
    except BadPattern as exc:
        raise ConfigError(f"{'--allow' if flags else 'COG_ALLOW'}: {exc}") from None


def _command_network(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    raw = os.environ.get("COG_COMMAND_NETWORK", "").strip().lower()
    if raw == "":
        from cogcli.allow import person_settings

        return bool(person_settings()[1])
    if raw in ("0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"COG_COMMAND_NETWORK must be 1 or 0, got {raw[:40]!r}")


def _cache_ttl(config: CogConfig) -> str:
    """``COG_CACHE_TTL``, else ``cache_ttl`` in the settings, else "5m"."""
    env = os.environ.get("COG_CACHE_TTL", "").strip().lower()
    if env and env not in ("5m", "1h"):
        raise ConfigError(f"COG_CACHE_TTL must be 5m or 1h, got {env[:40]!r}")
    return env or config.cache_ttl or "5m"


def _prices(config: CogConfig) -> dict[str, Any]:
    """The workspace's ``prices`` as :class:`cogcli.pricing.Price` (a cache price not given is the input price)."""
    if not config.prices:
        return {}
    from cogcli.pricing import Price

    return {
        name: Price(
            input=p.input, output=p.output,
            cache_read=p.input if p.cache_read is None else p.cache_read,
            cache_write=p.input if p.cache_write is None else p.cache_write,
        )
        for name, p in config.prices.items()
    }


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
