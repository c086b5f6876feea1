"""Which hooks a session runs: the person's own (``[hooks]`` in ``~/.config/cog/config.toml``,
``$XDG_CONFIG_HOME`` respected, read by :mod:`cogcli.settings.person_file`), then the workspace's (``cog.toml`` / ``[tool.cog]``) once the
person approved them.

A workspace's hook is a command the workspace wants run on this machine, outside the sandbox, at
every tool call: a cloned repository, a test or the model's ``write_file`` could have put it
there. So it runs only once approved like the workspace's MCP commands (:mod:`cogcli.settings.trust`): the
exact command line *and* the sha256 of each workspace file it runs, remembered with the event, the
matcher, the timeout and the variables it asks for — a changed hook, or a changed script it runs, is
asked about again (on a terminal) or refused (off one, naming ``cog trust``). An approved hook then
runs from a private copy of exactly those files (:mod:`cogcli.hooks.snapshot`), never from the
workspace, so a file rewritten during the run changes nothing it runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from cogcli.settings.hook_tables import HookSpec


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


def session_hooks(settings: Any, *, interactive: bool | None = None) -> Any:
    """The :class:`~cogcli.hooks.engine.HookSet` a session runs — the person's hooks
    (``settings.person_hooks``, read with the rest of their config.toml by
    :mod:`cogcli.settings.person_file`, never from the workspace), then the workspace's — or None when no
    hook is set. Raises :class:`ConfigError` for a workspace hook not approved (off a terminal; on
    one the person is asked, as for MCP commands)."""
    person = getattr(settings, "person_hooks", None) or {}
    workspace = settings.hooks or {}
    if not person and not workspace:
        return None
    source = settings.sources.get("hooks", "pyproject.toml")
    copies: dict[tuple[str, HookSpec], Any] = {}
    if workspace:
        from cogcli.hooks.snapshot import snapshot
        from cogcli.settings.trust import require_trusted

        for event, specs in workspace.items():
            for spec in specs:
                approved = require_trusted(settings.root, trust_key(event, spec), [spec.command], interactive=interactive, source=source)
                # it runs from a copy of exactly the approved bytes, never from the workspace
                copies[(event, spec)] = snapshot(settings.root, spec.command, approved[spec.command])
    from cogcli.hooks.engine import HookSet

    return HookSet(settings.root, person, workspace, workspace_source=source, copies=copies)
