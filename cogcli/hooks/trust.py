"""Which hooks a session runs: the person's own (``[hooks]`` in ``~/.config/cog/config.toml``,
``$XDG_CONFIG_HOME`` respected), then the workspace's (``cog.toml`` / ``[tool.cog]``) once the
person approved them.

A workspace's hook is a command the workspace wants run on this machine, outside the sandbox, at
every tool call: a cloned repository, a test or the model's ``write_file`` could have put it
there. So it runs only once approved like the workspace's MCP commands (:mod:`cogcli.trust`): the
exact command line *and* the sha256 of each workspace file it runs, remembered with the event, the
matcher, the timeout and the variables it asks for — a changed hook, or a changed script it runs, is
asked about again (on a terminal) or refused (off one, naming ``cog trust``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cogcli.errors import ConfigError
from cogcli.hooks.config import FIX, HookSpec, HookTables

#: the person's settings file, under ``$XDG_CONFIG_HOME/cog`` (default ``~/.config/cog``)
CONFIG_NAME = "config.toml"


def config_path() -> Path:
    """``$XDG_CONFIG_HOME/cog/config.toml`` (default ``~/.config/cog/…``): beside the approvals."""
    from cogcli.trust import store_path

    return store_path().with_name(CONFIG_NAME)


def person_hooks(path: Path | None = None) -> HookTables:
    """The ``[hooks]`` of the person's config file (none when it has none)."""
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read your settings in {path}: {getattr(exc, 'strerror', None) or exc}") from None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return parse_hooks(data.get("hooks"), str(path))


def parse_hooks(raw: Any, where: str) -> HookTables:
    """``raw`` (the ``hooks`` table) as checked tables; a ConfigError names what is wrong and the fix."""
    if raw is None:
        return {}
    from pydantic import TypeAdapter, ValidationError

    from cogcli.hooks.config import check_tables

    try:
        return check_tables(TypeAdapter(HookTables).validate_python(raw, strict=True))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        shown = ".".join(str(p) for p in ("hooks", *err.get("loc", ())))
        raise ConfigError(f"{shown} in {where}: {str(err.get('msg')).removeprefix('Value error, ')}; {FIX}") from None
    except ValueError as exc:
        raise ConfigError(f"hooks in {where}: {exc}; {FIX}") from None


def trust_key(event: str, spec: HookSpec) -> str:
    """The setting an approval of ``spec`` is remembered under: the event and everything of the
    hook but its command line (which is remembered itself)."""
    rest = {"matcher": spec.matcher, "timeout": spec.timeout, "pass_env": list(spec.pass_env)}
    return f"hooks.{event} {json.dumps(rest, sort_keys=True)}"


def workspace_entries(tables: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(setting, command) for each workspace hook, as ``cog trust`` lists and approves them."""
    for event, specs in tables.items():
        for spec in specs:
            yield trust_key(event, spec), spec.command


def session_hooks(settings: Any, *, interactive: bool | None = None, person: HookTables | None = None) -> Any:
    """The :class:`~cogcli.hooks.engine.HookSet` a session runs, or None when no hook is set.
    Raises :class:`ConfigError` for a bad config file, or a workspace hook not approved (off a
    terminal; on one the person is asked, as for MCP commands)."""
    person = person_hooks() if person is None else person
    workspace = settings.hooks or {}
    if not person and not workspace:
        return None
    source = settings.sources.get("hooks", "pyproject.toml")
    if workspace:
        from cogcli.trust import require_trusted

        for setting, command in workspace_entries(workspace):
            require_trusted(settings.root, setting, [command], interactive=interactive, source=source)
    from cogcli.hooks.engine import HookSet

    return HookSet(settings.root, person, workspace, workspace_source=source)
