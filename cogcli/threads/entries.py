"""A thread's entries: what memory keeps of a run, one pydantic model per kind (see :mod:`cogcli.threads.store`).

A call's ``tool_result`` entry is made from its :class:`cogcli.contract.result.ToolResult` (and read back
into one) by :meth:`ToolResult.entry` / :meth:`ToolResult.from_entry`; a ``run_end`` entry from the
run's :class:`cogcli.threads.run_end.RunEnd`. Nothing else copies their fields.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, TypeAdapter, model_serializer

from cogcli.wire.events import BudgetSpent, FileChange, RunStatus, Usage
from cogcli.contract.call_fields import CallEndFields, end_fields, from_end_fields
from cogcli.contract.output import ImagePart
from cogcli.models.base import Reasoning, ToolCallRequest

if TYPE_CHECKING:
    from cogcli.contract.result import ToolResult


class _Entry(BaseModel):
    # built on first use (a thread read or written), not when `cog tool` imports this module
    model_config = ConfigDict(extra="allow", defer_build=True)


class UserEntry(_Entry):
    kind: Literal["user"] = "user"
    content: str
    #: the run this input started (the ``messageId`` of its start/finish events)
    message_id: str | None = None
    #: images the person attached to the input (``/image``, ``--image``, an editor's image block), bytes and all
    images: list[ImagePart] | None = None


class AssistantEntry(_Entry):
    kind: Literal["assistant"] = "assistant"
    content: str = ""
    #: the calls as the model made them (arguments as it streamed them)
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    #: what the model request of this turn used (absent in threads from before cog kept it)
    usage: Usage | None = None
    #: the turn's reasoning blocks as the provider sent them (Anthropic's thinking with its
    #: signature, redacted_thinking's data), given back to the model with the turn; absent when
    #: it had none (and in threads from before cog kept it)
    reasoning: list[Reasoning] | None = None


def kept_reasoning(reasoning: list[Reasoning], durations: list[int] | None = None) -> list[Reasoning] | None:
    """What a thread keeps of a turn's reasoning: each block as it came, unless a credential is
    in its text (or in a text a client keeps beside it: the Responses API's summary parts) — then
    those redacted and the block marked ``altered`` (its signature no longer holds, so no client
    sends it back). Signatures and encrypted data are opaque: kept as they are.
    ``durations`` (milliseconds, one a block) go with the blocks as ``duration_ms``."""
    from cogcli.secrets.redactor import redact

    def redacted(value: Any) -> tuple[Any, int]:
        if isinstance(value, str) and value:
            return redact(value)
        if isinstance(value, list):
            parts = [redacted(v) for v in value]
            return [v for v, _ in parts], sum(n for _, n in parts)
        return value, 0

    kept: list[Reasoning] = []
    for n, block in enumerate(reasoning):
        changed: dict[str, Any] = {}
        for key, value in {"text": block.text, **(block.model_extra or {})}.items():
            new, count = redacted(value)
            if count:
                changed[key] = new
        kept.append(block.model_copy(update={**changed, "altered": True}) if changed else block)
        if durations is not None and n < len(durations):
            kept[-1] = kept[-1].model_copy(update={"duration_ms": durations[n]})
    return kept or None


class ModelToolResult(_Entry):
    """What the model read of one call."""

    call_id: str
    name: str
    content: str
    #: the images the model saw with the text (a ``read_file`` of an image), bytes and all: the one
    #: place a thread keeps them (``metadata.content`` holds only their facts), so a continued
    #: thread shows the model what it saw
    images: list[ImagePart] | None = None


class ToolResultMetadata(_Entry, CallEndFields):
    """What only clients read of a call: the fields of :class:`~cogcli.contract.call_fields.CallEndFields`,
    the whole content and the arguments. Never part of a model's history."""

    #: the whole content, before it was cut to ``max_result_length``
    content: Any = None
    #: the arguments the call ran with (middleware may have changed the streamed ones)
    arguments: Any = None

    @model_serializer(mode="wrap")
    def _stored(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # the keys in the order threads have always stored them
        data = dump(self)
        return {key: data[key] for key in _STORED_ORDER if key in data} | data


#: a thread's ``metadata`` keys, in the order stored since the first version: the content after
#: the presentation, the arguments after the error; any key declared later (or an extra one) after these
_STORED_ORDER = ("details", "presentation", "content", "error", "error_code", "arguments", "duration_ms", "redacted")


class ToolResultEntry(_Entry):
    kind: Literal["tool_result"] = "tool_result"
    tool_results: list[ModelToolResult]
    metadata: ToolResultMetadata = Field(default_factory=ToolResultMetadata)

    @classmethod
    def of(cls, result: ToolResult, max_length: int | None = None) -> ToolResultEntry:
        """The thread's ``tool_result`` entry of a finished call: what the model read (cut to
        ``max_length``), and in ``metadata`` the rest."""
        return cls(
            tool_results=[ModelToolResult(call_id=result.call_id, name=result.name, content=result.model_text(max_length),
                                          images=result.model_images() or None)],
            metadata=ToolResultMetadata(content=result.result, arguments=result.arguments, **end_fields(result)),
        )

    def results(self) -> list[ToolResult]:
        """The results this entry was made from (the reverse of :meth:`of`)."""
        from cogcli.contract.result import ToolResult

        meta = self.metadata
        fields = from_end_fields(meta)
        return [ToolResult(call_id=item.call_id, name=item.name, arguments=meta.arguments, result=meta.content, **fields) for item in self.tool_results]


class RunEndFields(BaseModel):
    """How a run ended: what :class:`cogcli.threads.run_end.RunEnd` computes and a ``run_end`` entry keeps
    (declared once, here, for both)."""

    model_config = ConfigDict(defer_build=True)

    status: RunStatus
    steps: int = 0
    usage: Usage | None = None
    duration_ms: float = 0.0
    error: str | None = None
    error_code: str | None = None
    files_changed: list[FileChange] = Field(default_factory=list)
    tests: dict[str, int] | None = None
    tests_error: str | None = None
    #: the largest request of the run in input tokens, the model's window, how often the history was compacted
    peak_context_tokens: int | None = None
    context_window: int | None = None
    compactions: int | None = None
    #: the final answer parsed against the run's output schema; the budget it went past
    output: Any = None
    budget: BudgetSpent | None = None


class RunEndEntry(_Entry, RunEndFields):
    """How a run ended: made from its :class:`cogcli.threads.run_end.RunEnd`, as its ``finish`` event is."""

    kind: Literal["run_end"] = "run_end"
    message_id: str | None = None


class UndoEntry(_Entry):
    """``cog undo`` walked back the run ``message_id``: with ``code``, its files were put back
    (``files``: those written); with ``conversation``, the model no longer reads the run's turns.
    A code-only undo is told to the model (:mod:`cogcli.threads.history`), so it never believes the undone
    edits are still in the files."""

    kind: Literal["undo"] = "undo"
    message_id: str | None = None
    files: list[str] = Field(default_factory=list)
    code: bool = True
    conversation: bool = False


class CompactionEntry(_Entry):
    """The conversation before this entry was compacted on request (``cog chat``'s ``/compact``):
    the history a model reads from then on has ``content`` (a summary, the user's words kept)
    in place of everything before it. Memory keeps every earlier entry whole."""

    kind: Literal["compaction"] = "compaction"
    content: str
    #: the conversation's estimated tokens before and after
    tokens_before: int | None = None
    tokens_after: int | None = None


Entry: TypeAlias = Annotated[
    UserEntry | AssistantEntry | ToolResultEntry | RunEndEntry | UndoEntry | CompactionEntry, Field(discriminator="kind")
]
_ENTRY = TypeAdapter(Entry, config=ConfigDict(defer_build=True))


class StoredEntry(BaseModel):
    """An entry as read back: its place in the thread and when it was written."""

    model_config = ConfigDict(defer_build=True)

    seq: int
    created_at: str
    entry: Entry


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while a thread's thousands of entries are read or rebuilt (walking them
    again and again was a third of continuing a 2,000-step thread); then as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
