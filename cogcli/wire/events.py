"""The wire protocol: one pydantic model per event type, written as one JSON object per line.

camelCase on the wire, snake_case in Python. Every line carries ``seq`` (0, 1, 2, … within a run)
and ``timestamp`` (ISO 8601, UTC), stamped by the run's emitter. Fields are only ever added;
``SCHEMA_VERSION`` is bumped only for a breaking change. Readers skip unknown types.

Order within one call: tool-call-start → tool-call-delta* → tool-call-end → tool-update* → tool-result.
"""

# no `from __future__ import annotations`: pydantic would read each field's type back from its
# text, a quarter of what declaring these models costs every command that draws a call (issue 53)
import json
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from cogcli.contract.call_fields import CallEndFields
from cogcli.contract.presentation import ToolPresentation

if TYPE_CHECKING:
    from cogcli.contract.context import ToolUpdate
    from cogcli.contract.result import ToolResult

#: the wire protocol's version (a thread store's own layout is ``memory.STORE_SCHEMA_VERSION``)
SCHEMA_VERSION = 1


class RunStatus(StrEnum):
    """How a run ended: the ``finish`` event's, the ``run_end`` entry's and ``RunResult``'s status."""

    COMPLETED = "completed"
    #: it stopped at the step limit
    MAX_STEPS = "max_steps"
    #: interrupted (the abort signal, Ctrl-C) or cancelled by its caller
    ABORTED = "aborted"
    #: the model failed (or cog itself did); the ``error`` event says why
    ERROR = "error"
    #: it ended while a refusal was the last word on its side effects (nothing approved since)
    DENIED = "denied"
    #: it went past its token or cost budget (``--max-tokens``, ``--max-cost``); ``finish.budget`` says which
    BUDGET_EXCEEDED = "budget_exceeded"


class WireModel(BaseModel):
    # defer_build: a model is made ready on first use, so a command pays only for the events it sends
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Usage(WireModel):
    #: everything the requests read, cached or not (cache reads and cache writes included)
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    #: the part of ``input_tokens`` the provider read from its prompt cache (absent: it did not say)
    cached_input_tokens: int | None = None
    #: the part of ``input_tokens`` the provider wrote to its prompt cache (Anthropic bills it
    #: above the input price; absent: it did not say)
    cache_write_tokens: int | None = None
    #: the part of ``output_tokens`` the model spent reasoning (absent: the provider did not say)
    reasoning_tokens: int | None = None
    #: the estimated cost in US dollars from cog's price table (:mod:`cogcli.settings.prices`); absent
    #: when cog does not know the model's prices (it never guesses)
    cost_usd: float | None = None

    @property
    def counted(self) -> bool:
        """Whether any tokens were counted (an empty usage takes no part in a sum's cost)."""
        return bool(self.input_tokens or self.output_tokens or self.total_tokens)

    def __add__(self, other: "Usage") -> "Usage":
        def opt_sum(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        # the cost of a sum is known only when the cost of every part that counted tokens is
        cost: float | None = None
        parts = [u for u in (self, other) if u.counted]
        if parts and all(u.cost_usd is not None for u in parts):
            cost = sum(u.cost_usd or 0.0 for u in parts)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_input_tokens=opt_sum(self.cached_input_tokens, other.cached_input_tokens),
            cache_write_tokens=opt_sum(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens=opt_sum(self.reasoning_tokens, other.reasoning_tokens),
            cost_usd=cost,
        )


class BudgetSpent(WireModel):
    """The budget a run went past: ``tokens`` (``--max-tokens``) or ``cost`` (``--max-cost``, US
    dollars), its limit, and what was used (None: a response's cost was unknown)."""

    kind: Literal["tokens", "cost"]
    limit: int | float
    used: int | float | None = None


class BaseEvent(WireModel):
    seq: int | None = None
    timestamp: str | None = None


class InstructionFileInfo(WireModel):
    """An instruction file (AGENTS.md, …) the model was given: its path and size in bytes;
    ``cut`` bytes were left out when the instruction budget ran out. With ``left_out`` the model
    was not given the file at all, and it says why (it looks like a secret, it links out of the
    workspace)."""

    path: str
    size: int
    cut: int | None = None
    left_out: str | None = None


class StartEvent(BaseEvent):
    type: Literal["start"] = "start"
    message_id: str
    thread_id: str
    schema_version: int = SCHEMA_VERSION
    #: the instruction files loaded for this run, personal first, then root → current directory;
    #: then those found but left out (``left_out``)
    instructions: list[InstructionFileInfo] | None = None
    #: the model's context window in tokens, when cog knows it
    context_window: int | None = None
    #: the ``provider:model`` the run asks (``openai:gpt-4o``), when known
    model: str | None = None


class TextStartEvent(BaseEvent):
    type: Literal["text-start"] = "text-start"
    id: str


class TextDeltaEvent(BaseEvent):
    type: Literal["text-delta"] = "text-delta"
    id: str
    delta: str


class TextEndEvent(BaseEvent):
    type: Literal["text-end"] = "text-end"
    id: str


class ReasoningStartEvent(BaseEvent):
    """The model starts a block of its reasoning (Anthropic's thinking, a server's
    ``reasoning_content``): shown to people dimmed, apart from its answer."""

    type: Literal["reasoning-start"] = "reasoning-start"
    id: str


class ReasoningDeltaEvent(BaseEvent):
    """A piece of the reasoning, credentials redacted like the model's text."""

    type: Literal["reasoning-delta"] = "reasoning-delta"
    id: str
    delta: str


class ReasoningEndEvent(BaseEvent):
    """The reasoning block ``id`` is complete (an encrypted block, Anthropic's
    ``redacted_thinking``, has a start and an end and no deltas)."""

    type: Literal["reasoning-end"] = "reasoning-end"
    id: str
    #: how long the block streamed, from its first piece to its end (absent: not measured)
    duration_ms: int | None = None


class ToolCallStartEvent(BaseEvent):
    type: Literal["tool-call-start"] = "tool-call-start"
    id: str
    tool_name: str
    presentation: ToolPresentation | None = None


class ToolCallDeltaEvent(BaseEvent):
    type: Literal["tool-call-delta"] = "tool-call-delta"
    id: str
    args_text_delta: str


class ToolCallEndEvent(BaseEvent):
    type: Literal["tool-call-end"] = "tool-call-end"
    id: str
    tool_name: str
    #: the parsed arguments, or the raw text when the model sent invalid JSON
    arguments: Any = None
    #: the call's presentation made from these arguments (``Run tests  all``), so a client draws
    #: the row's own label and detail before any approval or result; absent when the arguments do
    #: not validate or the tool is unknown
    presentation: ToolPresentation | None = None


class Approval(WireModel):
    tool_call_id: str
    tool_name: str
    arguments: Any = None
    description: str
    side_effects: list[str] | None = None
    #: what the call would do, computed without doing it (the tool's ``preview``): for a file
    #: change ``{"path", "diff", "added", "removed"}``, for a command ``{"command"}``; redacted
    #: like details. Absent: the tool gives none
    preview: dict[str, Any] | None = None


class SubagentTag(WireModel):
    """Marks an event a subagent's run sent on its parent's stream: the parent's ``task`` call, the child's thread, its agent."""

    tool_call_id: str
    thread_id: str
    agent: str


class ApprovalRequiredEvent(BaseEvent):
    type: Literal["approval-required"] = "approval-required"
    thread_id: str
    approvals: list[Approval]
    #: a subagent's calls, asked through its parent (absent: the run's own)
    subagent: SubagentTag | None = None


class ToolUpdateEvent(BaseEvent):
    """Progress of a running call (``context.update()``), or, with ``arguments``, the arguments
    the call really runs with (middleware changed the streamed ones)."""

    type: Literal["tool-update"] = "tool-update"
    tool_call_id: str
    tool_name: str | None = None
    content: Any = None
    details: Any = None
    presentation: ToolPresentation | None = None
    arguments: Any = None

    @classmethod
    def of(cls, update: "ToolUpdate") -> "ToolUpdateEvent":
        """The wire event of one ``context.update()``."""
        return cls(
            tool_call_id=update.call_id,
            tool_name=update.tool_name,
            content=update.content,
            details=update.details,
            presentation=update.presentation,
        )


class _ToolResultEventHead(BaseEvent):
    type: Literal["tool-result"] = "tool-result"
    id: str
    tool_call_id: str
    tool_name: str
    #: the whole content (what the model reads, before truncation)
    result: Any = None


# A finished call (made by ToolResult.to_event): its names and whole content, then the fields of
# CallEndFields, in that order as on the wire since version 1 (a base listed first comes last in
# pydantic's field order; the head's config, camelCase and extra keys, wins). No docstring: it
# would become a description in `cog schema events`.
class ToolResultEvent(CallEndFields, _ToolResultEventHead):
    @classmethod
    def of(cls, result: "ToolResult") -> "ToolResultEvent":
        """The ``tool-result`` event of a finished call: the whole content, details and presentation beside it."""
        from cogcli.contract.call_fields import end_fields

        return cls(id=result.call_id, tool_call_id=result.call_id, tool_name=result.name, result=result.result, **end_fields(result))


class ErrorEvent(BaseEvent):
    type: Literal["error"] = "error"
    message: str
    code: str | None = None


class AnswerRejectedEvent(BaseEvent):
    """The final answer was not valid against the run's output schema (``--output-schema``) and
    went back to the model: what is wrong with it, and how many answers it may still give."""

    type: Literal["answer-rejected"] = "answer-rejected"
    problem: str
    tries_left: int


class DroppedResult(WireModel):
    """A tool result whose content compaction replaced by a stub in the history the model reads."""

    tool_call_id: str
    tool_name: str
    #: the stub the model reads instead, e.g. ``[read_file src/a.py: dropped to save context; …]``
    stub: str
    #: estimated tokens the content took
    tokens: int


class CompactionEvent(BaseEvent):
    """The history the model reads was compacted before a request (memory keeps everything)."""

    type: Literal["compaction"] = "compaction"
    #: "threshold" (the next request would pass the limit) or "context-length-error" (the provider refused one)
    reason: str
    tokens_before: int
    tokens_after: int
    context_window: int | None = None
    dropped: list[DroppedResult] = Field(default_factory=list)
    #: how many messages of the oldest turns a summary replaced (0: none)
    summarized_messages: int = 0
    summary_tokens: int | None = None


class HookEvent(BaseEvent):
    """One hook command ran (:mod:`cogcli.hooks`): which, for what, and what it said. Texts are
    redacted; a reader shows them escaped (:func:`cogcli.shown.visible.visible`)."""

    type: Literal["hook"] = "hook"
    #: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, Notification, Stop, SubagentStart or SubagentStop
    hook_event_name: str
    #: the configured command line
    command: str
    #: where it is configured: "config.toml" (the person's) or the workspace's "cog.toml" / "pyproject.toml"
    source: str
    matcher: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    #: "ok" (exit 0), "blocked" (exit 2 or a deny), "error" (another exit, a timeout, could not start)
    outcome: str
    exit_code: int | None = None
    timed_out: bool | None = None
    #: allow, deny or ask, when it gave one
    decision: str | None = None
    #: why it blocked or asked (stderr on exit 2, else its reason)
    reason: str | None = None
    #: a message for the person (systemMessage, stopReason, or what went wrong)
    message: str | None = None
    additional_context: str | None = None
    #: it changed the call's arguments (the tool-update that follows carries them)
    updated_input: bool | None = None
    #: the end of its stderr
    stderr: str | None = None
    duration_ms: float = 0.0
    #: a subagent's hook (SubagentStart/Stop, its calls' PreToolUse …), on its parent's stream (absent: the run's own)
    subagent: SubagentTag | None = None


class FileChange(WireModel):
    path: str
    added: int = 0
    removed: int = 0
    #: why ``added``/``removed`` do not count its lines (a command's binary file, ``over 1 MB``, not kept)
    lines_not_counted: str | None = None


class FinishEvent(BaseEvent):
    type: Literal["finish"] = "finish"
    message_id: str
    thread_id: str
    status: RunStatus
    usage: Usage | None = None
    steps: int = 0
    duration_ms: float = 0.0
    #: lines added and removed per file by the run's successful calls of tools that write files
    files_changed: list[FileChange] | None = None
    #: the counts (passed, failed, errors, skipped) of the run's last test report
    tests: dict[str, int] | None = None
    #: why the run's last test run did not finish (timed out, could not start); absent when it did
    tests_error: str | None = None
    #: the largest request of the run, in input tokens (as the provider counted them)
    peak_context_tokens: int | None = None
    #: the model's context window in tokens, when cog knows it
    context_window: int | None = None
    #: how many times the history was compacted
    compactions: int | None = None
    #: the final answer parsed as JSON, valid against the run's output schema (``--output-schema``)
    output: Any = None
    #: the budget the run went past (status ``budget_exceeded``)
    budget: BudgetSpent | None = None


Event: TypeAlias = Annotated[
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ReasoningStartEvent
    | ReasoningDeltaEvent
    | ReasoningEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | ApprovalRequiredEvent
    | ToolUpdateEvent
    | ToolResultEvent
    | ErrorEvent
    | AnswerRejectedEvent
    | CompactionEvent
    | HookEvent
    | FinishEvent,
    Field(discriminator="type"),
]

#: each event type's class, by its ``type`` (the union above, read once)
EVENT_TYPES: dict[str, type[BaseEvent]] = {cls.model_fields["type"].default: cls for cls in get_args(get_args(Event)[0])}


@cache
def _adapter() -> TypeAdapter[Any]:
    return TypeAdapter(Event)


class UnknownEventType(ValueError):
    """A well-formed line of a type this version does not know: readers skip it."""


def parse_event(data: str | bytes | dict[str, Any]) -> BaseEvent:
    """Parse one wire line (or its dict). Raises :class:`UnknownEventType` for a type this version
    does not know (skip it) and ``ValueError`` for a malformed line."""
    if not isinstance(data, dict):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    kind = data.get("type")
    if kind not in EVENT_TYPES:
        raise UnknownEventType(f"unknown event type {kind!r}")
    try:
        return EVENT_TYPES[kind].model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ValueError(f"invalid {kind} event: {where}: {first.get('msg')}") from None


def events_json_schema() -> dict[str, Any]:
    """JSON Schema of one wire line (any event), for tools that validate what they read."""
    schema = _adapter().json_schema(by_alias=True)
    schema["title"] = "cogcli event"
    schema["description"] = (
        f"One line of `cog … --json` output (schemaVersion {SCHEMA_VERSION}). "
        "Fields are only ever added; readers skip unknown types."
    )
    return schema
