"""What hooks are configured: ``[[hooks.<Event>]]`` tables, each a ``matcher``, a ``command`` and an
optional ``timeout`` — Claude Code's hooks, written in TOML.

    [[hooks.PreToolUse]]
    matcher = "edit_file|write_file"       # which tools (a regex on the tool name; "" or "*": all)
    command = "~/bin/guard-protected.py"   # run by /bin/sh, on the host, the event's JSON on stdin
    timeout = 10                           # seconds (default 60), then its whole process group is killed

The person's own hooks live in ``~/.config/cog/config.toml``; a workspace's (``cog.toml`` or
``[tool.cog]``) are read as hostile input by :mod:`cogcli.settings.workspace_file` with the same
model and run only once the person approved them (:mod:`cogcli.hooks.trust`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Literal, TypeAlias, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

#: the events, in the order a run meets them (Claude Code's names)
EventName: TypeAlias = Literal[
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Notification", "Stop", "SubagentStart", "SubagentStop",
]
EVENTS: tuple[str, ...] = get_args(EventName)

DEFAULT_TIMEOUT = 60.0
#: the longest a hook may be given, in seconds: a hook holds its run while it runs
MAX_TIMEOUT = 3600.0
MAX_HOOKS_PER_EVENT = 50
MAX_COMMAND_CHARS = 8192
MAX_MATCHER_CHARS = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: a matcher of plain names (``edit_file|write_file``) matches those names exactly, as Claude Code's does
_PLAIN_NAMES = re.compile(r"[A-Za-z0-9_\-|]+\Z")

FIX = (
    'give tables per event, e.g. [[hooks.PreToolUse]] with matcher = "edit_file|write_file", '
    'command = "path/to/guard.py" and optionally timeout = 10 (seconds); events: ' + ", ".join(EVENTS)
)


class HookSpec(BaseModel):
    """One configured hook."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)  # built when a config is read, not at start-up

    #: which calls (PreToolUse, PostToolUse: the tool name), sources (SessionStart: startup,
    #: resume), triggers (PreCompact: auto, manual) or notifications it runs for; "" or "*": all
    matcher: str = Field(default="", max_length=MAX_MATCHER_CHARS)
    #: a shell command line, run by ``/bin/sh -c`` in the workspace root
    command: str = Field(min_length=1, max_length=MAX_COMMAND_CHARS)
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, le=MAX_TIMEOUT, allow_inf_nan=False)
    #: variables named like credentials that this hook gets all the same (a webhook URL, a token)
    pass_env: tuple[str, ...] = ()

    @field_validator("timeout", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("pass_env", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        from workspace_tools.sandbox.environment import is_variable_name  # here: read only with a config

        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple):
            for name in value:
                if not is_variable_name(name):
                    raise ValueError(f"pass_env holds {name!r}, which is not a variable name")
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, command: str) -> str:
        if "\x00" in command or not command.strip():
            raise ValueError("command must be a shell command line (no NUL byte, not blank)")
        return command

    @field_validator("matcher")
    @classmethod
    def _matcher(cls, matcher: str) -> str:
        if _CONTROL.search(matcher):
            raise ValueError(f"matcher {matcher[:80]!r} holds a control character")
        compile_matcher(matcher)  # raises ValueError naming what is wrong
        return matcher


def _flatten(tables: object) -> object:
    """Claude Code's layout, ``{matcher, hooks = [{type = "command", command, timeout}]}``, as one
    table per command (a pasted Claude config works); cog's own tables pass as they are."""
    if not isinstance(tables, list):
        return tables
    flat: list[object] = []
    for table in tables:
        inner = table.get("hooks") if isinstance(table, dict) else None
        if not isinstance(inner, list):
            flat.append(table)
            continue
        for hook in inner:
            if not isinstance(hook, dict) or hook.get("type", "command") != "command":
                raise ValueError(f"only hooks of type \"command\" run in cog, got {hook!r:.80}")
            flat.append({**{k: v for k, v in table.items() if k != "hooks"}, **{k: v for k, v in hook.items() if k != "type"}})
    return flat


#: event name → its hooks, in the order they are written
HookTables: TypeAlias = dict[EventName, Annotated[list[HookSpec], BeforeValidator(_flatten)]]


def check_tables(tables: HookTables) -> HookTables:
    for event, specs in tables.items():
        if len(specs) > MAX_HOOKS_PER_EVENT:
            raise ValueError(f"{len(specs)} hooks for {event} are more than the {MAX_HOOKS_PER_EVENT} cog takes")
    return tables


def compile_matcher(matcher: str) -> Callable[[str], bool]:
    """The test ``matcher`` stands for: all names for ``""`` or ``*``; names written plainly
    (``edit_file|write_file``) exactly; anything else a regular expression searched in the name,
    on RE2 (linear time, whatever the pattern). Raises ValueError naming what is wrong."""
    if matcher.strip() in ("", "*"):
        return lambda name: True
    if _PLAIN_NAMES.match(matcher):
        names = frozenset(matcher.split("|"))
        return names.__contains__
    from cogcli.contract.errors import CogError
    from workspace_tools.files.linear_regex import compile_pattern

    try:
        pattern = compile_pattern(matcher)
    except CogError as exc:
        raise ValueError(f"matcher {matcher[:80]!r} is not a pattern cog can use: {exc.message}") from None
    return lambda name: pattern.search_line(name.encode("utf-8", "replace"))
