"""Every setting a person gives cog, declared once: its name, kind, flags, ``COG_*`` variable,
key in the person's ``config.toml``, help, bounds, and the front ends it applies to.

The layers (highest first): flags > environment > the person's config
(:mod:`cogcli.settings.person_file`) > the workspace's ``cog.toml`` / ``[tool.cog]``
(:mod:`cogcli.settings.workspace_file`, untrusted) > defaults. Each layer is a :class:`SettingFlags`
whose settings not given are :data:`UNSET`, so layers merge by ``higher.merge(lower)`` (httpx's
one options definition with its "unset" sentinel is the model); :func:`cogcli.settings.load.load_settings`
merges them into :class:`cogcli.settings.load.Settings`.

**To add a setting**: declare a :class:`Setting` in :data:`SETTINGS` below (``commands`` says which
front ends offer its flag) and add the field of the same name to :class:`cogcli.settings.load.Settings`
(the resolved value; ``load_settings`` fills every declared setting by name). Its flag appears on
those commands (:func:`with_settings` generates the typer options), its variable and its
``config.toml`` key are read and checked here, and ``cog config`` shows it with where it came from.
If the workspace may set it too, add it to :class:`cogcli.settings.workspace_file.CogConfig`.
**To add a section** (a table such as ``[prices]``) to the person's ``config.toml``: see
:mod:`cogcli.settings.person_file`.

Only the standard library and typer here: ``cog --help`` builds every command's options from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: the front ends (commands) a setting may apply to
EDIT, CHAT, SERVE, ACP, BATCH, MCP, TOOL, CONFIG = "edit", "chat", "serve", "acp", "batch", "mcp", "tool", "config"
#: front ends that start model runs in a workspace
RUNS = frozenset({EDIT, CHAT, SERVE, ACP, BATCH, CONFIG})
#: front ends that make the workspace tools (every run, and ``cog tool`` / ``cog mcp``)
TOOLS = RUNS | {MCP, TOOL}
#: front ends where the person is at hand (a terminal, an editor, a web page)
PERSONAL = frozenset({EDIT, CHAT, SERVE, ACP, CONFIG})

DEFAULT_MAX_STEPS = 25
#: the most steps a run may be given: a bound, so no flag, variable or file asks for an endless run
MAX_STEPS_LIMIT = 10_000
#: the longest per-call timeout, in seconds (a day): every call ends within its timeout
MAX_TIMEOUT = 24 * 60 * 60
#: the smallest and largest context window cog takes (tokens)
MIN_CONTEXT_WINDOW = 1024
MAX_CONTEXT_WINDOW = 10_000_000
SANDBOX_MODES = ("auto", "on", "off")
APPROVAL_MODES = ("ask", "auto", "stdin")
#: Anthropic's prompt-cache lifetimes (the client's own are cogcli.models.anthropic.CACHE_TTLS: a test keeps them equal;
#: this module imports nothing heavy, for cog --help)
CACHE_TTLS = ("5m", "1h")
#: how much the model reasons before it answers (the models' own are cogcli.models.base.REASONING_LEVELS: a test keeps them equal)
REASONING_LEVELS = ("off", "low", "medium", "high")
#: whether a model is sent images (the models' own are cogcli.models.vision.VISION_CHOICES: a test keeps them equal)
VISION_CHOICES = ("auto", "on", "off")
#: the longest text setting (a command line, a model name) and the most items of a list setting
MAX_TEXT_CHARS = 8192
MAX_LIST_ITEMS = 200


class _Unset:
    """A setting no layer gave (not None: None is never a setting's value here)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"  # one object across pickling (batch workers)


UNSET: Any = _Unset()


class SettingError(ValueError):
    """A bad value for a setting; the message names where it came from and the fix.
    :func:`cogcli.settings.load.load_settings` raises it as a :class:`~cogcli.contract.errors.ConfigError`."""


@dataclass(frozen=True)
class Setting:
    """One setting a person gives."""

    name: str
    #: "text", "int", "float", "choice", "list" or "bool"
    kind: str
    help: str
    #: its flags ("--model", "-m"); a bool's may be "--on/--off"; () for no flag
    flags: tuple[str, ...] = ()
    #: the ``COG_*`` variable (None: none)
    env: str | None = None
    #: its key in the person's config.toml (the same name), or not settable there
    config: bool = True
    #: the front ends whose commands offer its flag (and where it applies)
    commands: frozenset[str] = frozenset()
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    #: whether the minimum itself is allowed (timeout: more than 0)
    inclusive: bool = True
    #: what separates a list's items in its variable
    separator: str = ","
    #: what to do about a bad value (said after what is wrong with it)
    fix: str = ""

    def check(self, value: Any, where: str) -> Any:
        """``value`` in its one form (a list is a tuple), or a :class:`SettingError` naming
        ``where`` (``--timeout``, ``COG_TIMEOUT``, ``~/.config/cog/config.toml timeout``)."""
        kind = self.kind
        if kind == "bool":
            if not isinstance(value, bool):
                raise self._bad(where, value, "must be true or false")
            return value
        if kind == "list":
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise self._bad(where, value, "must be a list of texts")
            if len(value) > MAX_LIST_ITEMS:
                raise self._bad(where, f"{len(value)} items", f"holds more than the {MAX_LIST_ITEMS} items cog takes")
            return tuple(self._text(item, where) for item in value)
        if kind in ("int", "float"):
            return self._number(value, where)
        text = self._text(value, where)
        if kind == "choice" and text not in self.choices:
            raise self._bad(where, value, "must be " + " or ".join(", ".join(self.choices).rsplit(", ", 1)))
        return text

    def from_env(self, environ: Mapping[str, str]) -> Any:
        """Its variable's value, checked (UNSET when the variable is not set or blank)."""
        if self.env is None:
            return UNSET
        raw = environ.get(self.env, "").strip()
        if not raw:
            return UNSET
        if self.kind == "list":
            return self.check([item.strip() for item in raw.split(self.separator) if item.strip()], self.env)
        if self.kind == "int":
            try:
                whole = int(raw)
            except ValueError:
                raise self._bad(self.env, raw, "must be a whole number") from None
            return self.check(whole, self.env)
        if self.kind == "float":
            try:
                number = float(raw)
            except ValueError:
                raise self._bad(self.env, raw, "must be a number") from None
            if not math.isfinite(number):
                raise self._bad(self.env, raw, "must be a finite number")
            return self.check(number, self.env)
        if self.kind == "bool":
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise self._bad(self.env, raw, "must be true or false (1 or 0)")
        return self.check(raw.lower() if self.kind == "choice" else raw, self.env)

    @property
    def flag(self) -> str:
        """The flag messages name (``--mcp``), or the config key when it has none."""
        return self.flags[0].split("/")[0] if self.flags else self.name

    def _text(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self._bad(where, value, "must be a text")
        if len(value) > MAX_TEXT_CHARS:
            raise self._bad(where, value[:40] + "…", f"is longer than the {MAX_TEXT_CHARS:,} characters cog takes")
        if "\x00" in value or not value.strip():
            raise self._bad(where, value, "is empty" if not value.strip() else "holds a NUL byte")
        return value

    def _number(self, value: Any, where: str) -> Any:
        wanted = int if self.kind == "int" else (int, float)
        low, high = self.minimum, self.maximum
        bounds = " and ".join(
            part for part in (
                None if low is None else f"{'at least' if self.inclusive else 'more than'} {_number(low)}",
                None if high is None else f"at most {_number(high)}",
            ) if part
        )
        what = "a whole number" if self.kind == "int" else "a number"
        if isinstance(value, bool) or not isinstance(value, wanted) or not math.isfinite(value):
            raise self._bad(where, value, f"must be {what}" + (f" {bounds}" if bounds else ""))
        if (low is not None and (value < low or (value == low and not self.inclusive))) or (high is not None and value > high):
            raise self._bad(where, value, f"must be {bounds}")
        return float(value) if self.kind == "float" else value

    def _bad(self, where: str, value: Any, what: str) -> SettingError:
        shown = repr(value) if isinstance(value, str) else _number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        return SettingError(f"{where} {what}, got {shown[:80]}" + (f": {self.fix}" if self.fix else ""))


def _number(n: float) -> str:
    """1024, 10,000, 0.5: thousands separated from 10,000 on."""
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    return f"{n:,}" if abs(n) >= 10_000 else str(n)


#: every setting, in the order ``cog config`` shows them
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "model", "text", "provider:model (default: COG_MODEL, then model in ~/.config/cog/config.toml, then in cog.toml or [tool.cog]).",
        flags=("--model", "-m"), env="COG_MODEL", commands=RUNS, metavar="PROVIDER:MODEL",
        fix="give provider:model, e.g. openai:gpt-4o-mini",
    ),
    Setting(
        "test_command", "text", "The command run_tests runs (default: the runner cog finds, e.g. pytest).",
        flags=("--test-command",), env="COG_TEST_COMMAND", config=False, commands=TOOLS - {BATCH}, metavar="COMMAND",
    ),
    Setting(
        "max_steps", "int", f"Stop a run after this many model turns (default {DEFAULT_MAX_STEPS}).",
        flags=("--max-steps",), env="COG_MAX_STEPS", commands=RUNS, metavar="N", minimum=1, maximum=MAX_STEPS_LIMIT,
        fix=f"give a whole number of steps from 1 to {MAX_STEPS_LIMIT:,}",
    ),
    Setting(
        "timeout", "float", "Seconds each tool call may take (at most a day).",
        flags=("--timeout",), env="COG_TIMEOUT", commands=TOOLS, metavar="SECONDS", minimum=0, inclusive=False, maximum=MAX_TIMEOUT,
        fix=f"give the seconds one tool call may take, more than 0 and at most {MAX_TIMEOUT:,} (a day)",
    ),
    Setting(
        "mcp_servers", "list", 'Add the tools of an MCP server: --mcp "CMD ARGS", or its URL for one over HTTP (repeatable).',
        flags=("--mcp",), commands=PERSONAL - {SERVE}, metavar="COMMAND",
    ),
    Setting(
        "sandbox", "choice", "Run tests under bubblewrap: auto (when it works here; default), on (required, else exit 2), off. "
        "Default: COG_SANDBOX, then sandbox in ~/.config/cog/config.toml, then in cog.toml or [tool.cog] (on only), then auto.",
        flags=("--sandbox",), env="COG_SANDBOX", commands=TOOLS, choices=SANDBOX_MODES, fix="give auto, on or off",
    ),
    Setting(
        "allow_secrets", "list", "Let the tools read PATH although it looks like a secret (.env, *.pem, id_rsa, …; repeatable).",
        flags=("--allow-secret",), config=False, commands=TOOLS - {BATCH}, metavar="PATH",
    ),
    Setting(
        "pass_env", "list", "Give the tests the variable NAME too (repeatable). Tests get an allow-list (PATH, HOME, LANG, "
        "the virtualenv's, CI, …) and never credential-named variables unless passed here.",
        flags=("--pass-env",), env="COG_PASS_ENV", commands=TOOLS - {BATCH}, metavar="NAME",  # batch: its own --pass-env
    ),
    Setting(
        "sandbox_writable", "list", "Let tests in the sandbox write PATH too (repeatable; also COG_SANDBOX_WRITABLE=PATH:PATH).",
        flags=("--sandbox-writable",), env="COG_SANDBOX_WRITABLE", separator=":", commands=TOOLS - {BATCH}, metavar="PATH",
    ),
    Setting(
        "approval", "choice", "Before a call that writes files or runs code: ask (prompt y/n/a on the terminal), auto (run it), "
        'stdin (read {"type":"approval","toolCallId":…,"approved":true} lines). Default: ask on a terminal; '
        "otherwise auto when CI is set, else such calls are refused.",
        flags=("--approval",), env="COG_APPROVAL", commands=frozenset({EDIT, CONFIG}), choices=APPROVAL_MODES,
        fix="give ask, auto or stdin",
    ),
    Setting(
        "yes", "bool", "Approve every call without asking (the same as --approval auto).",
        flags=("--yes", "-y"), config=False, commands=frozenset({EDIT, CHAT, ACP, CONFIG}),
    ),
    Setting(
        "allow", "list", "Let run_command run commands matching PATTERN without asking, e.g. --allow 'ruff *' --allow 'make lint' "
        "(repeatable; also COG_ALLOW='ruff *;make lint' and allow in ~/.config/cog/config.toml, all added together). "
        "Only one simple command matches: nothing chained with ; && | or holding $ ` < >.",
        flags=("--allow",), env="COG_ALLOW", separator=";", commands=PERSONAL, metavar="PATTERN",
    ),
    Setting(
        "plan_allow", "list", "In plan mode, let TOOL run too though it is not read-only, e.g. run_tests or run_command "
        "(repeatable; also COG_PLAN_ALLOW=a,b and plan_allow in ~/.config/cog/config.toml, never the workspace's files).",
        flags=("--plan-allow",), env="COG_PLAN_ALLOW", commands=frozenset({EDIT, CHAT, ACP, CONFIG}), metavar="TOOL",
    ),
    Setting(
        "command_network", "bool", "Give run_command's commands the host's network (default: none; COG_COMMAND_NETWORK=1).",
        flags=("--command-network/--no-command-network",), env="COG_COMMAND_NETWORK", commands=TOOLS - {BATCH},
    ),
    Setting(
        "keep_jobs", "bool", "Keep the model's background commands running after the session ends instead of killing them "
        "(a dev server to use afterwards): each is listed with its pid and log when cog exits, `cog jobs` lists them, "
        "`cog jobs kill PID` ends one; what they change afterwards is beyond cog undo (COG_KEEP_JOBS=1; the person's "
        "choice, never the workspace's).",
        flags=("--keep-jobs/--no-keep-jobs",), env="COG_KEEP_JOBS", commands=frozenset({EDIT, CHAT, CONFIG}),
    ),
    Setting(
        "undo_ignored", "bool", "Keep the files git ignores in the snapshots taken before commands too, so cog undo puts back "
        "what a command changed among them (build output, caches; default: left out; COG_UNDO_IGNORED=1).",
        env="COG_UNDO_IGNORED", commands=TOOLS - {BATCH},
    ),
    Setting(
        "test_network", "bool", "Give run_tests' tests the host's network in the sandbox (default: none; "
        "COG_TEST_NETWORK=1): for tests that download or call a service.",
        flags=("--test-network/--no-test-network",), env="COG_TEST_NETWORK", commands=TOOLS - {BATCH},
    ),
    Setting(
        "diagnostics", "bool", "Check every file change with the project's checkers (ruff, mypy, tsc, ESLint, go vet, cargo check …) "
        "in the test sandbox, tell the model what the change introduced, and offer the diagnostics tool (default: yes; "
        "diagnostics = false in a config file or cog.toml turns it off).",
        flags=("--diagnostics/--no-diagnostics",), env="COG_DIAGNOSTICS", commands=TOOLS,
    ),
    Setting(
        "diagnostics_off", "list", "Leave CHECKER out of diagnostics: ruff, mypy, pyright, basedpyright, eslint, tsc, go-vet, "
        "gopls or cargo-check (repeatable; COG_DIAGNOSTICS_OFF=mypy,tsc).",
        flags=("--diagnostics-off",), env="COG_DIAGNOSTICS_OFF", commands=TOOLS, metavar="CHECKER",
    ),
    Setting(
        "max_subagents", "int", "How many subagents (task calls) run at once in a run (default 3; docs/subagents.md).",
        flags=("--max-subagents",), env="COG_MAX_SUBAGENTS", commands=RUNS, metavar="N", minimum=1, maximum=32,
        fix="give a whole number of subagents from 1 to 32",
    ),
    Setting(
        "instructions", "bool", "Read AGENTS.md files (and ~/.config/cog/AGENTS.md) for the model (default: yes).",
        flags=("--instructions/--no-instructions",), commands=RUNS,
    ),
    Setting(
        "context_window", "int", "The model's context window, 1024 to 10,000,000 tokens (default: COG_CONTEXT_WINDOW, "
        "then the config files, else known models' own or what the server reports).",
        flags=("--context-window",), env="COG_CONTEXT_WINDOW", commands=RUNS, metavar="TOKENS",
        minimum=MIN_CONTEXT_WINDOW, maximum=MAX_CONTEXT_WINDOW,
        fix="give the model's context window in tokens, e.g. 128000",
    ),
    Setting(
        "max_tokens", "int", "Stop the run (exit 1, status budget_exceeded) at the first model response that takes it past N tokens, "
        "input and output.", flags=("--max-tokens",), env="COG_MAX_TOKENS", commands=RUNS, metavar="N", minimum=1, maximum=10**12,
        fix="give a whole number of tokens, e.g. 200000",
    ),
    Setting(
        "max_cost", "float", "Stop the run (exit 1, status budget_exceeded) at the first model response that takes its cost past "
        "USD dollars (needs the model's price: cog's table or [prices]).", flags=("--max-cost",), env="COG_MAX_COST", commands=RUNS,
        metavar="USD", minimum=0, inclusive=False, maximum=1_000_000, fix="give US dollars, e.g. 2.50",
    ),
    Setting(
        "cache_ttl", "choice", "How long Anthropic keeps the prompt cache: 5m (default) or 1h (writes cost 2× the input price).",
        env="COG_CACHE_TTL", choices=CACHE_TTLS, fix="give 5m or 1h",
    ),
    Setting(
        "reasoning", "choice", "How much the model reasons before it answers: off (default), low, medium or high "
        "(Anthropic: extended thinking; OpenAI-compatible servers: reasoning_effort). Its reasoning is shown dimmed.",
        flags=("--reasoning",), env="COG_REASONING", commands=RUNS, choices=REASONING_LEVELS, metavar="LEVEL",
        fix="give off, low, medium or high",
    ),
    Setting(
        "vision", "choice", "Whether the model is sent images (read_file of an image, /image, --image): auto (default: "
        "from the model's name), on or off. A model that is not sent them reads a text saying so.",
        flags=("--vision",), env="COG_VISION", commands=RUNS, choices=VISION_CHOICES, metavar="WHEN",
        fix="give auto, on or off",
    ),
    Setting(
        "prompt_cache_key", "bool", "Send the thread id as prompt_cache_key (default: only to api.openai.com).",
    ),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def applies_to(command: str) -> tuple[Setting, ...]:
    """The settings whose flags ``command`` offers."""
    return tuple(s for s in SETTINGS if command in s.commands and s.flags)


class SettingFlags:
    """One layer's settings (flags, environment, the person's config): a value per setting given,
    :data:`UNSET` for the rest. ``SettingFlags(model="openai:gpt-4o", timeout=30)``; None and an
    empty list mean not given. ``a.merge(b)``: a's settings over b's."""

    __slots__ = ("_values",)

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(BY_NAME)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        self._values: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if v is not None and v is not UNSET and v != []
        }

    def __getattr__(self, name: str) -> Any:
        if name in BY_NAME:
            return self._values.get(name, UNSET)
        raise AttributeError(name)

    def get(self, name: str) -> Any:
        return self._values.get(name, UNSET)

    def given(self) -> dict[str, Any]:
        """The settings this layer gives: name → value."""
        return dict(self._values)

    def merge(self, lower: SettingFlags) -> SettingFlags:
        """These settings over ``lower``'s."""
        return SettingFlags(**{**lower._values, **self._values})

    def replace(self, **values: Any) -> SettingFlags:
        """A copy with ``values`` set (None leaves one as it is; UNSET removes it)."""
        merged = {**self._values, **{k: v for k, v in values.items() if v is not None}}
        return SettingFlags(**{k: v for k, v in merged.items() if v is not UNSET})

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._values.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SettingFlags) and other._values == self._values

    def __repr__(self) -> str:
        return f"SettingFlags({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"

    def __getstate__(self) -> dict[str, Any]:
        return self._values

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._values = state


def from_environment(environ: Mapping[str, str]) -> SettingFlags:
    """The ``COG_*`` variables' layer, each checked (a bad one is a :class:`SettingError`)."""
    return SettingFlags(**{s.name: s.from_env(environ) for s in SETTINGS if s.env})


def from_flags(values: Mapping[str, Any]) -> SettingFlags:
    """The flags' layer from the command's parameters, each checked as the others are."""
    checked = {}
    for name, value in values.items():
        if value is None or value == [] or value is UNSET:
            continue
        setting = BY_NAME[name]
        value = getattr(value, "value", value)  # a choice's enum member (typer's choices)
        checked[name] = setting.check(list(value) if isinstance(value, (list, tuple)) else value, setting.flag)
    return SettingFlags(**checked)
