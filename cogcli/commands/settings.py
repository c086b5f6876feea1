"""``cog config``: the settings :func:`cogcli.settings.load.load_settings` resolves in a workspace, each
with where it came from (``Settings.origins``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from cogcli.settings.load import Settings, load_settings
from cogcli.contract.errors import ConfigError
from cogcli.wire.exit_codes import EXIT_OK, EXIT_USAGE
from cogcli.settings.options import SETTINGS, SettingFlags
from cogcli.settings.person_file import config_path, shown_path
from cogcli.shown.visible import say, visible

#: settings only the workspace's file sets (no flag, variable or person's key): name → how it is shown
WORKSPACE_ONLY = ("workspace_pass_env", "secret_globs", "runner", "instruction_files", "instruction_budget")


def rows(settings: Settings) -> list[tuple[str, Any, str]]:
    """(name, value, where it came from) for every setting, in :data:`cogcli.settings.options.SETTINGS`' order."""
    out: list[tuple[str, Any, str]] = []
    origins = settings.origins
    for setting in SETTINGS:
        if setting.name == "yes":
            continue  # shown as approval
        value = settings.instruction_budget > 0 if setting.name == "instructions" else getattr(settings, setting.name, None)
        out.append((setting.name, _plain(value), origins.get(setting.name, "default")))
    for name in WORKSPACE_ONLY:
        key = "pass_env" if name == "workspace_pass_env" else name
        value = _plain(getattr(settings, name))
        out.append((name, value, settings.sources.get(key, "default")))
    out.append(("prices", sorted(settings.prices), "config files" if settings.prices else "default"))
    out.append(("base_urls", dict(settings.base_urls), shown_path(settings.person_config) if settings.base_urls and settings.person_config else "default"))
    apis = dict(settings.provider_apis)
    where = shown_path(settings.person_config) if apis and settings.person_config else "default"
    if os.environ.get("COG_OPENAI_API", "").strip():  # the variable wins over the file (cogcli.models.openai_api)
        apis, where = {**apis, "openai": os.environ["COG_OPENAI_API"].strip().lower()}, "COG_OPENAI_API"
    out.append(("provider_apis", apis, where))
    return out


def hook_rows(settings: Settings) -> list[dict[str, Any]]:
    """The hooks in effect, in the order they run for an event: the person's (from their config
    file), then the workspace's (from ``cog.toml`` / ``[tool.cog]``), each saying whether it was
    approved — a workspace hook runs only once it is (``cog trust``)."""
    out: list[dict[str, Any]] = []
    mine = shown_path(settings.person_config) if settings.person_config else "your config"
    for event, specs in (getattr(settings, "person_hooks", None) or {}).items():
        out += [{"event": event, "matcher": spec.matcher or "*", "command": spec.command, "timeout": spec.timeout, "from": mine, "approved": True}
                for spec in specs]
    if settings.hooks:
        from cogcli.hooks.trust import trust_key
        from cogcli.settings.trust import is_trusted, load_store

        store = load_store()
        source = settings.sources.get("hooks", "pyproject.toml")
        for event, specs in settings.hooks.items():
            out += [{"event": event, "matcher": spec.matcher or "*", "command": spec.command, "timeout": spec.timeout, "from": source,
                     "approved": is_trusted(store, settings.root, trust_key(event, spec), spec.command)} for spec in specs]
    return out


def _hook_lines(hooks: list[dict[str, Any]]) -> list[str]:
    if not hooks:
        return ["", "hooks: none (docs/hooks.md)"]
    lines = ["", "hooks, in the order they run:"]
    for h in hooks:
        which = "every tool" if h["matcher"] == "*" and h["event"] in ("PreToolUse", "PostToolUse") else f"matcher {h['matcher']}"
        where = h["from"] if h["approved"] else f"{h['from']}, not approved: runs once you approve it with `cog trust`"
        lines.append(f"  {h['event']:<16} {which}  {h['command']}  (timeout {h['timeout']:g}s)  {where}")
    return lines


def agent_rows(settings: Settings) -> tuple[list[dict[str, Any]], list[str]]:
    """The named agents a ``task`` call may run as (docs/subagents.md), and the notes and warnings
    said when a session loads them (a file left out; ``tools`` naming no tool here, with a guess)."""
    import dataclasses

    from cogcli.project.named_agents import load_named_agents

    loaded = load_named_agents(settings.root)
    agents = [{"name": a.name, "file": a.shown, "source": a.source, "description": a.description,
               "tools": list(a.tools) if a.tools is not None else None} for a in loaded.agents.values()]
    if not agents:  # the tools are made (to check agents' tools against) only when there is an agent
        return agents, loaded.notes
    said: list[str] = []
    from cogcli.session.extras import agent_tools
    from cogcli.session.factory import make_tools

    tools = make_tools(dataclasses.replace(settings, sandbox="off"))  # listed, never run: no sandbox needed
    try:
        agent_tools(settings, said.append, [t.name for t in tools])  # what a session's start says of them
    finally:
        for t in tools:
            if t.close is not None:
                t.close()
    return agents, said


def _agent_lines(agents: list[dict[str, Any]], said: list[str]) -> list[str]:
    lines = ["", "agents (task's agent=NAME; docs/subagents.md):" if agents else "agents: none (.agents/agents/NAME.md, docs/subagents.md)"]
    lines += [f"  {a['name']}  {a['file']}  {a['description'][:80]}" for a in agents]
    return lines + [f"  {line}" for line in said]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return value


def show_settings(root: Path, flags: SettingFlags, *, as_json: bool = False) -> int:
    try:
        settings = load_settings(root, flags)
    except ConfigError as exc:
        say(exc.message)
        return EXIT_USAGE
    table = rows(settings)
    person = config_path()
    if as_json:
        data = {
            "workspace": str(root),
            "config_file": str(person),
            "config_file_read": settings.person_config is not None,
            "settings": {name: {"value": value, "from": source} for name, value, source in table},
            "hooks": hook_rows(settings),
        }
        data["agents"], data["agent_notes"] = agent_rows(settings)
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    lines = [
        f"workspace: {root}",
        f"your config: {shown_path(person)}" + ("" if settings.person_config is not None else " (none)"),
        "",
    ]
    width = max(len(name) for name, _, _ in table)
    for name, value, source in table:
        shown = "-" if value is None or value == [] or value == {} else json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        lines.append(f"{name:<{width}}  {shown:<28}  {source}")
    lines += _hook_lines(hook_rows(settings))
    lines += _agent_lines(*agent_rows(settings))
    sys.stdout.write(visible("\n".join(lines)) + "\n")
    return EXIT_OK
