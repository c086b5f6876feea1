"""The ``diagnostics`` tool: the checkers run on request (sandboxed like run_tests, and like it a tool
that runs code: a checker may run the project's), without the after-change budget
(a type checker skipped after an edit runs here).

``paths``: files or folders (a folder's source files, at most :data:`MAX_FILES`); none: the files
checked so far in this session. The model reads the counts, what is new since the files were last
checked, and the first problems; ``details`` (:class:`~cogcli.contract.details.DiagnosticsDetails`)
carry every problem.
"""

from __future__ import annotations

import time
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cogcli.contract.errors import ErrorCode, ToolCallError
from cogcli.contract.output import ToolOutputResult, tool_output
from cogcli.contract.tool import Tool, tool

if TYPE_CHECKING:
    from workspace_tools.diagnostics.checker import Checker

#: files one call checks at most, and problems its details list at most
MAX_FILES = 500
MAX_PROBLEMS = 1000
#: problems the model reads at most (the rest counted)
MODEL_PROBLEMS = 20
LABEL, ICON = "Diagnostics", "stethoscope"


class DiagnosticsParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    paths: list[str] | None = Field(
        default=None, description="Files or folders to check, relative to the workspace root. Omit for the files changed so far.")

    @field_validator("paths", mode="before")
    @classmethod
    def _one_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


def _suffixes() -> tuple[str, ...]:
    from workspace_tools.diagnostics.sources import SOURCES

    return tuple({s for source in SOURCES for s in source.suffixes})


def _files(checker: Checker, paths: list[str]) -> list[Path]:
    """The source files ``paths`` name: a file itself, a folder's as list_files lists them
    (environments, caches and ignored files left out), links left out (one may point out)."""
    from workspace_tools.workspace.listing import workspace_files

    suffixes = _suffixes()
    out: list[Path] = []
    for given in paths:
        full = checker.workspace.resolve(given)
        if full.is_file():
            out.append(full)
        elif full.is_dir():
            listed = (checker.workspace.root / rel for rel in workspace_files(checker.workspace, full).files)
            out += [f for f in listed if f.name.endswith(suffixes) and not f.is_symlink()]
        else:
            raise ToolCallError(f"path {given!r} does not exist in the workspace", code=ErrorCode.FILE_NOT_FOUND)
        if len(out) >= MAX_FILES:
            break
    return out[:MAX_FILES]


def diagnostics_tool(checker: Checker | Callable[[], Checker], *, timeout: float | None = 300) -> Tool[DiagnosticsParams]:
    """The tool over ``checker`` (or what makes it on the first call: listing the tools imports no checker)."""

    async def execute(params: DiagnosticsParams) -> ToolOutputResult[str]:
        from cogcli.contract.details import DiagnosticsDetails, SkippedSource
        from workspace_tools.diagnostics.compare import compare

        nonlocal checker
        if callable(checker):
            checker = checker()

        files = _files(checker, params.paths) if params.paths else [checker.workspace.root / f for f in checker.checked_files()]
        if not files:
            raise ToolCallError("no file has been checked yet in this session: pass paths (files or folders)",
                                code=ErrorCode.INVALID_ARGUMENTS)
        started = time.perf_counter()
        kept = checker.kept_problems(files)
        budget = max(1.0, (timeout or 300) - 5)
        verdict = await checker.check(files, after_change=False, budget=budget)
        problems = [d for name in verdict.problems for d in verdict.problems[name]]
        new = [d for name, found in verdict.problems.items() if name in kept for d in compare(kept[name], found).new]
        details = DiagnosticsDetails(files=[checker.rel(f) for f in files], new=new, existing=len(problems) - len(new),
                                     sources=list(verdict.problems), problems=problems[:MAX_PROBLEMS],
                                     skipped=[SkippedSource(source=n, why=w) for n, w in verdict.skipped.items()],
                                     duration_s=round(time.perf_counter() - started, 3),
                                     sandbox="bwrap" if verdict.sandboxed else "none",
                                     privileges_removed=[r.as_dict() for r in verdict.removed])
        ran = ", ".join(details.sources) or "no checker"
        where = f"{len(files)} file{'s' if len(files) != 1 else ''}"
        lines = [f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in {where} ({ran})"
                 + (f", {len(new)} new since they were last checked" if new else "")]
        lines += [f"{d.file}:{d.line}: {d.rule}: {d.message}" for d in problems[:MODEL_PROBLEMS]]
        if len(problems) > MODEL_PROBLEMS:
            lines.append(f"… and {len(problems) - MODEL_PROBLEMS} more")
        lines += [f"{s.source}: {s.why}" for s in details.skipped]
        if verdict.removed:
            from workspace_tools.sandbox.leftovers import removed_text

            lines.append(removed_text(verdict.removed))
        detail = f"{' '.join(params.paths or [])} · {len(problems)} problem{'s' if len(problems) != 1 else ''}".strip(" ·")
        return tool_output("\n".join(lines), details=details, presentation={"label": LABEL, "icon": ICON, "detail": detail})

    def presentation(params: DiagnosticsParams) -> dict[str, Any]:
        return {"label": LABEL, "icon": ICON, "detail": " ".join(params.paths or []) or "changed files"}

    return tool(
        kind="execute",
        name="diagnostics",
        description=(
            "Run the project's checkers (ruff, mypy or pyright, tsc or ESLint, go vet, cargo check: those the project "
            "has) on files or folders and list their problems as file:line: rule: message. Edits already report "
            "the problems they introduce; call this for a type checker skipped after an edit, or a folder's state."
        ),
        parameters=DiagnosticsParams,
        execute=execute,
        presentation=presentation,
        timeout=timeout,
        # a checker may run the project's code (an ESLint config, a mypy plugin, a build script):
        # asked about, and refused in plan mode, like run_tests
        side_effects=("runs code",),
        ordered_by=None,
    )
