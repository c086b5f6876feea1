"""What a session is made of: the workspace tools with the settings' limits (journal, test sandbox,
secret-file rules, test command, runner, timeouts) and the model its settings name."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypedDict

from cogcli.settings.load import Settings
from cogcli.contract.tool import Tool

log = logging.getLogger("cogcli")


class SessionOptions(TypedDict, total=False):
    """What :meth:`cogcli.session.Session.open` takes beside the settings: the keywords of
    ``Session(…)`` (``tests/test_session.py`` keeps the two the same)."""

    cwd: Path | None
    record: Path | None
    interactive: bool | None
    only: Collection[str] | None
    make_tools: Callable[..., list[Tool[Any]]]
    on_note: Callable[[str], None]
    telemetry: Any


def make_tools(settings: Settings, *, journal: Any = None, only: Collection[str] | None = None) -> list[Tool[Any]]:
    """``workspace_tools(root)`` with the test command, the test sandbox and the per-call timeout
    applied; ``journal`` (a :class:`workspace_tools.files.journal.Journal`) records file changes for
    ``cog undo`` before they are made; ``only``: just the tools of those names. Raises
    :class:`ConfigError` for ``sandbox = "on"`` where bubblewrap is not usable."""
    from workspace_tools import workspace_tools
    from workspace_tools.sandbox.bwrap import check_sandbox

    check_sandbox(settings.sandbox)
    options: dict[str, Any] = {"sandbox": settings.sandbox, "journal": journal, "only": only, "test_env": test_env(settings)}
    options["secret_globs"], options["allow_secrets"] = settings.secret_globs, settings.allow_secrets
    if settings.test_command:
        options["test_command"] = settings.test_command
    if settings.timeout:
        options["test_timeout"] = settings.timeout
    if settings.runner:
        options["test_runner"] = settings.runner
    options.update(allow=settings.allow, command_network=settings.command_network, command_timeout=settings.timeout)
    options.update(diagnostics=settings.diagnostics, diagnostics_off=settings.diagnostics_off)
    if settings.undo_ignored:
        options["undo_ignored"] = True
    if settings.keep_jobs:
        options["keep_jobs"] = True
    timeout = settings.timeout
    adjust = (lambda t: dataclasses.replace(t, timeout=timeout)) if timeout else None
    from cogcli.session.tool_specs import deferred_tools

    # each tool made on first use when its spec is kept from an earlier process (the first request needs only specs)
    return deferred_tools(settings.root, {"root": settings.root, **options}, workspace_tools, adjust)


def test_env(settings: Settings) -> Any:
    """What this workspace's tests get beyond the allow-list (:class:`workspace_tools.sandbox.environment.PassedEnv`),
    handed to run_tests explicitly: the person's ``pass_env`` names, the workspace's ``pass_env``
    wishes, the ``sandbox_writable`` paths that exist. Never put in cog's own environment, which
    every session in the process shares."""
    from workspace_tools.sandbox.environment import PassedEnv

    writable = []
    for raw in settings.sandbox_writable:
        path = Path(raw).expanduser()
        if path.exists():
            writable.append(path.resolve())
        else:
            log.warning("--sandbox-writable: %s does not exist; not made writable", path)
    return PassedEnv(pass_env=tuple(settings.pass_env), workspace_pass_env=tuple(settings.workspace_pass_env), writable=tuple(writable),
                     network=settings.test_network)


def make_model(settings: Settings, record: Path | None = None) -> Any:
    """The model ``settings.model`` names (``provider:model``), recording its turns to the cassette
    ``record`` when given. Raises :class:`ConfigError` (unknown provider, missing key, no cassette)."""
    from cogcli.models import PROVIDER_URL_VARIABLES, get_model, parse_model_spec

    assert settings.model is not None
    provider, _ = parse_model_spec(settings.model)
    variable = PROVIDER_URL_VARIABLES.get(provider)
    # the person's config names a base URL below the provider's own variable (OPENAI_BASE_URL)
    base_url = None if variable and os.environ.get(variable) else settings.base_urls.get(provider)
    prices = settings.prices
    if settings.max_cost is not None:  # a workspace's prices never lift the person's cost budget
        from cogcli.loop.budgets import budget_prices

        prices = budget_prices(settings.model, prices)
    model = get_model(settings.model, base_url=base_url, cache_ttl=settings.cache_ttl, prompt_cache_key=settings.prompt_cache_key, prices=prices,
                      reasoning=settings.reasoning, vision=settings.vision, api=settings.provider_apis.get(provider))
    if record is not None:
        from cogcli.models.record import RecordingModel

        model = RecordingModel(model, record)
    return model


def run_limits(settings: Settings) -> tuple[Any, Any]:
    """The run's :class:`~cogcli.loop.budgets.Budget` (None without one) and
    :class:`~cogcli.loop.output_schema.OutputSchema` (None without one); a ConfigError names a bad value,
    a schema file that is not one, or a cost budget for a model whose price cog does not know."""
    from cogcli.settings.price_data import use_workspace

    use_workspace(settings.root)  # what genai-prices said of models is kept outside the workspace
    budget = schema = None
    if settings.max_tokens is not None or settings.max_cost is not None:
        from cogcli.loop.budgets import Budget, check_cost_budget

        budget = Budget(max_tokens=settings.max_tokens, max_cost=settings.max_cost)
        if settings.max_cost is not None and settings.model is not None:
            check_cost_budget(settings.model, settings.prices)
    if settings.output_schema is not None:
        from cogcli.loop.output_schema import OutputSchema

        given = settings.output_schema
        schema = OutputSchema.load(given) if isinstance(given, Path) else OutputSchema.of(dict(given))
    return budget, schema


def start_telemetry() -> Any:
    """A :class:`cogcli.wire.telemetry.Telemetry` when the environment asks for spans, else None
    (OpenTelemetry is imported only then)."""
    from cogcli.wire.telemetry import Telemetry, wanted

    return Telemetry.from_environment() if wanted() else None
