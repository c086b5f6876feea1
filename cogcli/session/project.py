"""What a session gathers before each run: the thread it continues (``thread`` / ``last``), the
project's instruction files (AGENTS.md and those ``instruction_files`` names, kept from the model
by the same secret-file rules as the tools) and the model's context window."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogcli.settings.load import Settings
from cogcli.contract.errors import ConfigError
from cogcli.project.instructions import (
    InstructionFile,
    NearbyInstructions,
    instruction_names,
    load_instructions,
    personal_file,
)


def thread_to_continue(store: Any, thread: str | None, last: bool) -> str | None:
    """The thread a run continues: ``thread`` as given (the run resolves it), or with ``last`` the
    most recently used thread of this workspace."""
    if thread and last:
        raise ConfigError("--thread and --last both name a thread to continue; give one")
    if not last:
        return thread
    found = store.list_threads(limit=1)
    if not found:
        raise ConfigError('no thread to continue in this workspace yet (--last); start one with cog edit "…"')
    return str(found[0].id)


@dataclass
class ProjectContext:
    """The instruction files of a run and the window of its model."""

    #: what follows the system prompt ("" when there are no files)
    section: str = ""
    #: the files the model got, then those left out (``left_out`` says why): the start event names them
    files: list[InstructionFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nearby: NearbyInstructions | None = None
    window: int | None = None


async def project_context(settings: Settings, cwd: Path | None, model: Any) -> ProjectContext:
    """Load the instruction files for a run in ``cwd`` and find ``model``'s context window:
    ``--context-window`` / ``COG_CONTEXT_WINDOW`` / ``[tool.cog] context_window``, else the window a
    replayed cassette recorded, else the table of common models, else what an OpenAI-compatible
    server reports."""
    import sys

    from cogcli.models.context import known_window, reported_window

    budget = settings.instruction_budget
    names = instruction_names(settings.instruction_files)
    secrets = _secret_policy(settings) if budget > 0 else None
    project = load_instructions(settings.root, cwd, names=names, budget=budget, personal=personal_file(), secrets=secrets)
    nearby = NearbyInstructions(settings.root, project.files, names=names, budget=budget, secrets=secrets) if budget > 0 else None
    # a replayed run has the window its recording had (unless one is given)
    window = settings.context_window or getattr(model, "context_window", None) or known_window(settings.model)
    if window is None:
        window = await reported_window(getattr(model, "inner", model))
    record = sys.modules.get("cogcli.models.record")  # not imported: no recording (its cassette models cost start-up)
    if record is not None and isinstance(model, record.RecordingModel):  # the cassette keeps the window for its replays
        model.context_window = window
    # the start event names the files left out too (each saying why), after those the model got
    files = [*project.files, *project.left_out]
    return ProjectContext(section=project.prompt_section(), files=files, notes=project.notes, nearby=nearby, window=window)


def continued_thread(session: Any, thread: str | None, last: bool) -> str | None:
    """The whole id of the thread ``--thread`` or ``--last`` names in ``session``'s workspace (None:
    neither given); :class:`ConfigError` when there is none to continue."""
    if not thread and not last:
        return None
    if not session.has_threads():
        raise ConfigError(f"no threads in {session.root} yet; start one with cog chat (without --thread or --last)")
    store = session.store()
    wanted = thread_to_continue(store, thread, last)
    return store.require_id(wanted, to=" to continue") if wanted else None


def _secret_policy(settings: Settings) -> Any:
    """The secret-file rules of the run's tools (``secret_globs``, ``--allow-secret``): instruction
    files are workspace files, kept from the model exactly as ``read_file`` keeps them."""
    from workspace_tools.workspace.paths import Workspace
    from workspace_tools.workspace.secret_files import SecretPolicy

    return SecretPolicy.for_workspace(Workspace(settings.root), settings.secret_globs, settings.allow_secrets)
