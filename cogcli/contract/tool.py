"""The tool contract: a name, a description, a pydantic parameters model and ``execute``.

The parameters model is the one source of truth: the JSON Schema the model sees and the
validation that runs are the same object.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, get_type_hints, overload

from pydantic import BaseModel, ConfigDict

from cogcli.contract.presentation import PresentationSpec, ToolPresentation, resolve_presentation

P = TypeVar("P", bound=BaseModel)

#: the side effect of a tool that changes files: its calls' diffs count as what a run changed
WRITES_FILES = "writes files"
Execute = Callable[..., Any] | Callable[..., Awaitable[Any]]
#: ``(arguments) -> (what the call was, how to get its result again)``: see :attr:`Tool.recall`
Recall = Callable[[Mapping[str, Any]], tuple[str, str]]
#: what kind of step a call is, for clients that group or draw steps by kind (ACP's tool kinds)
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


class NoParameters(BaseModel):
    """The parameters of a tool that takes none."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when such a tool is listed or called


@dataclass(frozen=True, kw_only=True, eq=False)
class Tool(Generic[P]):
    """A tool: its name, description and parameters, and what runs it."""
    name: str
    description: str
    parameters: type[P]
    execute: Execute
    presentation: PresentationSpec = None
    output_schema: type[BaseModel] | None = None
    timeout: float | None = None
    #: runs in a separate process: it reports no progress updates
    sandboxed: bool = False
    #: what running the tool does beyond reading, e.g. ("writes files",) or ("runs code",)
    side_effects: tuple[str, ...] = ()
    #: its details are a test report: the run's ``tests`` are its last successful call's counts
    reports_tests: bool = False
    #: calls of this tool (or any) in one turn naming the same value of this argument run one
    #: after another, in call order (two edits of one file); None: its calls never wait
    ordered_by: str | None = "path"
    #: ``(arguments) -> (what the call was, how to get its result again)`` for the one-line stub
    #: that stands for an old result when a long run's history is compacted, e.g.
    #: ``("read_file src/a.py, lines 1–200", "read it again if needed")``; None: the tool's name,
    #: its ``path`` and its short arguments
    recall: Recall | None = None
    #: what kind of step its calls are (ACP's ``kind``): a declaration, never guessed from the name
    kind: ToolKind = "other"
    #: ``(params, context) -> preview | None``, sync or async: what a call would do, computed
    #: without doing it (an edit's diff), shown when the call asks for approval; None: no preview
    preview: Execute | None = None
    #: ``(params) -> the rule that allows it | None``: the person's own settings already approve
    #: this call (their allow list, :mod:`cogcli.contract.allow_list`), so it runs without asking
    allowed: Callable[[Any], str | None] | None = None
    #: its calls change nothing (no file, no process, nothing outside): what plan mode lets run
    #: (:mod:`cogcli.gate.plan_mode`); a declaration, never guessed from the name. False (the default)
    #: for anything that writes, runs code or cannot promise either
    read_only: bool = False
    #: free-form hints for adapters (MCP annotations and the like)
    annotations: Mapping[str, Any] = field(default_factory=dict)
    #: releases what the tool holds beyond a call (background commands it started), called once
    #: when the session that made it closes; None: it holds nothing
    close: Callable[[], None] | None = None
    is_async: bool = field(init=False)
    #: how many of (params, context) execute takes: 0, 1 or 2
    arity: int = field(init=False)

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"tool name {self.name!r} must be letters, digits, '_' or '-'")
        if not (isinstance(self.parameters, type) and issubclass(self.parameters, BaseModel)):
            raise TypeError(f"tool {self.name!r}: parameters must be a pydantic model class")
        if self.read_only and self.side_effects:
            raise ValueError(f"tool {self.name!r} declares side effects {list(self.side_effects)}, so it cannot be read_only")
        fn = self.execute
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)))
        object.__setattr__(self, "arity", min(_positional_arity(fn), 2))

    @property
    def takes_context(self) -> bool:
        return self.arity >= 2

    @property
    def writes_files(self) -> bool:
        """Its successful calls' diffs (``details.diff``) are changes to the workspace."""
        return WRITES_FILES in self.side_effects

    def static_presentation(self) -> ToolPresentation | None:
        """The presentation every call of this tool has before its arguments are known: the
        declared one, or None when it is computed from the arguments (or there is none)."""
        if callable(self.presentation):
            return None
        return resolve_presentation(self.presentation, None, self.name)

    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the parameters, as the model sees it."""
        return self.parameters.model_json_schema()

    def output_json_schema(self) -> dict[str, Any] | None:
        return None if self.output_schema is None else self.output_schema.model_json_schema()

    def spec(self) -> dict[str, Any]:
        """Name, description and parameter schema: what a model client sends."""
        return {"name": self.name, "description": self.description, "parameters": self.input_schema()}


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 2
    n = 0
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return 2
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def _parameters_from_hints(fn: Callable[..., Any]) -> type[BaseModel]:
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        return NoParameters
    hints = get_type_hints(fn)
    model = hints.get(params[0].name)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model
    raise TypeError(
        f"tool {fn.__name__!r}: annotate the first argument with a pydantic model or pass parameters="
    )


@overload
def tool(
    *,
    name: str,
    description: str,
    parameters: type[P],
    execute: Execute,
    presentation: PresentationSpec = None,
    output_schema: type[BaseModel] | None = None,
    timeout: float | None = None,
    sandboxed: bool = False,
    side_effects: Iterable[str] = (),
    annotations: Mapping[str, Any] | None = None,
    reports_tests: bool = False,
    ordered_by: str | None = "path",
    recall: Recall | None = None,
    kind: ToolKind = "other",
    preview: Execute | None = None,
    read_only: bool = False,
) -> Tool[P]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: type[BaseModel] | None = None,
    presentation: PresentationSpec = None,
    output_schema: type[BaseModel] | None = None,
    timeout: float | None = None,
    sandboxed: bool = False,
    side_effects: Iterable[str] = (),
    annotations: Mapping[str, Any] | None = None,
    reports_tests: bool = False,
    ordered_by: str | None = "path",
    recall: Recall | None = None,
    kind: ToolKind = "other",
    preview: Execute | None = None,
    read_only: bool = False,
) -> Callable[[Execute], Tool[Any]]: ...


def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: type[BaseModel] | None = None,
    execute: Execute | None = None,
    presentation: PresentationSpec = None,
    output_schema: type[BaseModel] | None = None,
    timeout: float | None = None,
    sandboxed: bool = False,
    side_effects: Iterable[str] = (),
    annotations: Mapping[str, Any] | None = None,
    reports_tests: bool = False,
    ordered_by: str | None = "path",
    recall: Recall | None = None,
    kind: ToolKind = "other",
    preview: Execute | None = None,
    read_only: bool = False,
) -> Tool[Any] | Callable[[Execute], Tool[Any]]:
    """Define a tool, or decorate ``async def name(params: Model, context)`` to make one.

    ``execute(params, context)`` may be async, or sync (then it runs in a worker thread).
    What the run needs to know about a tool it reads from these declarations, never from its
    name: ``side_effects`` (``"writes files"`` makes its diffs count as what a run changed, and
    any side effect asks for approval), ``reports_tests`` (its details are a test report: the
    run's ``tests``), ``ordered_by`` (calls naming the same value of that argument run in order)
    ``recall`` (what an old call was, for the stub that replaces its result when the history
    is compacted), ``kind`` (what kind of step it is, for clients), ``preview`` (what a call
    would do, shown before it is approved) and ``read_only`` (its calls change nothing: plan mode
    runs only such tools).
    As a decorator, ``name`` defaults to the function's name, ``description`` to its
    docstring and ``parameters`` to the first argument's annotation.
    """

    def build(fn: Execute) -> Tool[Any]:
        return Tool(
            name=name or fn.__name__,
            description=description or inspect.cleandoc(fn.__doc__ or "") or (name or fn.__name__),
            parameters=parameters or _parameters_from_hints(fn),
            execute=fn,
            presentation=presentation,
            output_schema=output_schema,
            timeout=timeout,
            sandboxed=sandboxed,
            side_effects=tuple(side_effects),
            annotations=dict(annotations or {}),
            reports_tests=reports_tests,
            ordered_by=ordered_by,
            recall=recall,
            kind=kind,
            preview=preview,
            read_only=read_only,
        )

    if execute is not None:
        if name is None or description is None or parameters is None:
            raise TypeError("tool(execute=...) needs name=, description= and parameters=")
        return build(execute)
    return build


def tool_index(tools: Sequence[Tool[Any]]) -> dict[str, Tool[Any]]:
    """Tools by name; two tools with one name is a configuration error."""
    index: dict[str, Tool[Any]] = {}
    for t in tools:
        if t.name in index:
            raise ValueError(f"two tools are named {t.name!r}")
        index[t.name] = t
    return index
