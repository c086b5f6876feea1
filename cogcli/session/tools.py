"""What a session is made of: the workspace tools with the settings' limits (journal, test sandbox,
secret-file rules, test command, runner, timeouts) and the model its settings name."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from cogcli.config import Settings
from cogcli.tools import Tool


def make_tools(settings: Settings, *, journal: Any = None, only: Collection[str] | None = None) -> list[Tool[Any]]:
    """``workspace_tools(root)`` with the test command, the test sandbox and the per-call timeout
    applied; ``journal`` (a :class:`workspace_tools.journal.Journal`) records file changes for
    ``cog undo`` before they are made; ``only``: just the tools of those names. Raises
    :class:`ConfigError` for ``sandbox = "on"`` where bubblewrap is not usable."""
    from workspace_tools import workspace_tools
    from workspace_tools.bwrap import check_sandbox

    check_sandbox(settings.sandbox)
    export_test_settings(settings)
    options: dict[str, Any] = {"sandbox": settings.sandbox, "journal": journal, "only": only}
    options["secret_globs"], options["allow_secrets"] = settings.secret_globs, settings.allow_secrets
    if settings.test_command:
        options["test_command"] = settings.test_command
    if settings.timeout:
        options["test_timeout"] = settings.timeout
    if settings.runner:
        options["test_runner"] = settings.runner
    options.update(allow=settings.allow, command_network=settings.command_network, command_timeout=settings.timeout)
    tools = workspace_tools(settings.root, **options)
    if settings.timeout:
        tools = [dataclasses.replace(t, timeout=settings.timeout) for t in tools]
    return list(tools)


def export_test_settings(settings: Settings) -> None:
    """Hand what the tests may get to run_tests through cog's environment (its children read it):
    ``--pass-env`` names, the workspace's ``pass_env`` wishes, ``--sandbox-writable`` paths."""
    from workspace_tools.bwrap import WRITABLE_ENV
    from workspace_tools.testenv import PASS_ENV, WORKSPACE_PASS_ENV

    def add(name: str, values: tuple[str, ...], sep: str) -> None:
        if values:
            current = [v for v in os.environ.get(name, "").split(sep) if v]
            os.environ[name] = sep.join([*current, *(v for v in values if v not in current)])

    add(PASS_ENV, settings.pass_env, ",")
    add(WORKSPACE_PASS_ENV, settings.workspace_pass_env, ",")
    add(WRITABLE_ENV, tuple(str(Path(p).expanduser().resolve()) for p in settings.sandbox_writable), os.pathsep)


def make_model(settings: Settings, record: Path | None = None) -> Any:
    """The model ``settings.model`` names (``provider:model``), recording its turns to the cassette
    ``record`` when given. Raises :class:`ConfigError` (unknown provider, missing key, no cassette)."""
    from cogcli.models import get_model

    assert settings.model is not None
    prices = settings.prices
    if settings.max_cost is not None:  # a workspace's prices never lift the person's cost budget
        from cogcli.budgets import budget_prices

        prices = budget_prices(settings.model, prices)
    model = get_model(settings.model, cache_ttl=settings.cache_ttl, prompt_cache_key=settings.prompt_cache_key, prices=prices)
    if record is not None:
        from cogcli.models.record import RecordingModel

        model = RecordingModel(model, record)
    return model


def run_limits(settings: Settings) -> tuple[Any, Any]:
    """The run's :class:`~cogcli.budgets.Budget` (None without one) and
    :class:`~cogcli.structured.OutputSchema` (None without one); a ConfigError names a bad value,
    a schema file that is not one, or a cost budget for a model whose price cog does not know."""
    budget = schema = None
    if settings.max_tokens is not None or settings.max_cost is not None:
        from cogcli.budgets import Budget, check_cost_budget

        budget = Budget(max_tokens=settings.max_tokens, max_cost=settings.max_cost)
        if settings.max_cost is not None and settings.model is not None:
            check_cost_budget(settings.model, settings.prices)
    if settings.output_schema is not None:
        from cogcli.structured import OutputSchema

        given = settings.output_schema
        schema = OutputSchema.load(given) if isinstance(given, Path) else OutputSchema.of(dict(given))
    return budget, schema


def start_telemetry() -> Any:
    """A :class:`cogcli.telemetry.Telemetry` when the environment asks for spans, else None
    (OpenTelemetry is imported only then)."""
    from cogcli.telemetry import Telemetry, wanted

    return Telemetry.from_environment() if wanted() else None
