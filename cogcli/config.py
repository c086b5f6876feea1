"""Settings for a command: flags, then ``COG_*`` environment variables, then ``[tool.cog]`` in
the workspace's ``pyproject.toml``, then defaults. Flags win.

    [tool.cog]
    model = "openai:gpt-4o-mini"
    test_command = "pytest -q"
    runner = "go"            # force run_tests' runner: pytest | go | vitest | jest | node | cargo
    max_steps = 30
    timeout = 120            # seconds per tool call
    mcp_servers = ["npx -y @modelcontextprotocol/server-memory"]
    sandbox = "auto"         # run_tests under bubblewrap: auto | on | off
    secret_globs = ["config/credentials.*"]   # more files the tools keep away from (besides .env, keys, …)
    instruction_files = ["CLAUDE.md"]   # read per directory after AGENTS.override.md and AGENTS.md
    instruction_budget = 32768   # bytes of instruction files the model reads; 0 reads none
    context_window = 128000      # the model's context window in tokens, when cog does not know it
    pass_env = ["DATABASE_URL"]  # more variables the tests get (never credential-named ones; --pass-env for those)

The workspace is not trusted: its ``mcp_servers`` start only once the person approved them
(:mod:`cogcli.trust`), and its ``sandbox = "off"`` is ignored (``--sandbox off`` or ``COG_SANDBOX``
turn the sandbox off).

Environment: ``COG_MODEL``, ``COG_TEST_COMMAND``, ``COG_MAX_STEPS``, ``COG_TIMEOUT``, ``COG_SANDBOX``,
``COG_CONTEXT_WINDOW``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cogcli.errors import ConfigError

log = logging.getLogger("cogcli")

DEFAULT_MAX_STEPS = 25
SANDBOX_MODES = ("auto", "on", "off")
#: the smallest context window cog takes (--context-window says the same: cli.py keeps the number to import nothing)
MIN_CONTEXT_WINDOW = 1024
SandboxSetting = Literal["auto", "on", "off"]
RunnerSetting = Literal["pytest", "go", "vitest", "jest", "node", "cargo"]

NO_MODEL_MESSAGE = """\
no model configured. Pick one of:
  cog edit --model openai:gpt-4o-mini "…"        with OPENAI_API_KEY set (OPENAI_BASE_URL for other OpenAI-compatible servers)
  cog edit --model anthropic:claude-sonnet-4-5 "…"   with ANTHROPIC_API_KEY set
  cog edit --model ollama:llama3.1 "…"            a local Ollama server, no key
  cog edit --model replay:fixtures/cassettes/calc_fix.jsonl "…"   the offline demo (in a copy of fixtures/calc)
or set it once: export COG_MODEL=openai:gpt-4o-mini, or model = "…" under [tool.cog] in pyproject.toml"""


class CogConfig(BaseModel):
    """The ``[tool.cog]`` table. Unknown keys are warned about (a newer cog may know them)."""

    model_config = ConfigDict(extra="allow")

    # list defaults are plain ``[]`` (pydantic copies them for each instance): ``default_factory=list``
    # has pydantic read ``list``'s text signature, which compiles tokenize's regex (~2.5 ms) at import
    model: str | None = None
    test_command: str | None = None
    max_steps: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)
    mcp_servers: list[str] = []
    sandbox: SandboxSetting | None = None
    secret_globs: list[str] = []
    pass_env: list[str] = []
    runner: RunnerSetting | None = None
    instruction_files: list[str] = []
    #: at most 1 MiB: a workspace's own settings must not fill the model's context with instructions
    instruction_budget: int | None = Field(default=None, ge=0, le=1024 * 1024)
    context_window: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW)

    @field_validator("instruction_files")
    @classmethod
    def _plain_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or "/" in name or "\\" in name or name in (".", ".."):
                raise ValueError(f"{name!r} is not a file name (give names such as \"CLAUDE.md\", looked for in each directory)")
        return names


@dataclass(frozen=True)
class Settings:
    root: Path
    model: str | None
    #: where ``model`` came from: "--model", "COG_MODEL", "pyproject.toml" or None
    model_source: str | None
    test_command: str | None
    max_steps: int
    timeout: float | None
    mcp_servers: list[str] = field(default_factory=list)
    #: how run_tests runs the tests: "auto" (bubblewrap when it works), "on" or "off"
    sandbox: SandboxSetting = "auto"
    #: globs of files the tools treat as secrets, on top of the built-in ones (``[tool.cog] secret_globs``)
    secret_globs: tuple[str, ...] = ()
    #: secret-looking paths the tools may read all the same (``--allow-secret PATH``)
    allow_secrets: tuple[str, ...] = ()
    #: where ``mcp_servers`` came from: "--mcp" (the person's) or "pyproject.toml" (needs approval)
    mcp_source: str | None = None
    #: variables the person passes to the tests (``--pass-env``)
    pass_env: tuple[str, ...] = ()
    #: variables the workspace asks for (``[tool.cog] pass_env``; never credential-named ones)
    workspace_pass_env: tuple[str, ...] = ()
    #: more paths tests may write in the sandbox (``--sandbox-writable``)
    sandbox_writable: tuple[str, ...] = ()
    #: the test runner run_tests uses instead of the ones it finds (``[tool.cog] runner``)
    runner: str | None = None
    #: names read per directory after AGENTS.override.md and AGENTS.md (``[tool.cog] instruction_files``)
    instruction_files: tuple[str, ...] = ()
    #: bytes of instruction files the model reads (0: none; ``--no-instructions`` sets 0)
    instruction_budget: int = 32 * 1024
    #: the model's context window in tokens from ``--context-window``, ``COG_CONTEXT_WINDOW`` or
    #: ``[tool.cog] context_window`` (None: the table of known models, or what the provider reports)
    context_window: int | None = None


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


def read_config(root: Path) -> CogConfig:
    """``[tool.cog]`` of ``root/pyproject.toml`` (empty when there is none)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return CogConfig()
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    table = data.get("tool", {}).get("cog", {})
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.cog] in {path} must be a table")
    try:
        config = CogConfig.model_validate(table)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise ConfigError(f"[tool.cog] {where} in {path}: {err.get('msg')}") from None
    for key in config.model_extra or {}:
        log.warning("unknown key %r under [tool.cog] in %s is ignored (known: %s)", key, path, ", ".join(CogConfig.model_fields))
    return config


def _env_number(name: str, kind: type[int] | type[float]) -> Any:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ConfigError(f"{name} must be {what}, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be greater than 0, got {raw!r}")
    return value


def _context_window_env() -> int | None:
    """``COG_CONTEXT_WINDOW``, held to the same floor as ``--context-window`` and ``[tool.cog]``."""
    window = _env_number("COG_CONTEXT_WINDOW", int)
    if window is not None and window < MIN_CONTEXT_WINDOW:
        raise ConfigError(f"COG_CONTEXT_WINDOW must be at least {MIN_CONTEXT_WINDOW} (tokens), got {window}")
    return window


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
    env_model = os.environ.get("COG_MODEL", "").strip() or None
    if model:
        chosen, source = model, "--model"
    elif env_model:
        chosen, source = env_model, "COG_MODEL"
    elif config.model:
        chosen, source = config.model, "pyproject.toml"
    else:
        chosen, source = None, None
    return Settings(
        root=root,
        model=chosen,
        model_source=source,
        test_command=test_command or os.environ.get("COG_TEST_COMMAND", "").strip() or config.test_command,
        max_steps=max_steps or _env_number("COG_MAX_STEPS", int) or config.max_steps or DEFAULT_MAX_STEPS,
        timeout=timeout or _env_number("COG_TIMEOUT", float) or config.timeout,
        mcp_servers=list(mcp_servers) if mcp_servers else list(config.mcp_servers),
        sandbox=_sandbox(sandbox, config),
        secret_globs=tuple(config.secret_globs),
        allow_secrets=tuple(allow_secrets or ()),
        mcp_source="--mcp" if mcp_servers else ("pyproject.toml" if config.mcp_servers else None),
        pass_env=tuple(pass_env or ()),
        workspace_pass_env=tuple(config.pass_env),
        sandbox_writable=tuple(sandbox_writable or ()),
        runner=config.runner,
        instruction_files=tuple(config.instruction_files),
        instruction_budget=(config.instruction_budget if config.instruction_budget is not None else 32 * 1024) if instructions else 0,
        context_window=context_window or _context_window_env() or config.context_window,
    )


def _sandbox(flag: str | None, config: CogConfig) -> SandboxSetting:
    env = os.environ.get("COG_SANDBOX", "").strip().lower() or None
    if env is not None and env not in SANDBOX_MODES:
        raise ConfigError(f"COG_SANDBOX must be auto, on or off, got {env!r}")
    from_config = config.sandbox
    if from_config == "off" and not (flag or env):
        log.warning(
            '[tool.cog] sandbox = "off" in pyproject.toml is ignored: the workspace cannot turn the test sandbox off '
            "(a test or the model could have written it). Use --sandbox off or COG_SANDBOX=off"
        )
        from_config = None
    chosen = flag or env or from_config or "auto"
    if chosen not in SANDBOX_MODES:
        raise ConfigError(f"--sandbox must be auto, on or off, got {chosen!r}")
    return chosen  # type: ignore[return-value]
