"""The step after every file change: a file tool (edit_file, write_file, apply_patch, move_file)
made with :func:`with_diagnostics` checks the files it is about to change, makes the change, checks
them again, and adds what the change introduced to its result.

- ``details.diagnostics``: the whole verdict (:class:`~cogcli.contract.details.DiagnosticsDetails`:
  ``new``, ``fixed``, ``existing``, the checkers that ran and the ones skipped);
- the model's ``content``: one line, ``diagnostics: 2 new errors`` and the first few new problems as
  ``file:line: rule: message`` (a ``diagnostics`` key for a JSON result), only when something is new
  or fixed, or a checker ran over its budget; a checker that could not run (it failed to start in the
  sandbox, there is none) is said once a session: ``diagnostics: tsc not run: could not check …``;
- the ``presentation``'s detail: ``src/a.py · 2 new errors``.

The files come from the call's own arguments (``path``, ``new_path``, the patch's file lines),
resolved as the tool resolves them; a failed check never fails the change (it is logged).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from cogcli.contract.tool import Tool
from workspace_tools.workspace.paths import Workspace

if TYPE_CHECKING:  # imported when a call runs: listing the tools (cog tools) needs none of it
    from cogcli.contract.details import DiagnosticsDetails, SkippedSource
    from cogcli.contract.output import ToolOutputResult
    from workspace_tools.diagnostics.checker import Checker

log = logging.getLogger("cogcli")

#: new problems listed in what the model reads (the rest are counted; details carry all)
MODEL_LINES = 3

_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)


@dataclass
class Touched:
    """The files a call changes: as they are named before it, after it, and the ones it renames."""

    before: list[Path] = field(default_factory=list)
    after: list[Path] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)


def touched(params: BaseModel, workspace: Workspace) -> Touched:
    """The files a file tool's call changes, read from its arguments."""
    named: list[tuple[str, str | None]] = []  # (path before, path after or None when deleted)
    path, new_path, patch = (getattr(params, name, None) for name in ("path", "new_path", "patch"))
    if isinstance(path, str):
        named.append((path, new_path if isinstance(new_path, str) else path))
    elif isinstance(patch, str):
        for m in _PATCH_FILE.finditer(patch):
            if m.group(3) and named:
                named[-1] = (named[-1][0], m.group(3))
            elif m.group(2):
                named.append((m.group(2), None if m.group(1) == "Delete" else m.group(2)))
    found = Touched()
    for old, new in named:
        try:
            old_full = workspace.resolve(old)
            new_full = workspace.resolve(new) if new is not None else None
        except Exception:  # the tool refuses it itself
            continue
        found.before.append(old_full)
        if new_full is not None:
            found.after.append(new_full)
            if new_full != old_full:
                found.renamed[workspace.relative(old_full)] = workspace.relative(new_full)
    return found


def with_diagnostics(tool: Tool[Any], checker: Checker | Callable[[], Checker]) -> Tool[Any]:
    """``tool`` whose calls are checked before and after the change they make (``checker``, or what
    makes it on the first call)."""
    original = tool

    async def execute(params: BaseModel, context: Any) -> Any:
        from cogcli.contract.invoke import call_function
        from cogcli.contract.output import ToolOutputResult

        nonlocal checker
        if callable(checker):
            checker = checker()
        files = touched(params, checker.workspace)
        before = None
        if files.after:
            try:
                before = await checker.before(files.before)
            except Exception:
                log.warning("diagnostics before %s failed; the change goes on unchecked", original.name, exc_info=True)
        result = await call_function(original.execute, (params, context)[: original.arity], original.is_async)
        if before is None or not isinstance(result, ToolOutputResult):
            return result
        try:
            found = await checker.after(before, files.after, files.renamed)
        except Exception:
            log.warning("diagnostics after %s failed", original.name, exc_info=True)
            return result
        return with_verdict(result, found, told=checker.first_told(found.skipped))

    return dataclasses.replace(tool, execute=execute)


def model_line(found: DiagnosticsDetails, *, always: bool = False, told: Sequence[SkippedSource] = ()) -> str | None:
    """What the model reads of a verdict: ``diagnostics: 2 new errors`` and the first new problems,
    a note for a checker over its budget, one line for each checker in ``told`` that could not run
    (``diagnostics: tsc not run: …``); None when there is nothing to say (unless ``always``)."""
    from cogcli.contract.details_readers import read_diagnostics

    view = read_diagnostics(found.model_dump())
    assert view is not None
    from workspace_tools.sandbox.leftovers import Removed, removed_text

    slow = [f"{name} {why}" for name, why in view.skipped if why.startswith("took longer")]
    removed = removed_text([Removed(r["path"], r["removed"], r["action"]) for r in found.privileges_removed])
    unable = [f"diagnostics: {s.source} not run: {_cut(s.why)}" for s in told]
    if not view.new and not view.fixed and not slow and not removed and not always:
        return "\n".join(unable) or None
    lines = [f"diagnostics: {view.headline()}" + (f" ({view.existing} older ones not listed)" if always and view.existing else ""),
             *view.lines(MODEL_LINES), *slow, *([removed] if removed else []), *unable]
    return "\n".join(lines)


def _cut(why: str, limit: int = 300) -> str:
    return why if len(why) <= limit else why[: limit - 1] + "…"


def with_verdict(result: ToolOutputResult[Any], found: DiagnosticsDetails,
                 told: Sequence[SkippedSource] = ()) -> ToolOutputResult[Any]:
    """``result`` with the verdict in its details, content and presentation (``told``: the checkers
    that could not run, said to the model this once)."""
    from cogcli.contract.details_readers import read_diagnostics
    from cogcli.contract.output import ToolOutputResult

    details = result.details.model_dump() if isinstance(result.details, BaseModel) else result.details
    details = {**details, "diagnostics": found.model_dump()} if isinstance(details, dict) else {"diagnostics": found.model_dump()}
    content = result.content
    line = model_line(found, told=told)
    if line is not None:
        if isinstance(content, dict):
            content = {**content, "diagnostics": line}
        elif isinstance(content, str):
            content = f"{content}\n{line}"
    presentation = result.presentation
    view = read_diagnostics(details)
    if presentation is not None and view is not None and (view.new or view.fixed):
        presentation = presentation.model_copy(update={"detail": " · ".join(p for p in (presentation.detail, view.headline()) if p)})
    return ToolOutputResult(content=content, details=details, presentation=presentation)
