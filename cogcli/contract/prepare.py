"""A prepared call: a tool call parsed and validated once, before anything runs it.

    call = prepare("edit_file", '{"path": "a.py", …}', tools=tools, call_id="c1")

Right after a model turn has streamed (and ``after_model`` had its say) each call becomes one
:class:`PreparedCall`: its tool, its validated parameters and its resolved presentation — or the
``TOOL_NOT_FOUND`` / ``INVALID_ARGUMENTS`` result it already is. Approvals, the ordering of calls on
one path and :func:`cogcli.contract.invoke.invoke_tool` read it; nothing parses or validates a call again.
"""

from __future__ import annotations

import difflib

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from cogcli.contract.errors import ErrorCode
from cogcli.contract.presentation import ToolPresentation, resolve_presentation
from cogcli.contract.preview import Preview
from cogcli.contract.result import ToolResult
from cogcli.contract.tool import Tool

Tools = Sequence[Tool[Any]] | Mapping[str, Tool[Any]]


def parse_arguments(args: Mapping[str, Any] | str | None, *, option: str | None = None) -> tuple[Any, str | None]:
    """A call's arguments as the model meant them — the object, or the text as sent when it is not
    a JSON object — and what is wrong with them (None when they are an object). Empty text is ``{}``.

    The one parse of a call's arguments, whoever sent them: a model's streamed text, and ``cog tool
    NAME --args '{…}'`` with ``option="--args"``, which words the same problems for a person at the
    terminal (``--args is not valid JSON (…); pass one JSON object, e.g. --args '{"path": "a.py"}'``)."""
    if args is None:
        return {}, None
    if isinstance(args, str):
        if not args.strip():
            return {}, None
        try:
            value = json.loads(args)
        except ValueError as exc:
            where = f" ({exc.msg} at position {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
            return args, _problem(option, f"not valid JSON{where}", "one JSON object")
        except RecursionError:
            return args, _problem(option, "nested too deeply to read", "one flat JSON object")
        if not isinstance(value, dict):
            return args, _not_an_object(option, value)
        return value, None
    if not isinstance(args, Mapping):
        return args, _not_an_object(option, args)
    return dict(args), None


def _problem(option: str | None, problem: str, fix: str) -> str:
    if option is None:
        return f"{problem}; send the arguments as {fix}"
    return f"{option} is {problem}; pass {fix}, e.g. {option} '{{\"path\": \"a.py\"}}'"


def _not_an_object(option: str | None, value: Any) -> str:
    if option is None:
        return f"expected a JSON object, got {type(value).__name__}"
    return f"{option} must be a JSON object, e.g. {option} '{{\"path\": \"a.py\"}}'"


def format_validation_error(tool_name: str, exc: ValidationError, parameters: type[BaseModel] | None = None) -> str:
    """A pydantic error as a model (or a person) can act on it: one line per bad field. With the
    tool's ``parameters``, an argument it does not take says which one was meant and the last line
    lists the ones it takes."""
    lines = []
    fields = list(parameters.model_fields) if parameters is not None else []
    unknown = False
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        if err.get("type") == "extra_forbidden" and fields and len(err.get("loc", ())) == 1:
            unknown = True
            close = difflib.get_close_matches(where, fields, n=1, cutoff=0.6)
            lines.append(f"- {where}: {tool_name} takes no such parameter" + (f" (did you mean {close[0]}?)" if close else ""))
            continue
        lines.append(f"- {where}: {err.get('msg')}")
    if unknown and parameters is not None:
        listed = [f"{name} (required)" if f.is_required() else name for name, f in parameters.model_fields.items()]
        lines.append(f"{tool_name}'s parameters: {', '.join(listed) or 'none'}")
    return f"invalid arguments for {tool_name}:\n" + "\n".join(lines)


def did_you_mean(name: str, known: list[str]) -> str:
    """`` did you mean read_file?`` when one of ``known`` is close to ``name``, else ""."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" did you mean {close[0]}?" if close else ""


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A model's call, parsed and validated, ready to be gated and run."""
    id: str
    name: str
    #: as the model meant them (see :func:`parse_arguments`)
    arguments: Any
    tool: Tool[Any] | None = None
    params: BaseModel | None = None
    presentation: ToolPresentation | None = None
    #: the result the call already is when it cannot run (unknown tool, bad arguments)
    failed: ToolResult | None = None
    #: the preview the person approved the call on (set when it is approved, see
    #: :class:`cogcli.gate.pipeline.ApprovalStep`): the call runs with it as ``context.approved``
    preview: Preview | None = None
    #: a PreToolUse hook's "allow" (no approval asked) or "ask" (asked even without side effects)
    hook_decision: str | None = None
    #: the person's allow rule that lets it run unasked (set by the gate's allow-list step)
    allowed_by: str | None = None

    def outcome(self, code: str, message: str, duration_ms: float = 0.0) -> ToolResult:
        """This call's result when it ends without a result of its own (refused, aborted, …)."""
        return ToolResult(
            call_id=self.id,
            name=self.name,
            arguments=self.arguments,
            presentation=self.presentation,
            error=message,
            error_code=code,
            duration_ms=duration_ms,
        )

    def order_key(self) -> str | None:
        """The value of the argument the tool orders its calls by (normalised), if it has one:
        calls of one turn with the same key run one after another, in call order."""
        key = self.tool.ordered_by if self.tool is not None else "path"
        if self.failed is not None or key is None or not isinstance(self.arguments, dict):
            return None
        value = self.arguments.get(key)
        return os.path.normpath(value) if isinstance(value, str) and value else None


def prepare(
    tool: Tool[Any] | str,
    args: Mapping[str, Any] | str | None,
    *,
    call_id: str,
    tools: Tools | None = None,
    parsed: tuple[Any, str | None] | None = None,
) -> PreparedCall:
    """Look ``tool`` up (by name in ``tools``), parse ``args`` and validate them, once. ``parsed``
    is what :func:`parse_arguments` already made of them (a streamed call's arguments)."""
    name = tool if isinstance(tool, str) else tool.name
    found = _lookup(tool, tools)
    arguments, problem = parsed if parsed is not None else parse_arguments(args)
    if found is None:
        names = sorted(_names(tools))
        call = PreparedCall(call_id, name, arguments)
        return _failed(call, ErrorCode.TOOL_NOT_FOUND, f"unknown tool {name!r};{did_you_mean(name, names)} available tools: {', '.join(names) or 'none'}")
    call = PreparedCall(call_id, name, arguments, found, presentation=found.static_presentation())
    if problem is not None:
        return _failed(call, ErrorCode.INVALID_ARGUMENTS, f"invalid arguments for {name}: {problem}")
    try:
        params = found.parameters.model_validate(arguments)
    except ValidationError as exc:
        return _failed(call, ErrorCode.INVALID_ARGUMENTS, format_validation_error(name, exc, found.parameters))
    return PreparedCall(call_id, name, arguments, found, params, resolve_presentation(found.presentation, params, name))


def _failed(call: PreparedCall, code: str, message: str) -> PreparedCall:
    return PreparedCall(call.id, call.name, call.arguments, call.tool, None, call.presentation, call.outcome(code, message))


def _lookup(tool: Tool[Any] | str, tools: Tools | None) -> Tool[Any] | None:
    if not isinstance(tool, str):
        return tool
    if tools is None:
        return None
    if isinstance(tools, Mapping):
        return tools.get(tool)
    return next((t for t in tools if t.name == tool), None)


def _names(tools: Tools | None) -> list[str]:
    if tools is None:
        return []
    return list(tools) if isinstance(tools, Mapping) else [t.name for t in tools]
