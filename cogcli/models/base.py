"""The Model protocol: stream one assistant turn from a message history and tool specs.

Every client (OpenAI-compatible, Anthropic, replay) is a thin layer that turns its provider's
stream into these events; the run loop knows nothing else about models.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from cogcli.contract.output import ImagePart

# Each model below is built on first use (defer_build): `cog tool` imports this module for the
# types but never talks to a model.


class ToolCallRequest(BaseModel):
    """A tool call as the model made it. ``arguments`` is the parsed object, or the raw text
    when the model sent something that is not a JSON object."""

    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    arguments: Any = None


#: the reasoning levels a run may ask for (``--reasoning``); "off" asks for none
REASONING_LEVELS = ("off", "low", "medium", "high")


class Reasoning(BaseModel):
    """One block of a model's reasoning, kept exactly as its provider sent it, so the client of
    the same provider can send it back verbatim (Anthropic refuses a tool loop whose thinking
    was altered). Provider-neutral: ``format`` says whose block it is, and each client sends
    back only blocks of its own format.

    ``format``: ``"anthropic"`` (``kind`` ``thinking``: ``text`` + ``signature``;
    ``redacted_thinking``: ``data``), ``"openai-chat"`` (``kind`` ``reasoning_content``: the
    text a Chat Completions server streamed; never sent back), ``"openai-responses"`` (``kind``
    ``reasoning``: ``id``, the summary ``text`` — each part in the extra ``summary`` —, ``data`` =
    ``encrypted_content``: :mod:`cogcli.models.responses_items`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    format: str
    kind: str
    #: the readable reasoning (Anthropic's ``thinking``, a server's ``reasoning_content``)
    text: str = ""
    #: Anthropic's ``signature`` of the thinking text (opaque, sent back as it came)
    signature: str | None = None
    #: opaque encrypted reasoning (``redacted_thinking``'s ``data``; Responses' ``encrypted_content``)
    data: str | None = None
    #: the provider's id of the item, when it has one
    id: str | None = None
    #: set when cog changed ``text`` after it came (a credential redacted in a stored thread):
    #: the signature no longer holds, so the block is never sent back
    altered: bool | None = None
    #: cog's own measure, kept in the thread only: how long the block streamed, in milliseconds
    #: (a client says "Thought for 4 s" when it redraws a stored thread); never sent to a provider
    duration_ms: int | None = None

    @property
    def sent_back(self) -> bool:
        """Whether a client may send the block back to its provider (so it takes room in the
        context): never one cog altered, never a Chat Completions server's ``reasoning_content``
        (no request field takes it)."""
        return not self.altered and self.format != "openai-chat"


class Message(BaseModel):
    """One message of the history a model reads. Tool messages hold only what the model reads
    of a result (its content, cut to length) — never details or presentation."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    #: an assistant turn's reasoning blocks, as received, in order (sent back by the client of
    #: their format, first in the assistant message)
    reasoning: list[Reasoning] = Field(default_factory=list)
    #: images the model sees with this message: a person's attachments (user), what a call read
    #: (tool; each client places them where its API allows). A client for a model without
    #: vision sends :meth:`~cogcli.contract.output.ImagePart.stand_in` texts instead
    images: list[ImagePart] = Field(default_factory=list)


class ToolSpec(BaseModel):
    model_config = ConfigDict(defer_build=True)

    name: str
    description: str
    parameters: dict[str, Any]


#: the key a provider may route a run's requests to one prompt cache by (OpenAI's
#: ``prompt_cache_key``): the run sets it to its thread id while it runs
PROMPT_CACHE_KEY: ContextVar[str | None] = ContextVar("cogcli_prompt_cache_key", default=None)


# --- what a client yields while a turn streams -------------------------------------------


class TextDelta(BaseModel):
    model_config = ConfigDict(defer_build=True)

    type: Literal["text-delta"] = "text-delta"
    text: str


class ReasoningDelta(BaseModel):
    """A piece of the model's readable reasoning, as it streams (shown, dimmed)."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["reasoning-delta"] = "reasoning-delta"
    text: str


class ReasoningFinished(BaseModel):
    """A reasoning block is complete: ``block`` is the whole of it as the provider sent it
    (text, signature, opaque data), what the model's history keeps and sends back."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["reasoning-end"] = "reasoning-end"
    block: Reasoning


class ToolCallStarted(BaseModel):
    model_config = ConfigDict(defer_build=True)

    type: Literal["tool-call-start"] = "tool-call-start"
    id: str
    name: str


class ToolCallArgsDelta(BaseModel):
    model_config = ConfigDict(defer_build=True)

    type: Literal["tool-call-delta"] = "tool-call-delta"
    id: str
    text: str


class ToolCallFinished(BaseModel):
    """All argument text of a call has arrived; ``arguments_text`` is the whole of it."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["tool-call-end"] = "tool-call-end"
    id: str
    name: str
    arguments_text: str


class UsageReport(BaseModel):
    model_config = ConfigDict(defer_build=True)

    type: Literal["usage"] = "usage"
    #: everything the request read, cached or not
    input_tokens: int = 0
    #: what the model wrote, reasoning (thinking) tokens included: providers bill them as output
    output_tokens: int = 0
    #: the part of ``output_tokens`` the model spent reasoning (Anthropic's
    #: ``output_tokens_details.thinking_tokens``, OpenAI's ``completion_tokens_details.reasoning_tokens``; None: not said)
    reasoning_tokens: int | None = None
    #: the part of ``input_tokens`` read from the provider's prompt cache (0 when it says nothing)
    cached_input_tokens: int = 0
    #: the part of ``input_tokens`` written to the provider's prompt cache (Anthropic's
    #: ``cache_creation_input_tokens``; None when the provider does not report writes)
    cache_write_tokens: int | None = None
    #: the part of ``output_tokens`` the model spent reasoning (None when the provider does not say)
    reasoning_tokens: int | None = None
    #: the request's estimated cost in US dollars (:mod:`cogcli.settings.prices`), None when the price is unknown
    cost_usd: float | None = None


class TurnFinished(BaseModel):
    model_config = ConfigDict(defer_build=True)

    type: Literal["turn-end"] = "turn-end"
    stop_reason: str | None = None


ModelStreamEvent: TypeAlias = Annotated[
    TextDelta | ReasoningDelta | ReasoningFinished | ToolCallStarted | ToolCallArgsDelta | ToolCallFinished | UsageReport | TurnFinished,
    Field(discriminator="type"),
]


@runtime_checkable
class Model(Protocol):
    """``name`` is the ``provider:model`` string the model was made from."""

    name: str

    def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        """Stream one assistant turn. Raises :class:`cogcli.contract.errors.ModelError` when the server
        fails or cuts the stream (after bounded retries where a retry is safe)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def token_count(value: Any) -> int:
    """A provider's token count as it came (an int, ``12.0``, ``"12"``); anything else is 0."""
    try:
        return max(0, int(value)) if not isinstance(value, bool) else 0
    except (TypeError, ValueError, OverflowError):
        return 0
